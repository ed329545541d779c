"""Duplicate appends: a line already in that day's note or in MEMORY.md is not written again.

"Already there" is the shared normalisation (lines.py ``line_key``: case, spacing, list
marker, task box and annotations aside). Of an appended block, the lines already there are
dropped; when none is left the append writes nothing and answers ``duplicate: true`` with
where the line is. A fact appended (or flushed, or recalled and appended back) a hundred
times stays one line.

Cost: each file's keys are cached with the sha256 of the bytes they were computed from. A
daily file grows by appends, so the next check hashes the cached prefix (C speed) and keys
only the lines after it; a file edited anywhere else is keyed again whole.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.files.beneath import open_beneath
from memoryd.files.layout import MEMORY_FILES
from memoryd.files.lines import line_key

__all__ = ["Duplicates", "Filtered"]

MAX_CACHED_FILES: Final = 256


@dataclass
class _Keys:
    size: int  # bytes the keys were computed from
    sha: bytes  # their sha256
    lines: int  # how many lines they hold
    first: dict[str, int] = field(default_factory=dict)  # key -> first line (1-based)


@dataclass(frozen=True)
class Filtered:
    text: str  # the block without the lines already there ('' when none is left)
    dropped: list[dict[str, Any]]  # {text, path, line}: each line dropped and where it is

    @property
    def duplicate(self) -> bool:
        return not self.text.strip() and bool(self.dropped)


def _key_lines(data: bytes, start_line: int, into: dict[str, int]) -> int:
    n = start_line
    for n, raw in enumerate(data.decode("utf-8", "replace").splitlines(), start_line + 1):
        k = line_key(raw)
        if k and k not in into:
            into[k] = n
    return n


class Duplicates:
    """The appender's duplicate check; one per daemon (thread-safe)."""

    def __init__(self) -> None:
        self._cache: dict[Path, _Keys] = {}
        self._lock = threading.Lock()

    def keys(self, path: Path, data: bytes) -> dict[str, int]:
        """``path``'s line keys (first line of each) for its bytes ``data``."""
        with self._lock:
            cached = self._cache.get(path)
        if (
            cached is not None
            and len(data) >= cached.size
            and hashlib.sha256(data[: cached.size]).digest() == cached.sha
            and (cached.size == 0 or data[cached.size - 1 : cached.size] == b"\n")
        ):
            first = dict(cached.first)
            lines = _key_lines(data[cached.size :], cached.lines, first)
        else:
            first = {}
            lines = _key_lines(data, 0, first)
        entry = _Keys(len(data), hashlib.sha256(data).digest(), lines, first)
        if not data.endswith(b"\n") and data:
            entry = _Keys(0, hashlib.sha256(b"").digest(), 0, {})  # a cut line: key again
        with self._lock:
            if len(self._cache) >= MAX_CACHED_FILES:
                self._cache.clear()
            self._cache[path] = entry
        return first

    def filter(self, root: Path, day_rel: str, day_data: bytes, text: str) -> Filtered:
        """``text`` without its lines already in the day's note (``day_data``, read under
        its append lock) or in MEMORY.md."""
        wanted = [(line, line_key(line)) for line in text.splitlines()]
        if not any(k for _, k in wanted):
            return Filtered(text, [])
        sources = [(day_rel, self.keys(root / day_rel, day_data))]
        memory = _read_memory(root)
        if memory is not None:
            sources.append((memory[0], self.keys(root / memory[0], memory[1])))
        kept: list[str] = []
        dropped: list[dict[str, Any]] = []
        seen: set[str] = set()
        for line, k in wanted:
            where = next(((rel, keys[k]) for rel, keys in sources if k and k in keys), None)
            if where is None and k and k in seen:
                where = (day_rel, 0)  # twice in the block itself
            if where is None:
                kept.append(line)
                seen.add(k)
            else:
                dropped.append({"text": line, "path": where[0], "line": where[1]})
        if not dropped:
            return Filtered(text, [])
        return Filtered("\n".join(kept) if any(line.strip() for line in kept) else "", dropped)


def _read_memory(root: Path) -> tuple[str, bytes] | None:
    for name in MEMORY_FILES:
        try:
            opened = open_beneath(root, name, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        with os.fdopen(opened.fd, "rb") as f:
            return name, f.read()
    return None
