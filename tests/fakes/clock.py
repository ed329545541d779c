"""A clock for the jobs scheduler that only moves when the test moves it.

``now()`` is what the test set; ``sleep_until(t)`` returns once the test has moved the clock
to ``t`` or later, so schedules are tested without waiting for real time. Time zones come
from the start time's tzinfo, never from the process (no TZ juggling).
"""

from __future__ import annotations

import asyncio
import datetime as dt


class FakeClock:
    def __init__(self, start: dt.datetime) -> None:
        assert start.tzinfo is not None, "the fake clock needs an aware start time"
        self.tz: dt.tzinfo = start.tzinfo
        self._now = start
        self._waiters: set[asyncio.Event] = set()
        self.sleeping_until: dt.datetime | None = None
        self.sleeps = 0  # how many times something went to sleep (no polling: stays small)

    def now(self) -> dt.datetime:
        return self._now

    def set(self, when: dt.datetime) -> None:
        self._now = when.astimezone(self.tz)
        for event in self._waiters:
            event.set()

    def advance(self, delta: dt.timedelta) -> None:
        """Move on by real elapsed time (across a DST change too), not by wall-clock time."""
        self.set((self._now.astimezone(dt.UTC) + delta).astimezone(self.tz))

    async def sleep_until(self, when: dt.datetime) -> None:
        self.sleeps += 1
        self.sleeping_until = when
        event = asyncio.Event()
        self._waiters.add(event)
        try:
            while self._now.timestamp() < when.timestamp():
                event.clear()
                await event.wait()
        finally:
            self._waiters.discard(event)
            self.sleeping_until = None
