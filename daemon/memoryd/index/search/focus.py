"""What a question asks of a line beyond its words: a question asking when is answered by a
line that says when.

``When did Melanie paint a sunrise?`` is answered by "I painted that lake sunrise last year"
more often than by the other lines naming a sunrise: for such a question (``When ...``,
``How long ago ...``, ``What year ...``) a line naming a time ("yesterday", "last week", "in
May", "2022") counts 1 + WHEN_BOOST of its score, in the line signal and for the snippet.
Only a line matching the question's words gains: a date alone finds nothing. Any other
question, and a chunk naming no time, keep their scores exactly. Deterministic and English
only, like when.py (which reads the time a question names; this reads the time a line does).
"""

from __future__ import annotations

import functools
import re
from typing import Final

from memoryd.index.search.when import folded

WHEN_BOOST = 0.5  # share of its score a line saying when gains, for a question asking when

_WHEN_Q: Final = (
    r"\W*(?:when|since when|how long ago|(?:what|which) (?:date|day|year|month|week|time))\b"
)
# A question asking when holds one of these as IGNORECASE matches them (when.folded, then
# lower-cased; "ago" is in "how long ago"): most questions hold none, and are told so
# without compiling either pattern (~8 M instructions before a daemon's first answer to
# one: issue 38).
_WHEN_WORDS: Final = ("when", "ago", "date", "day", "year", "month", "week", "time")
# Month and day names count capitalised only ("I may go" names no month).
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_UNITS = r"(?:day|night|week|weekend|month|year|summer|winter|spring|fall|autumn)s?"
_TIME_WORDS = (
    r"(?:(?i:yesterday|today|tonight|tomorrow|recently|lately"
    rf"|(?:last|this|next|past) {_UNITS}"
    rf"|(?:a|an|one|two|three|four|five|six|few|couple of|\d+) {_UNITS} ago)"
    rf"|{_MONTHS}|{_DAYS}|(?:19|20)\d\d)\b"
)
# What each of those alternatives can begin with (tests/index/test_search_focus.py holds it
# to the alternatives over all of Unicode). Looked at first, at every word boundary, it
# spares most of them the ~30 alternatives: a question asking when scans its candidates'
# lines twice as fast (a start's first answer to one: ~30 M instructions).
_STARTS = r"(?i:[ytrlnpaofsc])|[JFMASONDTW]|\d"


@functools.cache
def _pattern(which: str) -> re.Pattern[str]:
    """Compiled on first use: a question asking when, the lines of its candidates."""
    if which == "when":
        return re.compile(_WHEN_Q, re.I)
    return re.compile(rf"\b(?={_STARTS}){_TIME_WORDS}")


def asks_when(query: str) -> bool:
    low = folded(query).lower()
    return any(w in low for w in _WHEN_WORDS) and bool(_pattern("when").match(query))


@functools.lru_cache(maxsize=4096)
def timed_lines(text: str) -> tuple[bool, ...]:
    """Per line of a chunk, whether it names a time. Cached: the same chunks come back."""
    search = _pattern("time").search
    return tuple(bool(search(line)) for line in text.split("\n"))


def refocus(text: str, scores: list[float], when: bool) -> list[float]:
    """``scores`` (one per line of ``text``) with the lines saying when raised, for a
    question asking when (``when``); else ``scores`` itself."""
    if not when or not any(scores):
        return scores
    timed = timed_lines(text)
    if not any(timed):
        return scores
    return [s * (1.0 + WHEN_BOOST) if s and t else s for s, t in zip(scores, timed, strict=False)]
