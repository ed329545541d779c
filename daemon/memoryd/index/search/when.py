"""The time a query or a prompt names: "yesterday", "last week", "in March", "since Monday",
"on 2025-03-11", "before 2024", read as a range of days relative to a given today.

Deterministic and English only (the words our users' agents write). What is understood is
returned as (since, until), inclusive ISO days, either one open; None when the text names
no time. Several expressions narrow each other ("since March, before 2026").
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import Final

Range = tuple[str | None, str | None]

# English, as calendar.month_name and day_name give them in the C locale a process keeps
# for LC_TIME (Python never sets it): written out, the calendar module is not imported
# before a daemon's first answer (issue 38).
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MONTH = {m: i for i, m in enumerate(_MONTHS, 1)} | {m[:3]: i for i, m in enumerate(_MONTHS, 1)}
_MONTH["sept"] = 9
# The letters IGNORECASE matches with ASCII ones (re's case folding: the dotted and dotless
# i, the long s, the Kelvin sign): a name written with one ("August" with a long s) matches
# the patterns, and is read as the name it matched once they are ASCII letters (``folded``).
_ASCII_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DAYS = [d.lower() for d in DAY_NAMES]  # monday first, as date.weekday()
_WEEKDAY = {d: i for i, d in enumerate(_DAYS)} | {d[:3]: i for i, d in enumerate(_DAYS)}

_M = r"(?P<month>" + "|".join(sorted(_MONTH, key=len, reverse=True)) + r")\.?"
_W = r"(?P<weekday>" + "|".join(sorted(_WEEKDAY, key=len, reverse=True)) + r")"
_ISO = r"(?P<iso>\d{4}-\d{2}-\d{2})"
_Y = r"(?P<year>(?:19|20)\d{2})"
# A day written out, "October 13, 2023", "13th of October 2023", "June 3": the month's
# name in no group of its own (_M names it), read again by _written_parts.
_MN = r"(?:" + "|".join(sorted(_MONTH, key=len, reverse=True)) + r")\.?"
_DOM = r"\d{1,2}(?:st|nd|rd|th)?(?!\d)"
_WY = r"(?:(?:,\s*|\s+)(?:19|20)\d{2}(?!\d))"
_WRITTEN = rf"(?P<written>{_MN}\s+{_DOM}{_WY}?|{_DOM}\s+(?:of\s+)?{_MN}{_WY}?)"


@functools.cache
def _written_parts() -> re.Pattern[str]:
    return re.compile(r"[a-z]+|\d+", re.I)  # on first need, as the patterns (below)


# A point in time, as a day or a span of days: an ISO date, a month (and year), a year,
# a weekday, or a relative word.
_MY = r"(?:,?\s+(?P<myear>(?:19|20)\d{2}))?"
_POINT = rf"(?:{_ISO}|{_WRITTEN}|{_M}{_MY}|{_Y}|{_W}|(?P<rel>today|yesterday))"
# What each kind of expression looks like (the order they are read in). Compiled on the
# first text may_name_a_time passes: ~40 M instructions, which most questions (and the first answer
# of a daemon started by one: issue 38) never need.
_SOURCES: Final = (
    ("on", rf"\b(?:on|in|during|from)\s+(?:last\s+|the\s+)?{_POINT}\b"),
    ("since", rf"\b(?:since|after)\s+(?:last\s+|the\s+)?{_POINT}\b"),
    ("before", rf"\b(?:before|until|till)\s+(?:last\s+|the\s+)?{_POINT}\b"),
    ("on", rf"(?<![\w-]){_ISO}(?![\w-])"),
    ("on", rf"\b(?P<written>{_MN}\s+{_DOM}{_WY}|{_DOM}\s+(?:of\s+)?{_MN}{_WY})"),
    ("on", r"\b(?P<rel>today|yesterday)\b"),
    ("last", r"\b(?P<which>last|this|past)\s+(?P<unit>week|month|year)\b"),
    ("ago", r"\b(?P<n>\d{1,3})\s+(?P<unit>day|week|month)s?\s+ago\b"),
    ("lastn", r"\b(?:last|past)\s+(?P<n>\d{1,3})\s+(?P<unit>day|week)s?\b"),
    ("on", rf"\blast\s+{_W}\b"),
)


@functools.cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((kind, re.compile(source, re.I)) for kind, source in _SOURCES)


# What every expression the patterns read holds somewhere: four digits, or one of these
# words as IGNORECASE would match it (in the text folded, then lower-cased: the same
# letters). A text holding none names no time. Substring tests: the one IGNORECASE
# alternation they replace compiled at every start (~2.7 M instructions, issue 38).
_CHEAP_WORDS: Final = (
    "today",
    "yesterday",
    "ago",
    "last",
    "this",
    "past",
    "since",
    "after",
    "before",
    "until",
    "till",
    *_MONTHS,
    *_DAYS,
)
_FOUR_DIGITS = re.compile(r"\d{4}")


def may_name_a_time(text: str) -> bool:
    """False when ``text`` holds nothing any pattern could match (most questions)."""
    if _FOUR_DIGITS.search(text):
        return True
    low = folded(text).lower()
    return any(word in low for word in _CHEAP_WORDS)


def month_days(year: int, month: int) -> int:
    """calendar.monthrange(year, month)[1]: the days of that month."""
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _MONTH_DAYS[month - 1]


def folded(text: str) -> str:
    """``text`` with the non-ASCII letters IGNORECASE matches with ASCII ones made those
    ASCII letters (each one letter for one: every match and its place stay the same)."""
    return text if text.isascii() else text.translate(_ASCII_FOLDS)


def _span(m: re.Match[str], today: dt.date) -> tuple[dt.date, dt.date] | None:
    """The days (first, last) the point matched by ``m`` covers."""
    g = m.groupdict()
    if g.get("iso"):
        try:
            d = dt.date.fromisoformat(g["iso"])
        except ValueError:
            return None
        return d, d
    if g.get("written"):
        day = _written_day(g["written"], today)
        return None if day is None else (day, day)
    if g.get("month"):
        month = _MONTH[g["month"].lower()]
        year = int(g["myear"]) if g.get("myear") else today.year
        if not g.get("myear") and month > today.month:
            year -= 1  # "in March", said in January: the March before
        return dt.date(year, month, 1), dt.date(year, month, month_days(year, month))
    if g.get("year"):
        year = int(g["year"])
        return dt.date(year, 1, 1), dt.date(year, 12, 31)
    if g.get("weekday"):
        back = (today.weekday() - _WEEKDAY[g["weekday"].lower()]) % 7 or 7
        d = today - dt.timedelta(days=back)  # the last one before today
        return d, d
    if g.get("rel"):
        d = today if g["rel"].lower() == "today" else today - dt.timedelta(days=1)
        return d, d
    return None


def _written_day(text: str, today: dt.date) -> dt.date | None:
    """The day of "October 13, 2023" or "13th of October" (the last one not after ``today``
    when no year is written); None for a day the month does not have."""
    parts = _written_parts().findall(text.lower())
    month = next(_MONTH[w] for w in parts if w in _MONTH)
    day, *written_year = (int(w) for w in parts if w.isdigit())
    year = written_year[0] if written_year else today.year
    try:
        d = dt.date(year, month, day)
        if not written_year and d > today:
            d = dt.date(year - 1, month, day)  # "on June 3", said in May: the June before
    except ValueError:
        return None
    return d


def _relative(kind: str, m: re.Match[str], today: dt.date) -> tuple[dt.date, dt.date] | None:
    unit = m.group("unit").lower()
    if kind == "last":
        this = m.group("which").lower() == "this"
        if unit == "week":
            monday = today - dt.timedelta(days=today.weekday())
            return (monday, today) if this else (monday - dt.timedelta(7), monday - dt.timedelta(1))
        if unit == "month":
            first = today.replace(day=1)
            if this:
                return first, today
            prev_last = first - dt.timedelta(days=1)
            return prev_last.replace(day=1), prev_last
        if this:
            return dt.date(today.year, 1, 1), today
        return dt.date(today.year - 1, 1, 1), dt.date(today.year - 1, 12, 31)
    n = int(m.group("n"))
    days = n * {"day": 1, "week": 7, "month": 30}[unit]
    if kind == "ago":
        d = today - dt.timedelta(days=days)
        slack = {"day": 0, "week": 3, "month": 7}[unit]  # "2 weeks ago" is roughly
        return d - dt.timedelta(days=slack), d + dt.timedelta(days=slack)
    return today - dt.timedelta(days=days - 1), today  # lastn


def _bounds(
    kind: str, m: re.Match[str], today: dt.date
) -> tuple[dt.date | None, dt.date | None] | None:
    """(since, until) of the expression ``m`` matched (either None: open), or None."""
    span = _span(m, today) if kind in ("on", "since", "before") else _relative(kind, m, today)
    if span is None:
        return None
    first, last = span
    if kind == "since":
        return first if m.group(0).lower().startswith("since") else last + dt.timedelta(1), None
    if kind == "before":
        return None, first - dt.timedelta(1) if not m.group(0).lower().startswith("until") else last
    return first, last


@functools.lru_cache(maxsize=1024)
def understood(text: str, today: dt.date) -> Range | None:
    """The range of days ``text`` names, relative to ``today``; None when it names none.
    Remembered: every search asks it of its query, and agents ask the same ones again."""
    if not may_name_a_time(text):
        return None
    text = folded(text)  # the same matches, their names now the ones they matched
    since: dt.date | None = None
    until: dt.date | None = None
    found = False
    taken: list[tuple[int, int]] = []
    for kind, rx in _patterns():
        for m in rx.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue  # part of an expression already read ("since 2025-03-01")
            try:
                bounds = _bounds(kind, m, today)
            except (OverflowError, ValueError):  # past the calendar's ends: no day, read
                taken.append((m.start(), m.end()))  # (its date is not "on" that date)
                continue
            if bounds is None:
                continue
            taken.append((m.start(), m.end()))
            found = True
            lo, hi = bounds
            if lo is not None:
                since = lo if since is None else max(since, lo)
            if hi is not None:
                until = hi if until is None else min(until, hi)
    if not found:
        return None
    return (since.isoformat() if since else None, until.isoformat() if until else None)
