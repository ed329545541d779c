"""The scheduler's clock: the real one, or a test's fake (tests never wait for real time).

A clock's ``now()`` is an aware datetime in the local zone; ``sleep_until`` returns once
``now()`` has reached the given instant (or later: a machine that slept wakes late).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import time
from pathlib import Path
from typing import Final, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memoryd.runtime.days import ZoneDay

# asyncio timers run on the monotonic clock, which stands still while the machine is
# suspended; waking at least this often notices a suspend (or a wall-clock change) and lets
# the scheduler catch up soon after. One wake-up a minute costs nothing.
MAX_NAP_S: Final = 60.0


class Clock(Protocol):
    @property
    def tz(self) -> dt.tzinfo: ...

    def now(self) -> dt.datetime: ...

    async def sleep_until(self, when: dt.datetime) -> None: ...


def local_zone(env: dict[str, str] | None = None) -> dt.tzinfo:
    """The local time zone as a zoneinfo zone (DST rules known), from TZ or /etc/localtime.

    Falls back to the current fixed UTC offset, which misses DST changes until a restart.
    """
    env = dict(os.environ) if env is None else env
    names = [env.get("TZ", "").lstrip(":")]
    try:
        link = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in link:
            names.append(link.split("zoneinfo/", 1)[1])
        names.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    except OSError:
        pass
    for name in names:
        if not name:
            continue
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            continue
    try:
        with open("/etc/localtime", "rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError):
        pass
    fixed = dt.datetime.now().astimezone().tzinfo
    assert fixed is not None
    return fixed


def today_iso(clock: Clock) -> str:
    """``clock.now().date().isoformat()``; the system clock's read at most once a minute."""
    if isinstance(clock, SystemClock):
        return clock.today()
    return clock.now().date().isoformat()


def zone_name(tz: dt.tzinfo) -> str:
    key = getattr(tz, "key", None)
    return key if isinstance(key, str) else str(tz)


class SystemClock:
    def __init__(self, tz: dt.tzinfo | None = None) -> None:
        self.tz = tz if tz is not None else local_zone()
        self.today = ZoneDay(self.tz)  # now().date().isoformat(), read once a minute

    def now(self) -> dt.datetime:
        return dt.datetime.now(self.tz)

    async def sleep_until(self, when: dt.datetime) -> None:
        while True:
            left = when.timestamp() - time.time()
            if left <= 0:
                return
            await asyncio.sleep(min(left, MAX_NAP_S))
