"""Today's date read at most once a UTC minute (runtime/days.py) against reading it every
time, at explicit instants (never the real clock): around every midnight and UTC offset
change of zones with DST at odd hours or half hours (Chile's midnight fall-back, Lord Howe's
30-minute shift, Chatham's +12:45, Kathmandu's +5:45, Newfoundland's -3:30), asked in order,
backwards and at random, and a day of local mean time (an offset of seconds: never kept).
The C library's local time (``LocalDay``, date.today()) is checked in a child process per
TZ, as TZ is read at its start."""

from __future__ import annotations

import datetime as dt
import os
import random
import subprocess
import sys
import textwrap
from zoneinfo import ZoneInfo

import pytest

from memoryd.jobs.clock import SystemClock, today_iso
from memoryd.runtime.days import ZoneDay

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/Santiago",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kathmandu",
    "America/St_Johns",
    "Pacific/Apia",  # skipped a whole day in 2011; DST until 2021
]


def _instants(tz: ZoneInfo, rng: random.Random) -> list[float]:
    """Seconds around each local midnight and each offset change of 2016-2026, in order."""
    out: list[float] = []
    start = dt.datetime(2016, 1, 1, tzinfo=dt.UTC).timestamp()
    end = dt.datetime(2026, 12, 31, tzinfo=dt.UTC).timestamp()
    t = start
    while t < end:
        nxt = t + 3600 * 6
        a, b = dt.datetime.fromtimestamp(t, tz), dt.datetime.fromtimestamp(nxt, tz)
        if a.date() != b.date() or a.utcoffset() != b.utcoffset():  # find the instant
            lo, hi = t, nxt
            while hi - lo > 1:
                mid = (lo + hi) // 2
                m = dt.datetime.fromtimestamp(mid, tz)
                same = m.date() == a.date() and m.utcoffset() == a.utcoffset()
                lo, hi = (mid, hi) if same else (lo, mid)
            out += [hi + d for d in (-61, -60, -59, -1, -0.5, 0, 0.25, 1, 59, 60, 61)]
            out += [hi + rng.uniform(-120, 120) for _ in range(3)]
        t = nxt
    return out


@pytest.mark.parametrize("zone", ZONES)
def test_the_day_read_once_a_minute_is_the_day_read_every_time(zone: str) -> None:
    tz = ZoneInfo(zone)
    rng = random.Random(zone)
    instants = _instants(tz, rng)
    assert len(instants) > 2000
    for order in (instants, instants[::-1], rng.sample(instants, len(instants))):
        day = ZoneDay(tz)
        for t in order:
            assert day(lambda t=t: t) == dt.datetime.fromtimestamp(t, tz).date().isoformat()


def test_a_day_under_local_mean_time_is_not_kept() -> None:
    tz = ZoneInfo("Africa/Monrovia")  # -0:44:30 until 1972
    t = dt.datetime(1950, 6, 1, 0, 44, 29, tzinfo=dt.UTC).timestamp()
    day = ZoneDay(tz)
    assert day(lambda: t) == "1950-05-31"
    assert day._kept[0] == -1  # not kept: the next read reads again
    assert day(lambda: t + 2) == "1950-06-01"


def test_the_system_clocks_day_is_its_zones_and_a_fake_clocks_is_its_own() -> None:
    clock = SystemClock(ZoneInfo("Pacific/Chatham"))
    t = dt.datetime(2024, 4, 6, 14, 0, tzinfo=dt.UTC).timestamp()
    assert clock.today(lambda: t) == dt.datetime.fromtimestamp(t, clock.tz).date().isoformat()

    class Fixed:
        tz = dt.UTC

        def now(self) -> dt.datetime:
            return dt.datetime(2001, 2, 3, 4, 5, tzinfo=dt.UTC)

        async def sleep_until(self, when: dt.datetime) -> None: ...

    assert today_iso(Fixed()) == "2001-02-03"


@pytest.mark.parametrize(
    "zone", ["UTC", "America/Santiago", "Australia/Lord_Howe", "Asia/Kathmandu"]
)
def test_the_local_day_is_date_today_in_the_c_librarys_zone(zone: str) -> None:
    code = textwrap.dedent(
        """
        import datetime as dt, random
        from memoryd.runtime.days import LocalDay
        rng = random.Random(1)
        ts = []
        for y in range(2011, 2027):
            for m in range(1, 13):
                base = dt.datetime(y, m, 1).timestamp()  # local midnight of each month
                ts += [base + d for d in range(-3700, 3700, 29)]
                ts += [base + rng.uniform(-86400 * 15, 86400 * 15) for _ in range(20)]
        for order in (ts, ts[::-1], rng.sample(ts, len(ts))):
            day = LocalDay()
            for t in order:
                assert day(lambda t=t: t) == dt.date.fromtimestamp(t), t
        print("ok", len(ts))
        """
    )
    env = {**os.environ, "TZ": zone}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")
