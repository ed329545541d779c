"""The read-only connections of one index, pooled: searches, status and the embedder's reads
never wait behind the writer, and each thread borrows a connection instead of opening one."""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Iterator
from pathlib import Path

import apsw

from memoryd.index import db, schema
from memoryd.index.keyword_text import with_offsets
from memoryd.index.snippets import TokenizeOffsets


class Reader:
    """A read-only connection with the index's own tokens (porter over keyword_text), with
    offsets into the chunk's text, for snippets."""

    def __init__(self, path: Path) -> None:
        self.conn = db.connect(path, readonly=True)
        porter = self.conn.fts5_tokenizer(*schema.FTS_TOKENIZER)

        def tokenize(raw: bytes) -> list[tuple[int, int, str]]:
            found = porter(
                raw,
                apsw.FTS5_TOKENIZE_DOCUMENT,
                None,
                include_offsets=True,
                include_colocated=False,
            )
            return found  # type: ignore[return-value]  # offsets on, colocated off: (s, e, tok)

        self.tokenize: TokenizeOffsets = with_offsets(tokenize)


class ReaderPool:
    """Connections opened on demand (one per thread reading at once) and kept for reuse."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._idle: queue.SimpleQueue[Reader] = queue.SimpleQueue()

    @contextlib.contextmanager
    def borrow(self) -> Iterator[Reader]:
        try:
            r = self._idle.get_nowait()
        except queue.Empty:
            r = Reader(self.path)
        try:
            yield r
        finally:
            self._idle.put(r)

    def close(self) -> None:
        """Close the idle connections (call once nothing reads any more)."""
        while True:
            try:
                self._idle.get_nowait().conn.close()
            except queue.Empty:
                return
