"""The next files of a bulk sync read and chunked on a thread of their own.

The writer thread spends a first index's time in SQLite (which lets go of the GIL) and the
chunker in Python and the tokenizer (which lets go of it too): on two cores they overlap.
Files are handed out in order, a few megabytes ahead at most, and each result is taken by
the writer, which writes the files in their order as before: the index is the same.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")

AHEAD_BYTES = 8 << 20  # of files read and chunked, not yet written
AHEAD_FILES = 16


class ReadAhead(Generic[K, T]):
    def __init__(self, work: Callable[[K], T]) -> None:
        self._work = work
        self._pool: ThreadPoolExecutor | None = None  # started at the first file handed out
        self._pending: dict[K, tuple[Future[T], int]] = {}
        self._bytes = 0

    def room(self) -> bool:
        """More may be handed out (always one at least)."""
        return not self._pending or (self._bytes < AHEAD_BYTES and len(self._pending) < AHEAD_FILES)

    def add(self, key: K, size: int) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="memoryd-chunker")
        self._pending[key] = (self._pool.submit(self._work, key), size)
        self._bytes += size

    def take(self, key: K) -> Future[T] | None:
        """The work on ``key``, if it was handed out; its result (or exception) is the
        caller's."""
        got = self._pending.pop(key, None)
        if got is None:
            return None
        self._bytes -= got[1]
        return got[0]

    def close(self) -> None:
        """Drop what was not taken (waits for the file in hand, if any)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()
        self._bytes = 0
