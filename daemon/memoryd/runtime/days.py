"""Today's date, read at most once a UTC minute.

A search reads the local day twice (the request's today, and read-your-writes' hot files:
today's and yesterday's log); ``date.today()`` and ``datetime.now(tz).date()`` each cost
~7k instructions (a localtime and the objects made), as much as the rest of a search's
bookkeeping around them. The local date changes only where the UTC offset carries local
time past midnight or the offset itself changes. With offsets of whole minutes (every
zone's since the 1970s) both happen on a whole UTC minute: a date read in the minute
[60k, 60k + 60) is that whole minute's, exactly. A day read under an offset that is not
whole minutes (an old date's local mean time) is not kept.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _PerMinute(Generic[T]):
    """A value of the instant, read again only in another UTC minute."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        # (UTC minute or -1, the value read in it), swapped whole: threads read it too
        self._kept: tuple[int, T | None] = (-1, None)

    def __call__(self, now: Callable[[], float] = time.time) -> T:
        t = now()
        minute = int(t // 60)
        kept = self._kept
        if kept[0] == minute:
            return kept[1]  # type: ignore[return-value]  # set with its minute below
        value, whole_minutes = self._read(t)
        self._kept = (minute if whole_minutes else -1, value)
        return value

    def _read(self, t: float) -> tuple[T, bool]:
        """The value at ``t``, and whether the UTC offset there is whole minutes."""
        raise NotImplementedError


class LocalDay(_PerMinute[dt.date]):
    """``date.today()``: the day in the C library's local time (TZ, /etc/localtime)."""

    __slots__ = ()

    def _read(self, t: float) -> tuple[dt.date, bool]:
        lt = time.localtime(t)  # as date.today() reads time.time(): floored to seconds
        return dt.date(lt.tm_year, lt.tm_mon, lt.tm_mday), lt.tm_gmtoff % 60 == 0


class ZoneDay(_PerMinute[str]):
    """``datetime.now(tz).date().isoformat()`` for one zone (the system clock's)."""

    __slots__ = ("tz",)

    def __init__(self, tz: dt.tzinfo) -> None:
        super().__init__()
        self.tz = tz

    def _read(self, t: float) -> tuple[str, bool]:
        at = dt.datetime.fromtimestamp(t, self.tz)
        offset = at.utcoffset()
        whole = offset is not None and offset % dt.timedelta(minutes=1) == dt.timedelta(0)
        return at.date().isoformat(), whole


local_today = LocalDay()
