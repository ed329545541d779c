"""A session transcript's next step: what to read past its stored offset, and the files row
it leaves (sync.py writes the chunks). A transcript is only ever appended to, so it is read
from where the last step ended; its last chunk is re-chunked as it grows, and a transcript
whose first bytes changed (rewritten, not appended) is read again from the start.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, BinaryIO

from memoryd.files.layout import ISO_DAY, IndexedFile
from memoryd.files.transcripts import TranscriptChunkInput
from memoryd.index.chunker import Chunk
from memoryd.index.store import FileRow
from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

SESSION_PREFIX_BYTES = 4096  # hashed to notice a transcript that was rewritten, not appended
# A transcript is ingested this much at a time (each step one transaction with its offsets),
# or up to max_file_bytes when one line is longer: a 16 MiB step took 7.5 s, and SIGTERM
# waited for it; 1 MiB takes about half a second.
TRANSCRIPT_STEP_BYTES = 1 << 20


@frozen_record(frozen=True, eq=False, repr=False)
class Step(Record):
    """What one step read: ``buf`` from ``start_off`` (line ``start_line``); the bytes before
    ``old_end`` were ingested already (the last chunk's lines, re-chunked with what follows)."""

    prefix: bytes  # the file's first bytes (SESSION_PREFIX_BYTES)
    buf: bytes
    want: int  # how much was asked for: a shorter buf reached the end of the file
    restart: bool  # read from the start (new, rewritten, or a full reindex)
    start_off: int
    start_line: int
    old_end: int

    def digest(self, ingested: int) -> str:
        return hashlib.sha256(self.prefix[: min(SESSION_PREFIX_BYTES, ingested)]).hexdigest()


def read_step(
    fh: BinaryIO, row: FileRow | None, st: os.stat_result, full: bool, max_file_bytes: int
) -> Step | None:
    """The next step of the transcript open as ``fh``; None when its first line holds NUL
    bytes (a binary file). OSError when it cannot be read."""
    prefix = fh.read(SESSION_PREFIX_BYTES)
    # Only the first line decides: a crash can leave a run of NULs after the
    # lines already written, and that is one malformed line, not a binary file.
    if b"\x00" in prefix.split(b"\n", 1)[0]:
        return None
    old_prefix_ok = (
        row is not None
        and not row.skipped_reason
        and row.ingested <= st.st_size
        and row.hash
        == hashlib.sha256(prefix[: min(SESSION_PREFIX_BYTES, row.ingested)]).hexdigest()
    )
    restart = full or row is None or not old_prefix_ok
    start_off = 0 if restart or row is None else row.tail_offset
    start_line = 1 if restart or row is None else row.tail_line
    old_end = 0 if restart or row is None else row.ingested
    fh.seek(start_off)
    step = min(TRANSCRIPT_STEP_BYTES, max_file_bytes)
    want = old_end - start_off + step
    buf = fh.read(want)
    if len(buf) == want and step < max_file_bytes and b"\n" not in buf[-step:]:
        # A line longer than a step: read on up to the limit to find its end.
        more = fh.read(max_file_bytes - step)
        buf, want = buf + more, want + max_file_bytes - step
    return Step(prefix, buf, want, restart, start_off, start_line, old_end)


def transcript_row(
    f: IndexedFile,
    row: FileRow | None,
    st: os.stat_result,
    s: Step,
    head: TranscriptChunkInput,
    tail: TranscriptChunkInput,
    chunks: Sequence[Chunk],
) -> FileRow:
    """The files row after a step: what was ingested, and where the next step starts (the
    last chunk's first line, which is re-chunked as the transcript grows)."""
    ingested = s.old_end + tail.consumed
    lines = s.start_line - 1 + head.lines_consumed + tail.lines_consumed
    tail_line, tail_offset = lines + 1, ingested
    if chunks:
        tail_line = chunks[-1].start_line
        tail_offset = s.start_off + line_offset(s.buf, 0, s.start_line, tail_line)
    day = (row.day if row is not None and not s.restart else "") or day_of_timestamp(
        head.started_at or tail.started_at
    )
    malformed = (0 if s.restart or row is None else row.malformed) + tail.malformed
    return FileRow(
        f.rel,
        f.source,
        s.digest(ingested),
        st.st_mtime_ns,
        st.st_size,
        day,
        ingested,
        lines,
        tail_offset,
        tail_line,
        malformed,
        None,
    )


def long_line_row(
    f: IndexedFile, row: FileRow | None, st: os.stat_result, s: Step, end: int, line: int
) -> FileRow:
    """The files row once line ``line`` (ending at byte ``end``, longer than max_file_bytes)
    is stepped over, counted as malformed."""
    kept = row is not None and not s.restart
    ingested = end + 1
    return FileRow(
        f.rel,
        f.source,
        s.digest(ingested),
        st.st_mtime_ns,
        st.st_size,
        row.day if row is not None and kept else "",
        ingested,
        line,
        ingested,
        line + 1,
        (row.malformed if row is not None and kept else 0) + 1,
        None,
    )


def find_newline(fh: BinaryIO, offset: int, block: int = 1 << 20) -> int | None:
    """Byte offset of the first newline at or after ``offset``, read a block at a time; None
    when the file ends first."""
    fh.seek(offset)
    while data := fh.read(block):
        nl = data.find(b"\n")
        if nl >= 0:
            return offset + nl
        offset += len(data)
    return None


def line_offset(data: bytes, start_off: int, start_line: int, line: int) -> int:
    """Byte offset of physical ``line``, counting newlines from (start_off, start_line)."""
    off = start_off
    for _ in range(line - start_line):
        nl = data.find(b"\n", off)
        if nl < 0:
            break
        off = nl + 1
    return off


def day_of_timestamp(timestamp: str | None) -> str:
    """The ISO date a transcript's timestamp starts with, or '' (filters compare days as
    strings, and the vector mirror as numbers: both need exactly YYYY-MM-DD)."""
    return timestamp[:10] if timestamp and ISO_DAY.match(timestamp) else ""
