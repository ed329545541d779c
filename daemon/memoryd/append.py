"""The ``append`` method: add a block to ``memory/YYYY-MM-DD.md`` without disturbing it.

Existing bytes stay byte-identical (the new file is the old one plus a suffix), the file
is replaced atomically (fsutil), and appends to one file are serialised by a lock per
file. An agent writing the same file at the same moment is not locked out by us, so the
rename only happens if the file is still the one we read; otherwise we read it again.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import ForbiddenPath, InvalidParams, MemorydError, Unavailable
from memoryd.fsutil import atomic_write

MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class AppendResult:
    path: str  # workspace-relative, POSIX separators
    abs_path: Path
    start_line: int  # first line written (the heading when one was added), 1-based
    end_line: int
    bytes: int  # bytes added to the file

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "start_line": self.start_line, "end_line": self.end_line,
                "bytes": self.bytes}


def daily_path(root: Path, date: dt.date) -> Path:
    return root / "memory" / f"{date.isoformat()}.md"


def _last_heading(content: bytes) -> bytes | None:
    """The text of the last level-2 heading in ``content``, or None."""
    for line in reversed(content.splitlines()):
        if line.startswith(b"## "):
            return line[3:].strip()
        if line.startswith(b"# "):  # a level-1 heading closes the previous section
            return None
    return None


def build_suffix(existing: bytes, text: str, heading: str | None) -> tuple[bytes, int, int]:
    """The bytes to add after ``existing``, and the 1-based line range of the new block.

    Blocks are separated by one blank line. A heading is written only when the file's last
    section is not already that heading, so repeated appends under it stay one section.
    """
    sep = b""
    if existing and not existing.endswith(b"\n"):
        sep += b"\n"
    if existing and not (existing + sep).endswith(b"\n\n"):
        sep += b"\n"
    block = text.strip("\n").encode("utf-8") + b"\n"
    if heading and _last_heading(existing) != heading.encode("utf-8"):
        block = f"## {heading}\n\n".encode() + block
    start = (existing + sep).count(b"\n") + 1
    end = start + block.count(b"\n") - 1
    suffix = sep + block
    return suffix, start, end


def normalise_heading(heading: str | None) -> str | None:
    if heading is None:
        return None
    clean = heading.strip().lstrip("#").strip()
    if "\n" in clean or "\r" in clean:
        raise InvalidParams("heading must be a single line", {"param": "heading"})
    return clean or None


class Appender:
    """Appends daily-file blocks; one instance per daemon (its locks are per file)."""

    def __init__(self) -> None:
        self._locks: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock_for(self, path: Path) -> threading.Lock:
        """The lock serialising writes to the daily file ``path`` (resolved); other writers
        of daily files in this process (the fallback-summary job) take it too."""
        with self._guard:
            return self._locks.setdefault(path, threading.Lock())

    def append(self, root: Path, text: str, date: dt.date,
               heading: str | None = None) -> AppendResult:
        """Blocking: run it in a thread. ``root`` is the workspace's resolved root."""
        if not text.strip():
            raise InvalidParams("text must not be empty", {"param": "text"})
        heading = normalise_heading(heading)
        root = root.resolve()
        if not root.is_dir():  # never create a missing (unmounted?) workspace folder
            raise Unavailable(f"workspace folder {root} is missing")
        target = daily_path(root, date)
        target.parent.mkdir(parents=True, exist_ok=True)
        real = target.resolve()  # a symlinked daily file is written through, if it stays inside
        if not real.is_relative_to(root):
            raise ForbiddenPath(f"{target} resolves outside the workspace ({real})",
                                {"path": str(target.relative_to(root))})
        with self.lock_for(real):
            for _ in range(MAX_ATTEMPTS):
                try:
                    before = os.stat(real)
                    existing = real.read_bytes()
                except FileNotFoundError:
                    before, existing = None, b""
                suffix, start, end = build_suffix(existing, text, heading)
                if not self._unchanged(real, before, len(existing)):
                    continue
                atomic_write(real, existing + suffix)
                return AppendResult(path=target.relative_to(root).as_posix(), abs_path=real,
                                    start_line=start, end_line=end, bytes=len(suffix))
        raise MemorydError(f"{target} kept changing while appending; try again")

    @staticmethod
    def _unchanged(path: Path, before: os.stat_result | None, size: int) -> bool:
        """Whether ``path`` is still what we read (another writer did not get in between)."""
        try:
            now = os.stat(path)
        except FileNotFoundError:
            return before is None
        if before is None:
            return False
        return (now.st_ino, now.st_mtime_ns, now.st_size) == (
            before.st_ino, before.st_mtime_ns, size)
