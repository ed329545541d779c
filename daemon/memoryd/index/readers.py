"""The read-only connections of one index, pooled: searches, status and the embedder's reads
never wait behind the writer, and each thread borrows a connection instead of opening one.

A read that finds the file damaged (SQLITE_CORRUPT, SQLITE_NOTADB) tells the index, which
moves it aside and rebuilds it (index/workspace.py); while the file is swapped the pool is
suspended: borrowing fails with ``IndexUnavailable`` saying why, and connections to the old
file are closed as they come back instead of being reused."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import apsw

from memoryd.errors import IndexUnavailable
from memoryd.index import schema
from memoryd.index.damage import corruption_in
from memoryd.index.keyword.text import FTS_TOKENIZER, TokenizeOffsets, with_offsets


class Reader:
    """A read-only connection with the index's own tokens (porter over keyword_text), with
    offsets into the chunk's text, for snippets."""

    def __init__(self, path: Path) -> None:
        self.conn = schema.connect(path, readonly=True)
        try:
            # Read the schema first: a damaged file says so here (SQLITE_CORRUPT), where the
            # FTS5 lookup below would call it NoFTS5Error.
            self.conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
        except BaseException:
            self.conn.close()
            raise
        porter = self.conn.fts5_tokenizer(*FTS_TOKENIZER)

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
    """Connections opened on demand (one per thread reading at once) and kept for reuse.

    ``on_corrupt``: called (on the reading thread) with the error when a read finds the
    file damaged; the read itself then fails with ``IndexUnavailable``."""

    def __init__(
        self, path: Path, on_corrupt: Callable[[BaseException], None] | None = None
    ) -> None:
        self.path = path
        self.on_corrupt = on_corrupt
        self._idle: queue.SimpleQueue[Reader] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._epoch = 0  # bumped by suspend(): older connections are closed when returned
        self._suspended: str | None = None

    def borrow(self) -> Borrowed:
        """A reader for a ``with`` block, given back at its end (closed instead when the
        pool was suspended meanwhile); an error in the block that says the file is damaged
        is told (``_damaged``)."""
        return Borrowed(self)

    def _damaged(self, exc: Exception, epoch: int) -> None:
        """When ``exc`` says the file is damaged, or came from a read racing the swap of a
        damaged file: tell the index (once), and raise a clear ``IndexUnavailable``."""
        with self._lock:
            current = epoch == self._epoch
            why = self._suspended or "the index was being rebuilt: try again"
        if not current and isinstance(exc, apsw.Error):  # the file was swapped meanwhile
            raise IndexUnavailable(why) from exc
        if (found := corruption_in(exc)) is None or self.on_corrupt is None:
            return
        self.on_corrupt(found)
        raise IndexUnavailable(
            f"the index {self.path.name} was found damaged ({found}); it is being "
            "rebuilt from the files: try again in a moment",
        ) from exc

    def suspend(self, why: str) -> None:
        """Borrowing fails with ``why`` until ``resume``; idle connections are closed and
        those lent out are closed when they come back (the file is about to be replaced)."""
        with self._lock:
            self._suspended = why
            self._epoch += 1
        self.close()

    def resume(self) -> None:
        with self._lock:
            self._suspended = None

    def close(self) -> None:
        """Close the idle connections (call once nothing reads any more)."""
        while True:
            try:
                self._idle.get_nowait().conn.close()
            except queue.Empty:
                return


class Borrowed:
    """ReaderPool.borrow's ``with``: a class, not a generator's context manager (a
    search's every read borrows one; the generator's machinery was ~10k instructions)."""

    __slots__ = ("epoch", "pool", "reader")

    def __init__(self, pool: ReaderPool) -> None:
        self.pool = pool

    def __enter__(self) -> Reader:
        pool = self.pool
        with pool._lock:
            if pool._suspended is not None:
                raise IndexUnavailable(pool._suspended)
            self.epoch = epoch = pool._epoch
        try:
            r = pool._idle.get_nowait()
        except queue.Empty:
            try:
                r = Reader(pool.path)
            except apsw.Error as exc:
                pool._damaged(exc, epoch)
                raise
        self.reader = r
        return r

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pool = self.pool
        try:
            if isinstance(exc, Exception):
                pool._damaged(exc, self.epoch)
        finally:
            with pool._lock:
                current = self.epoch == pool._epoch
            if current:
                pool._idle.put(self.reader)
            else:
                self.reader.conn.close()
