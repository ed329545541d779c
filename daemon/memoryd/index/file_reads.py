"""Reading a file to index: opened beneath the workspace by the rule ``get`` reads with, never
more than ``index.max_file_bytes``, not binary, and decoded as UTF-8 (invalid bytes replaced,
said once per file version)."""

from __future__ import annotations

import errno
import os
from typing import BinaryIO

from memoryd.errors import MemorydError
from memoryd.files.layout import IndexedFile, Layout
from memoryd.files.reader import read_all
from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.index")

BINARY_SNIFF_BYTES = 8192


class FileReads:
    def __init__(self, layout: Layout, max_file_bytes: int) -> None:
        self.layout = layout
        self.max_file_bytes = max_file_bytes
        self._warned: set[tuple[str, str]] = set()

    def read(self, f: IndexedFile, st: os.stat_result, quiet: bool = False) -> bytes | str | None:
        """A markdown file's bytes; why it is skipped; or None when it cannot be read."""
        if st.st_size > self.max_file_bytes:
            return f"too large: {st.st_size} bytes > index.max_file_bytes {self.max_file_bytes}"
        try:
            with self.open(f) as fh:
                # Never more than the limit (it may have grown since the stat), and never a
                # buffer of the limit's size either: fh.read(n) allocates n bytes up front.
                data = read_all(fh.fileno(), self.max_file_bytes + 1)
        except OSError as exc:
            if not quiet:
                log.warning("file_unreadable", path=f.rel, error=str(exc))
            return None
        if len(data) > self.max_file_bytes:
            return f"too large: over index.max_file_bytes {self.max_file_bytes}"
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            return "binary: contains NUL bytes"
        return data

    def open(self, f: IndexedFile) -> BinaryIO:
        """``f`` opened beneath the workspace by the rule ``get`` reads with (a link swapped
        in since the listing is not followed out of it); OSError when it cannot be."""
        try:
            return os.fdopen(self.layout.open_memory(f.rel).fd, "rb")
        except MemorydError as exc:  # gone, or no longer memory: the next listing says which
            raise OSError(errno.ENOENT, exc.message) from None

    def decode(self, rel: str, data: bytes, digest: str) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if (rel, digest) not in self._warned:  # once per file version, not per sync
                self._warned.add((rel, digest))
                log.warning(
                    "invalid_utf8",
                    path=rel,
                    position=exc.start,
                    action="decoded with replacement characters",
                )
            return data.decode("utf-8", errors="replace")
