"""Cron schedules on the local wall clock, safe across daylight-saving changes.

croniter is driven with naive wall-clock times only (its own handling of aware datetimes
across DST has a history of bugs); each matching wall time is then mapped to one instant:

- a wall time that does not exist (spring forward: 02:30 on the day clocks jump 02:00 ->
  03:00) runs at the end of the gap (03:00), once;
- a wall time that happens twice (fall back) runs once, at its first occurrence.

Instants are compared by timestamp: Python compares two aware datetimes of the same zone
by wall time, ignoring ``fold``, which is wrong inside the repeated hour.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

UTC: Final = dt.UTC
ALIASES: Final = ("@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually")
_MAX_STEPS: Final = 100_000  # matches examined per lookup; a minute schedule needs <= 240
_DST_SPAN: Final = dt.timedelta(hours=3)  # more than any real zone's shift


def cron_problem(expr: str) -> str | None:
    """What is wrong with a schedule (for a config error), or None when it is usable."""
    from croniter import croniter

    text = expr.strip()
    if text.lower() in ALIASES:
        return None
    if len(text.split()) != 5:
        return (
            "must be a cron expression of 5 fields (minute hour day-of-month month "
            "day-of-week) or one of " + ", ".join(ALIASES)
        )
    if not croniter.is_valid(text):
        return "is not a valid cron expression"
    return None


def _exists(aware: dt.datetime) -> bool:
    back = aware.astimezone(UTC).astimezone(aware.tzinfo)
    return back.replace(tzinfo=None) == aware.replace(tzinfo=None)


def resolve(wall: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """The instant a naive wall-clock time stands for in ``tz`` (see the module docstring)."""
    aware = wall.replace(tzinfo=tz, fold=0)
    if _exists(aware):
        return aware
    probe = wall.replace(second=0, microsecond=0)
    for _ in range(24 * 60):  # in a gap: the first wall minute after it that exists
        probe += dt.timedelta(minutes=1)
        candidate = probe.replace(tzinfo=tz, fold=0)
        if _exists(candidate):
            return candidate
    raise ValueError(f"{wall} in {tz}: no valid time within a day after it")


def _expr(expr: str) -> str:
    text = expr.strip().lower()
    return "@daily" if text == "@midnight" else text


def next_after(expr: str, after: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """The first scheduled instant strictly after ``after`` (aware), as a time in ``tz``."""
    from croniter import croniter

    limit = after.timestamp()
    # Start from the wall time of ``after``; its mapped instant is never later than ``after``
    # (inside a repeated hour it maps to the first pass), and the mapping only goes forward.
    it = croniter(_expr(expr), after.astimezone(tz).replace(tzinfo=None))
    for _ in range(_MAX_STEPS):
        at = resolve(it.get_next(dt.datetime), tz)
        if at.timestamp() > limit:
            return at
    raise ValueError(f"schedule {expr!r} has no run after {after.isoformat()}")


def latest_at_or_before(expr: str, when: dt.datetime, tz: dt.tzinfo) -> dt.datetime | None:
    """The last scheduled instant at or before ``when``, or None when there is none."""
    from croniter import croniter

    limit = when.timestamp()
    start = when.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0) + _DST_SPAN
    it = croniter(_expr(expr), start)
    for _ in range(_MAX_STEPS):
        try:
            wall = it.get_prev(dt.datetime)
        except Exception:  # croniter gives up far in the past
            return None
        at = resolve(wall, tz)
        if at.timestamp() <= limit:
            return at
    return None
