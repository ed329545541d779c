"""The days a chunk speaks of: its own (a daily log's date) and the single days its lines name
relative to it. "Yesterday" or "last night" in a note of 2023-05-04 is 2023-05-03; so is "on
Wednesday" there, or "1 day ago".

A question naming a date ("who did Maria have dinner with on May 3, 2023?") is answered as
often by the next day's note that says "my mom and I made dinner last night" as by that day's
own note, so such a chunk counts as on that day for fusion's date signal (DATE_WEIGHT). Only
phrases naming one day count: "last week" spans seven and would put a week of notes on every
date in it. English only, like when.py (whose fuller reading of a query's time words would
cost ~0.3 ms a chunk); day names count capitalised only, as in focus.py.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Collection

from memoryd.index.search.when import DAY_NAMES

_WEEKDAY = {d: i for i, d in enumerate(DAY_NAMES)}  # Monday first
_ONE_DAY = (
    r"\b(?:(?P<yesterday>[Yy]esterday|[Ll]ast night)"
    rf"|(?:[Oo]n|[Ll]ast) (?P<weekday>{'|'.join(_WEEKDAY)})(?!s)"  # "on Mondays" is a habit
    r"|(?P<n>\d{1,2}) days? ago)\b"
)
# What each phrase holds, found by plain substring search: most chunks hold none, and the
# expression itself costs ~45 µs on a chunk of a few kilobytes (and ~1.6 M instructions to
# compile: on the first chunk holding one, not at a start, issue 38).
_CUES = ("esterday", "ast night", " ago", *_WEEKDAY)
REACH = 31  # days a phrase may reach back ("40 days ago" is not read): bounds the notes read


@functools.lru_cache(maxsize=4096)
def named_days(text: str, day: str) -> frozenset[str]:
    """The single days before ``day`` that the lines of ``text`` name, as YYYY-MM-DD."""
    if not day or not any(cue in text for cue in _CUES):
        return frozenset()
    try:
        today = dt.date.fromisoformat(day)
    except ValueError:
        return frozenset()
    out: set[str] = set()
    for m in _one_day().finditer(text):
        if m.group("yesterday"):
            back = 1
        elif m.group("weekday"):  # the last one before the note's day
            back = (today.weekday() - _WEEKDAY[m.group("weekday")]) % 7 or 7
        else:
            back = int(m.group("n"))
        if 0 < back <= REACH and back < today.toordinal():  # not before the calendar's first
            out.add((today - dt.timedelta(days=back)).isoformat())
    return frozenset(out)


def on_named_day(day: str, text: str, days: Collection[str]) -> bool:
    """Whether a chunk of ``day`` holding ``text`` is about one of ``days``: its own date, or
    a day one of its lines names."""
    if day in days:
        return True
    if not day or not any(d < day <= _reach(d) for d in days):
        return False  # a note speaks of days before its own, and not long before
    return any(d in days for d in named_days(text, day))


def reaches(days: Collection[str]) -> tuple[str, ...]:
    """Each day's last day whose notes may name it (on_named_day's reach), in order."""
    return tuple(map(_reach, days))


@functools.lru_cache(maxsize=256)
def _reach(day: str) -> str:
    """The last day whose notes may name ``day``."""
    try:
        return (dt.date.fromisoformat(day) + dt.timedelta(days=REACH)).isoformat()
    except ValueError:  # "2023-02-31": named by no note
        return ""
    except OverflowError:  # within REACH of the calendar's last day: up to it
        return dt.date.max.isoformat()


@functools.cache
def _one_day() -> re.Pattern[str]:
    return re.compile(_ONE_DAY)
