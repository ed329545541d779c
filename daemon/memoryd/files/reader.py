"""``get``: a line range of a memory file, read from the layout (no index involved).

The file is opened beneath the workspace (``Layout.open_memory``), then checked as opened:
a regular file; what is read is what was checked. A file within ``index.max_file_bytes``
is read whole; a larger one only in a stream, a block at a time, for the asked-for lines
(which must fit that size themselves): memory stays bounded whatever the file's size.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidParams, NotFound, Unavailable
from memoryd.files.layout import Layout
from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

_READ_CHUNK = 1 << 20


@frozen_record(frozen=True, eq=False, repr=False)
class LinesRead(Record):
    """The lines a ``get`` read from a file."""

    path: str  # workspace-relative, as requested (a link keeps its own name)
    from_line: int
    lines: int  # how many lines `text` holds
    text: str
    total_lines: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "from": self.from_line,
            "lines": self.lines,
            "text": self.text,
            "total_lines": self.total_lines,
        }


def read_all(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of open file ``fd`` from its start."""
    parts: list[bytes] = []
    offset = 0
    while offset < limit:
        chunk = os.pread(fd, min(_READ_CHUNK, limit - offset), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def read_lines(
    layout: Layout, path: str, from_line: int | None, lines: int | None, max_bytes: int
) -> LinesRead:
    """Blocking (run it in a thread): lines ``from_line``.. of the memory file ``path``."""
    if from_line is not None and from_line < 1:
        raise InvalidParams(f"from must be >= 1, got {from_line}", {"param": "from"})
    if lines is not None and lines < 1:
        raise InvalidParams(f"lines must be >= 1, got {lines}", {"param": "lines"})
    rel = layout.requested_rel(path)
    if not layout.root.is_dir():
        raise Unavailable(f"workspace folder {layout.root} is missing")
    opened = layout.open_memory(rel)
    start = from_line or 1
    try:
        st = os.fstat(opened.fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotFound(f"{rel} is not a file")
        if st.st_size > max_bytes:
            if lines is None:
                raise InvalidParams(
                    f"{rel} is {st.st_size} bytes, above index.max_file_bytes ({max_bytes}): "
                    "ask for a range of it (lines)",
                    {"param": "lines"},
                )
            picked, total = _stream_range(opened.fd, start - 1, start - 1 + lines, max_bytes)
            chosen = _split(picked)
            return LinesRead(rel, start, len(chosen), "\n".join(chosen), total)
        data = read_all(opened.fd, st.st_size)
    finally:
        os.close(opened.fd)
    all_lines = _split(data)
    chosen = all_lines[start - 1 :] if lines is None else all_lines[start - 1 : start - 1 + lines]
    return LinesRead(rel, start, len(chosen), "\n".join(chosen), len(all_lines))


def _split(data: bytes) -> list[str]:
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    return lines


def _stream_range(fd: int, first: int, end: int, max_bytes: int) -> tuple[bytes, int]:
    """The bytes of lines ``first``..``end - 1`` (0-based) of open file ``fd`` and its
    number of lines, read a block at a time; InvalidParams when the range alone is over
    ``max_bytes``. Blocks before or after the range are only counted."""
    picked = bytearray()
    line = 0  # the line the next byte belongs to
    offset = 0
    last = b"\n"
    while chunk := os.pread(fd, _READ_CHUNK, offset):
        offset += len(chunk)
        last = chunk[-1:]
        newlines = chunk.count(b"\n")
        if line + newlines < first or line >= end:
            line += newlines
            continue
        pos = 0
        while pos < len(chunk):
            nl = chunk.find(b"\n", pos)
            stop = len(chunk) if nl < 0 else nl + 1
            if first <= line < end:
                picked += chunk[pos:stop]
                if len(picked) > max_bytes:
                    raise InvalidParams(
                        f"lines {first + 1}-{end} are more than index.max_file_bytes "
                        f"({max_bytes}): ask for fewer lines",
                        {"param": "lines"},
                    )
            if nl < 0:
                break
            line += 1
            pos = stop
    return bytes(picked), line + (0 if last == b"\n" else 1)
