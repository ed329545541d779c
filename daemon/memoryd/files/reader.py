"""``get``: a line range of a memory file, read from the layout (no index involved).

The file is opened beneath the workspace (``Layout.open_memory``), then checked as opened:
a regular file, within ``index.max_file_bytes``; what is read is what was checked.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Any

from memoryd.errors import InvalidParams, NotFound, Unavailable
from memoryd.files.layout import Layout

_READ_CHUNK = 1 << 20


@dataclass(frozen=True)
class LinesRead:
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
    try:
        st = os.fstat(opened.fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotFound(f"{rel} is not a file")
        if st.st_size > max_bytes:
            raise InvalidParams(
                f"{rel} is {st.st_size} bytes, above index.max_file_bytes ({max_bytes})",
                {"param": "path"},
            )
        data = read_all(opened.fd, st.st_size)
    finally:
        os.close(opened.fd)
    all_lines = data.decode("utf-8", errors="replace").split("\n")
    if all_lines and all_lines[-1] == "":
        all_lines.pop()  # a final newline ends the last line; it does not start another
    start = from_line or 1
    chosen = all_lines[start - 1 :] if lines is None else all_lines[start - 1 : start - 1 + lines]
    return LinesRead(rel, start, len(chosen), "\n".join(chosen), len(all_lines))
