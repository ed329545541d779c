"""Byte budgets: how much memory the socket server may hold for peers, and waiting for room.

A response the peer has not read yet, or a frame body being received, holds bytes. Each
connection has a budget and all connections share one; a request that is about to build a
large answer reserves its size first (``acquire``, waiting while the budget is full), and
what is already built is charged without waiting (``charge``). A budget that holds nothing
always lets one reservation in, so a single frame of any allowed size gets through.
"""

from __future__ import annotations

import asyncio


class ByteBudget:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiters: list[asyncio.Future[None]] = []

    def has_room(self, nbytes: int = 0) -> bool:
        return self.used == 0 or self.used + nbytes <= self.limit

    async def acquire(self, nbytes: int) -> None:
        """Take ``nbytes``, waiting until they fit (or nothing else is held)."""
        while not self.has_room(nbytes):
            await self._wait()
        self.used += nbytes

    def below_limit(self) -> bool:
        """Whether a reader may take another frame (``wait_room`` would not wait)."""
        return self.used < self.limit

    async def wait_room(self) -> None:
        """Wait until the budget is below its limit (the reader's back-pressure)."""
        while self.used >= self.limit:
            await self._wait()

    def charge(self, nbytes: int) -> None:
        """Bytes that exist already: counted, never waited for."""
        self.used += nbytes

    def release(self, nbytes: int) -> None:
        self.used -= nbytes
        waiters, self._waiters = self._waiters, []
        for fut in waiters:  # each re-checks: whoever fits goes on
            if not fut.done():
                fut.set_result(None)

    async def _wait(self) -> None:
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        finally:
            if fut in self._waiters:
                self._waiters.remove(fut)
