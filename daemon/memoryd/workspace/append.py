"""The ``append`` method: add a block to ``memory/YYYY-MM-DD.md`` without disturbing it.

Existing bytes are never rewritten: the block (with its blank-line separator and, when the
file's last section is not already it, its ``## heading``) is built first and added with
one ``write`` on a descriptor opened ``O_APPEND``, then fsynced. Appends to one file from
this daemon are serialised by a lock per file.

Why not temp file + fsync + rename, as for the other memory files (fsutil.atomic_write)?
A daily log is append-only and shared: an agent (or a shell ``>>``) may append to it at
the same moment, or hold it open ``O_APPEND``. Rewriting the whole file and renaming it
over the old one would lose whatever they wrote between our read and our rename, and a
writer holding the old file open would keep writing to the unlinked old inode. An
``O_APPEND`` write of the suffix is the safer atomic primitive here: the kernel places it
at the end of the file as it is at that moment, so concurrent appenders are never lost
and the bytes already there are never touched (a reader sees the file end either before
our block or after it; a crash can at worst leave part of the block at the end). Only a
brand-new file is created, exclusively (``O_CREAT|O_EXCL``), then fsynced with its folder.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import ForbiddenPath, InvalidParams, MemorydError, Unavailable
from memoryd.workspace.fsutil import fsync_dir

MAX_ATTEMPTS = 5
_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_CHUNK = 1 << 20


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



def _pread_all(fd: int, size: int) -> bytes:
    """The first ``size`` bytes of the open file (fewer if it is shorter now)."""
    parts: list[bytes] = []
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(_READ_CHUNK, size - offset), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    """One ``write`` call for the whole suffix (a regular file takes it all at once; the
    loop only covers a short write, e.g. a full disk, which then raises on the retry)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Appender:
    """Appends daily-file blocks; one instance per daemon (its locks are per file)."""

    def __init__(self) -> None:
        self._locks: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock_for(self, path: Path) -> threading.Lock:
        """The lock serialising writes to the daily file ``path`` (resolved); other writers
        of daily files in this process (the fallback-summary job, retention's move) take it."""
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
        rel = target.relative_to(root).as_posix()
        for _ in range(MAX_ATTEMPTS):
            # Containment first, creation after: a ``memory`` symlink (or a daily-file
            # symlink) leading outside the workspace is refused before anything is made.
            folder = target.parent.resolve()
            real = target.resolve()  # a symlinked daily file is written through, if inside
            for path in (folder, real):
                if not path.is_relative_to(root):
                    raise ForbiddenPath(f"{target} resolves outside the workspace ({path})",
                                        {"path": rel})
            folder.mkdir(parents=True, exist_ok=True)
            with self.lock_for(real):
                result = self._append_once(real, text, heading)
            if result is not None:
                start, end, size = result
                return AppendResult(path=rel, abs_path=real, start_line=start, end_line=end,
                                    bytes=size)
        raise MemorydError(f"{target} kept changing while appending; try again")

    @staticmethod
    def _append_once(real: Path, text: str,
                     heading: str | None) -> tuple[int, int, int] | None:
        """Append to (or create) ``real``: (start line, end line, bytes), or None when it
        changed under us (created meanwhile, or became a symlink): resolve and try again."""
        created = False
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except FileNotFoundError:
            try:
                fd = os.open(real, _CREATE_FLAGS, 0o666)  # less the umask, as any new file
            except FileExistsError:  # another writer created it first: append to theirs
                return None
            created = True
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # replaced by a symlink since we resolved it
                return None
            raise
        try:
            # Read through the descriptor we write with: the same inode, whatever renames.
            # A concurrent external append between this read and our write only shifts
            # where our block lands; the line range is computed from where it did land.
            existing = _pread_all(fd, os.fstat(fd).st_size)
            suffix, _, _ = build_suffix(existing, text, heading)
            _write_all(fd, suffix)
            os.fsync(fd)
            begin = os.lseek(fd, 0, os.SEEK_CUR) - len(suffix)  # where the suffix went
            prefix = (existing if begin == len(existing)
                      else _pread_all(fd, begin))  # someone else appended in between
        finally:
            os.close(fd)
        if created:
            fsync_dir(real.parent)
        # The suffix is separator newlines, then the block, which ends with a newline.
        end = prefix.count(b"\n") + suffix.count(b"\n")
        return end - suffix.lstrip(b"\n").count(b"\n") + 1, end, len(suffix)
