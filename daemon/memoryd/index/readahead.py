"""The next files of a bulk sync handed out ahead of their turn (prepare.py does the work).

Files are handed out in order, a few megabytes ahead at most, and each result is taken by
the writer, which writes the files in their order as before: the index is the same. The
workers start at the first file handed out; ``close`` drops what was not taken.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")

AHEAD_BYTES = 24 << 20  # of files handed out, not yet written
AHEAD_FILES = 96


class ReadAhead(Generic[K, T]):
    def __init__(self, start: Callable[[], Executor]) -> None:
        self._start = start
        self._pool: Executor | None = None
        self._pending: dict[K, tuple[T, int]] = {}
        self._bytes = 0

    def room(self) -> bool:
        """More may be handed out (always one at least)."""
        return not self._pending or (self._bytes < AHEAD_BYTES and len(self._pending) < AHEAD_FILES)

    def add(self, key: K, size: int, hand_out: Callable[[Executor], T]) -> None:
        """``hand_out`` submits the work on ``key`` to the workers (started now if need be)
        and gives what ``take`` returns for it."""
        if self._pool is None:
            self._pool = self._start()
        self._pending[key] = (hand_out(self._pool), size)
        self._bytes += size

    def take(self, key: K) -> T | None:
        """What was handed out for ``key``, if it was."""
        got = self._pending.pop(key, None)
        if got is None:
            return None
        self._bytes -= got[1]
        return got[0]

    def close(self) -> None:
        """Drop what was not taken; the workers finish the files in hand and exit."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()
        self._bytes = 0
