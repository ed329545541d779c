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
our block or after it).

An append is whole or absent. A write or fsync that fails (a full disk: ``disk_full``)
truncates the file back to where the block began, and a daily file this append created is
removed again rather than left empty. The file is opened beneath the workspace
(``Layout.open_memory``), never by a path checked beforehand. What may be appended is
bounded: no NUL byte (it would turn the whole day "binary", unsearchable), at most
``MAX_APPEND_BYTES`` at once, and never past ``index.max_file_bytes``: an append that would
push the day over the limit is refused, so everything already in it stays searchable (a
file over the limit is not indexed at all; cutting its index at the limit would instead
hide exactly the newest notes, silently).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from memoryd import records
from memoryd.errors import (
    DiskFull,
    ForbiddenPath,
    InvalidParams,
    MemorydError,
    TooLarge,
    Unavailable,
)
from memoryd.files.beneath import Opened
from memoryd.files.duplicates import Duplicates
from memoryd.files.fsutil import fsync_dir, write_all
from memoryd.files.layout import Layout, daily_path, daily_rel
from memoryd.files.lines import text_keys
from memoryd.files.locks import FileLocks
from memoryd.files.provenance import Provenance, Record, clean_session_id, ledger_for
from memoryd.files.reader import read_all
from memoryd.runtime.logs import get_logger
from memoryd.secrets import redact

__all__ = [
    "MAX_APPEND_BYTES",
    "AppendResult",
    "Appender",
    "build_suffix",
    "daily_path",
    "normalise_heading",
]

log = get_logger("memoryd.files.append")

MAX_ATTEMPTS: Final = 5
MAX_APPEND_BYTES: Final = 1 << 20  # one note; a bigger one is a file of its own
DEFAULT_MAX_FILE_BYTES: Final = 16 << 20  # index.max_file_bytes's default
_FLAGS: Final = os.O_RDWR | os.O_APPEND | os.O_CREAT
_NO_SPACE: Final = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True, eq=False, repr=False)
class AppendResult(records.Record):
    """Where an append wrote, and what it left out as already there."""

    path: str  # workspace-relative, POSIX separators
    abs_path: Path
    start_line: int  # first line written (the heading when one was added), 1-based
    end_line: int
    bytes: int  # bytes added to the file
    redacted: tuple[str, ...] = ()  # the kinds of secret replaced before writing
    # Lines of the text already in the day or MEMORY.md, not written again ({text, path,
    # line}); when every line was, nothing was written (``bytes`` 0): ``duplicate``.
    dropped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def duplicate(self) -> bool:
        return self.bytes == 0 and bool(self.dropped)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "bytes": self.bytes,
        }
        if self.redacted:
            out["redacted"] = list(self.redacted)
        if self.duplicate:
            out["duplicate"] = True
            out["existing"] = {"path": self.path, "line": self.start_line}
        elif self.dropped:
            out["duplicates_dropped"] = self.dropped
        return out


def _last_heading(content: bytes, block: int = 1 << 16) -> bytes | None:
    """The text of the last level-2 heading in ``content``, or None. Read from the end a
    block at a time: a long day's log is not split whole at every append."""
    while True:
        start = max(0, len(content) - block)
        lines = content[start:].splitlines()
        for line in reversed(lines[1:] if start else lines):  # the first may be cut
            if line.startswith(b"## "):
                return line[3:].strip()
            if line.startswith(b"# "):  # a level-1 heading closes the previous section
                return None
        if not start:
            return None
        block *= 4


def build_suffix(
    existing: bytes, text: str, heading: str | None, title: str | None = None
) -> tuple[bytes, int, int]:
    """The bytes to add after ``existing``, and the 1-based line range of the new block.

    Blocks are separated by one blank line. A heading is written only when the file's last
    section is not already that heading, so repeated appends under it stay one section. A
    new file whose first block is a section starts with ``# title`` (a daily file's day, as
    memory-core and people write it), so the section sits under the day's title.
    """
    sep = b""
    if existing and not existing.endswith(b"\n"):
        sep += b"\n"
    if existing and not (existing + sep).endswith(b"\n\n"):
        sep += b"\n"
    block = text.strip("\n").encode("utf-8") + b"\n"
    if heading and _last_heading(existing) != heading.encode("utf-8"):
        block = f"## {heading}\n\n".encode() + block
        if title and not existing.strip():
            block = f"# {title}\n\n".encode() + block
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
    if "\x00" in clean:
        raise InvalidParams("heading must not contain NUL bytes", {"param": "heading"})
    return clean or None


def check_text(text: str) -> None:
    """Refuse at the door what would damage a daily file (or not fit in one)."""
    if not text.strip():
        raise InvalidParams("text must not be empty", {"param": "text"})
    if "\x00" in text:  # one NUL makes the whole file "binary": unsearchable
        raise InvalidParams("text must not contain NUL bytes", {"param": "text"})
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_APPEND_BYTES:
        raise TooLarge(
            f"text is {size} bytes; one append takes at most {MAX_APPEND_BYTES}",
            {"param": "text", "max_bytes": MAX_APPEND_BYTES},
        )


class Appender:
    """Appends daily-file blocks; one instance per daemon (its locks are per file)."""

    def __init__(self, locks: FileLocks | None = None) -> None:
        # The daemon's one registry (files/locks.py): forget, import, retention and the
        # other writers of memory files take their locks from it too.
        self.locks = locks if locks is not None else FileLocks()
        self.duplicates = Duplicates()

    def append(
        self,
        root: Path,
        text: str,
        date: dt.date,
        heading: str | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        provenance: Provenance | Sequence[tuple[str, Provenance]] | None = None,
        via: str = "append",
    ) -> AppendResult:
        """Blocking: run it in a thread. ``root`` is the workspace's resolved root. A secret
        in ``text`` is replaced by ``[REDACTED:kind]`` before anything is written.

        ``provenance``: recorded for each line of ``text`` in the workspace's ledger
        (files/provenance.py), durably and before the lines are written, under the file's
        lock; or (part of ``text``, its provenance) pairs when parts differ (flush); None
        records nothing (the line counts as the owner's)."""
        check_text(text)
        heading = normalise_heading(heading)
        clean = redact(text)
        text = clean.text
        kinds = clean.kinds
        if heading is not None:  # it reaches the file (and the index, exports) too
            said = redact(heading)
            heading, kinds = said.text, kinds + said.kinds
        if isinstance(provenance, Provenance) and provenance.session_id:
            provenance = replace(provenance, session_id=clean_session_id(provenance.session_id))
        root = root.resolve()
        if not root.is_dir():  # never create a missing (unmounted?) workspace folder
            raise Unavailable(f"workspace folder {root} is missing")
        layout = Layout(root)
        rel = daily_rel(date)
        for _ in range(MAX_ATTEMPTS):
            got = _open_day(layout, rel)
            if got is None:  # created by another writer meanwhile: append to theirs
                continue
            opened = got
            real = root / opened.rel
            try:
                with self.locks.lock_for(real):
                    fresh = _as_now(layout, opened)
                    if fresh is None:  # the path leads elsewhere now: start again
                        continue
                    opened = fresh
                    # Lines already in the day or MEMORY.md are not written again: checked
                    # and written under the day's lock, against the file as it is now.
                    st = os.fstat(opened.fd)
                    data = read_all(opened.fd, st.st_size)
                    found = self.duplicates.filter(
                        root, opened.rel, data, text, (st.st_dev, st.st_ino)
                    )
                    if not found.duplicate:
                        record = _recorder(root, rel, found.text, provenance, via)
                        start, end, size = self._append_to(
                            opened.fd, rel, found.text, heading, max_file_bytes, record, data
                        )
            except BaseException:
                os.close(opened.fd)
                if opened.created:
                    _remove_if_empty(layout, opened.rel)
                raise
            os.close(opened.fd)
            if found.duplicate:
                if opened.created:
                    _remove_if_empty(layout, opened.rel)
                first = found.dropped[0]
                return AppendResult(
                    str(first["path"]),
                    root / str(first["path"]),
                    int(first["line"]),
                    int(first["line"]),
                    0,
                    kinds,
                    found.dropped,
                )
            if opened.created:
                fsync_dir(real.parent)
            return AppendResult(rel, real, start, end, size, kinds, found.dropped)
        raise MemorydError(f"{rel} kept changing while appending; try again")

    @staticmethod
    def _append_to(
        fd: int,
        rel: str,
        text: str,
        heading: str | None,
        max_file_bytes: int,
        before_write: Callable[[], None] | None = None,
        read: bytes | None = None,
    ) -> tuple[int, int, int]:
        """Append to open daily file ``fd``: (start line, end line, bytes added).
        ``before_write``: once the block is known to fit, just before it is written.
        ``read``: the file's bytes as just read under its lock (not read again)."""
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidParams(f"{rel} is not a regular file", {"path": rel})
        if st.st_size > max_file_bytes:
            raise TooLarge(
                f"{rel} is already {st.st_size} bytes, over index.max_file_bytes "
                f"({max_file_bytes}): nothing appended; write to another file",
                {"path": rel, "max_bytes": max_file_bytes},
            )
        # Read through the descriptor we write with: the same inode, whatever renames.
        # A concurrent external append between this read and our write only shifts
        # where our block lands; the line range is computed from where it did land.
        existing = (
            read if read is not None and len(read) == st.st_size else read_all(fd, st.st_size)
        )
        title = rel.removeprefix("memory/").removesuffix(".md")  # the daily file's day
        suffix, _, _ = build_suffix(existing, text, heading, title)
        if len(existing) + len(suffix) > max_file_bytes:
            raise TooLarge(
                f"{rel} would grow to {len(existing) + len(suffix)} bytes, over "
                f"index.max_file_bytes ({max_file_bytes}), and a file over it is "
                "not searchable: nothing appended; write to another file",
                {"path": rel, "max_bytes": max_file_bytes},
            )
        if before_write is not None:
            before_write()
        try:
            write_all(fd, suffix)
            os.fsync(fd)
        except OSError as exc:
            try:
                _take_back(fd, getattr(exc, "written", len(suffix)), rel)
            except OSError as undo:
                log.error("append_not_taken_back", path=rel, error=str(undo))
            if exc.errno in _NO_SPACE:
                raise DiskFull(
                    f"the disk is full: nothing was appended to {rel} ({os.strerror(exc.errno)})",
                    {"path": rel},
                ) from None
            raise
        begin = os.lseek(fd, 0, os.SEEK_CUR) - len(suffix)  # where the suffix went
        prefix = (
            existing if begin == len(existing) else read_all(fd, begin)
        )  # someone else appended in between
        # The suffix is separator newlines, then the block, which ends with a newline; a new
        # file's title (two lines) is not the block's.
        end = prefix.count(b"\n") + suffix.count(b"\n")
        titled = 2 if suffix.startswith(b"# ") else 0
        return end - suffix.lstrip(b"\n").count(b"\n") + 1 + titled, end, len(suffix)


def _recorder(
    root: Path,
    rel: str,
    text: str,
    provenance: Provenance | Sequence[tuple[str, Provenance]] | None,
    via: str,
) -> Callable[[], None] | None:
    """What records the lines of ``text`` (what is written: redacted, duplicates dropped) in
    the ledger, or None when there is nothing to say. A line not written gets no record: a
    copy of the owner's line must not make it the copier's."""
    if provenance is None:
        return None
    written = set(text_keys(text))
    parts = [(text, provenance)] if isinstance(provenance, Provenance) else list(provenance)
    at = time.time()
    records = [
        Record.added(k, rel, p, via, at)
        for part, p in parts
        for k in dict.fromkeys(text_keys(redact(part).text if part is not text else part))
        if k in written
    ]
    if not records:
        return None

    def record() -> None:
        try:
            ledger_for(root).add(records)
        except (NotADirectoryError, IsADirectoryError):
            # memory/ was swapped for something else since the note was opened: the
            # ledger cannot be reached beneath the root, so nothing is written.
            raise ForbiddenPath(
                f"{rel}: memory/ changed while appending (not a folder now); nothing written",
                {"path": rel},
            ) from None

    return record


def _open_day(layout: Layout, rel: str) -> Opened | None:
    """The day's note opened for appending (made when missing), beneath the root, links
    inside it followed: a memory/ or daily-file link leading out is refused before anything
    is made. None when another writer created it meanwhile (open again)."""
    try:
        return layout.open_memory(rel, _FLAGS, 0o666, make_dirs=True)
    except FileExistsError:
        return None
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise DiskFull(
                f"the disk is full: could not create {rel} "
                f"({os.strerror(exc.errno)}); nothing was written",
                {"path": rel},
            ) from None
        raise


def _as_now(layout: Layout, opened: Opened) -> Opened | None:
    """The day's note as it is now, under its lock: ``opened`` when the path still leads to
    it; else (replaced by a forget's or an import's rename, moved by retention while we
    waited for the lock, so a block written to it would be lost) the file there now, opened
    again (our descriptor closed); None, ours closed too, when the path leads to another
    file than it did (a link changed: the caller starts again with its lock). A path that
    may not be written now (a link leading out) is refused as a first open would be."""
    now = _open_day(layout, opened.rel)
    if now is None:
        os.close(opened.fd)
        return None
    a, b = os.fstat(now.fd), os.fstat(opened.fd)
    if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
        os.close(now.fd)
        return opened
    os.close(opened.fd)
    if now.rel != opened.rel:
        os.close(now.fd)
        return None
    return Opened(now.fd, now.rel, opened.created or now.created)


def _take_back(fd: int, written: int, rel: str) -> None:
    """Truncate away the ``written`` bytes of a failed append (they end where our
    descriptor's offset is), unless someone appended after them: cutting then would lose
    their bytes, so ours stay and the failure is logged with the caller's error."""
    if not written:
        return
    end = os.lseek(fd, 0, os.SEEK_CUR)
    if os.fstat(fd).st_size != end:
        log.error(
            "append_not_taken_back",
            path=rel,
            bytes=written,
            why="another writer appended after the failed block",
        )
        return
    os.ftruncate(fd, end - written)
    with contextlib.suppress(OSError):  # the truncation stands in the page cache anyway
        os.fsync(fd)


def _remove_if_empty(layout: Layout, rel: str) -> None:
    """A daily file this append created and could not fill is removed, not left empty."""
    try:
        opened = layout.open_memory(rel)
    except MemorydError:
        return
    try:
        if os.fstat(opened.fd).st_size == 0:
            os.unlink(layout.root / opened.rel)
    except OSError:
        pass
    finally:
        os.close(opened.fd)
