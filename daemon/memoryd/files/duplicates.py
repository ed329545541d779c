"""Duplicate appends: a line already in that day's note or in MEMORY.md is not written again.

"Already there" is the shared normalisation (lines.py ``line_key``: case, spacing, list
marker, task box and annotations aside). Of an appended block, the lines already there are
dropped; when none is left the append writes nothing and answers ``duplicate: true`` with
where the line is. A fact appended (or flushed, or recalled and appended back) a hundred
times stays one line.

Cost: each file's keys are cached with the byte offset of each line. A daily file grows by
appends, so the next check keys only the lines past what was keyed; a line the cache says
is there is checked at its offset before the append is refused, and a file that was edited
elsewhere (the line moved or went) is keyed again whole.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.files.beneath import open_beneath
from memoryd.files.layout import MEMORY_FILES
from memoryd.files.lines import line_key
from memoryd.records import Record

__all__ = ["Duplicates", "Filtered"]

MAX_CACHED_FILES: Final = 256


@dataclass
class _Keys:
    """A file's line keys, as far as they were read."""

    ident: tuple[int, int]  # the file's (device, inode): a rename over it starts again
    size: int  # bytes keyed (up to a line end)
    lines: int  # how many lines they hold
    at: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (line, byte offset)


@dataclass(frozen=True, eq=False, repr=False)
class Filtered(Record):
    """A block to append without the lines the file has already."""

    text: str  # the block without the lines already there ('' when none is left)
    dropped: list[dict[str, Any]]  # {text, path, line}: each line dropped and where it is

    @property
    def duplicate(self) -> bool:
        return not self.text.strip() and bool(self.dropped)


def _key_lines(data: bytes, offset: int, start_line: int, into: dict[str, tuple[int, int]]) -> int:
    """Key the lines of ``data[offset:]`` (line numbers from ``start_line + 1``)."""
    n = start_line
    pos = offset
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        n += 1
        k = line_key(data[pos:end].decode("utf-8", "replace"))
        if k and k not in into:
            into[k] = (n, pos)
        pos = end + 1
    return n


def _still(data: bytes, k: str, offset: int) -> bool:
    """Whether the line at ``offset`` of ``data`` still has key ``k`` (an edit elsewhere in
    the file may have moved or removed it)."""
    end = data.find(b"\n", offset)
    return line_key(data[offset : len(data) if end < 0 else end].decode("utf-8", "replace")) == k


class Duplicates:
    """The appender's duplicate check; one per daemon (thread-safe)."""

    def __init__(self) -> None:
        self._cache: dict[Path, _Keys] = {}
        self._lock = threading.Lock()

    def keys(
        self, path: Path, data: bytes, ident: tuple[int, int] = (0, 0)
    ) -> dict[str, tuple[int, int]]:
        """``path``'s line keys for its bytes ``data`` (of the file ``ident``, its device
        and inode): (first line, byte offset) of each. Only the bytes past what was keyed
        last time are keyed, while the file is the same inode (a forget, an import or an
        editor replaces it by a rename: keyed again whole); a duplicate found through the
        cache is checked against ``data`` (``_still``) before it is believed."""
        with self._lock:
            cached = self._cache.get(path)
        whole = data.rfind(b"\n") + 1  # key whole lines only
        if cached is not None and cached.ident == ident and cached.size <= whole:
            # In place: one file's appends are serialised by its lock (MEMORY.md is only
            # read here, and keyed again when it changed).
            at = cached.at
            lines = _key_lines(data[:whole], cached.size, cached.lines, at)
        else:
            at = {}
            lines = _key_lines(data[:whole], 0, 0, at)
        with self._lock:
            if len(self._cache) >= MAX_CACHED_FILES:
                self._cache.clear()
            self._cache[path] = _Keys(ident, whole, lines, at)
        return at

    def forget(self, path: Path) -> None:
        with self._lock:
            self._cache.pop(path, None)

    def filter(
        self, root: Path, day_rel: str, day_data: bytes, text: str, day_ident: tuple[int, int]
    ) -> Filtered:
        """``text`` without its lines already in the day's note (``day_data``, read under
        its append lock, of the file ``day_ident``) or in MEMORY.md."""
        wanted = [(line, line_key(line)) for line in text.splitlines()]
        if not any(k for _, k in wanted):
            return Filtered(text, [])
        sources = [(day_rel, day_data, day_ident, self.keys(root / day_rel, day_data, day_ident))]
        memory = _read_memory(root)
        if memory is not None:
            rel, data, ident = memory
            sources.append((rel, data, ident, self.keys(root / rel, data, ident)))
        for rel, data, ident, keys in sources:
            if any(k in keys and not _still(data, k, keys[k][1]) for _, k in wanted if k):
                self.forget(root / rel)  # edited elsewhere: key the file again, whole
                keys.clear()
                keys.update(self.keys(root / rel, data, ident))
        kept: list[str] = []
        dropped: list[dict[str, Any]] = []
        seen: set[str] = set()
        for line, k in wanted:
            where = next(((rel, ks[k][0]) for rel, _, _, ks in sources if k and k in ks), None)
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


def _read_memory(root: Path) -> tuple[str, bytes, tuple[int, int]] | None:
    """MEMORY.md as it is: its writers replace it by a rename, so one read is one version."""
    for name in MEMORY_FILES:
        try:
            opened = open_beneath(root, name, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        with os.fdopen(opened.fd, "rb") as f:
            st = os.fstat(f.fileno())
            return name, f.read(), (st.st_dev, st.st_ino)
    return None
