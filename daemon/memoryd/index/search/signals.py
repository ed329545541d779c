"""Ranking signals beyond the text: importance, project, recency, and a time the query names.

Each multiplies a fused score ``s`` mildly by ``1 + f``: a boosted hit's score may exceed 1
(a perfect keyword match scores 1.0, and two of them must still be told apart by their
importance). Monotone, so fusion's bound (the best score a candidate could reach) still
bounds it. A candidate with no meta, no project tag, no date in a range, and recency
off is left exactly as it was: ``Signals.active`` is False for a request and a workspace
that use none of them, and search then takes exactly the old path.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Protocol

from memoryd.files.annotations import normalize_project
from memoryd.index.line_meta import LineMetaMap, Summary, summarise
from memoryd.index.search.query import query_days
from memoryd.index.search.when import understood
from memoryd.index.types import SearchRequest
from memoryd.records import Fields

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as fields_record
else:
    from memoryd.records import fields_record


# Importance 5 is the middle of 1-10; 10 adds a tenth to a score, 1 takes 8% off. "Mildly":
# a strong match stays ahead of an important weak one.
IMPORTANCE_MID = 5
IMPORTANCE_STEP = 0.1
PROJECT_BOOST = 0.15  # a hit tagged with an active project
PROJECT_DEMOTE = -0.1  # a hit tagged with another project (untagged: neutral)
RANGE_BOOST = 0.2  # a dated hit inside the time the query names ("last week")
# Recency never takes more than this share off: an old note that matches well still shows.
RECENCY_FLOOR = 0.5


class Spanned(Protocol):
    id: int
    path: str
    day: str
    start_line: int
    end_line: int


def nudge(s: float, f: float) -> float:
    """``s`` moved by factor ``f`` (> -1): multiplied by 1 + f."""
    return s * (1.0 + f)


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Signals(Fields):
    """What ranks a search's lines beside their text: meta, projects, recency."""

    meta: LineMetaMap | None = None
    projects: frozenset[str] = frozenset()  # active project keys, normalised
    half_life_days: float = 0.0
    today: dt.date | None = None  # recency's "now"
    since: str | None = None  # the time the query names (YYYY-MM-DD), inclusive
    until: str | None = None
    _summaries: dict[int, Summary | None] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return (
            bool(self.meta)
            or (self.half_life_days > 0 and self.today is not None)
            or bool(self.since or self.until)
        )

    def summary(self, c: Spanned) -> Summary | None:
        if not self.meta:
            return None
        if c.id not in self._summaries:
            self._summaries[c.id] = summarise(self.meta.span(c.path, c.start_line, c.end_line))
        return self._summaries[c.id]

    def adjust(self, s: float, c: Spanned) -> float:
        m = self.summary(c)
        if m is not None:
            if m.importance is not None:
                s = nudge(s, IMPORTANCE_STEP * (m.importance - IMPORTANCE_MID) / IMPORTANCE_MID)
            if m.project is not None and self.projects:
                s = nudge(s, PROJECT_BOOST if m.project in self.projects else PROJECT_DEMOTE)
        if c.day:
            if (self.since or self.until) and in_range(c.day, self.since, self.until):
                s = nudge(s, RANGE_BOOST)
            if self.half_life_days > 0 and self.today is not None:
                s = nudge(s, -recency_loss(c.day, self.today, self.half_life_days))
        return s

    def range_only(self) -> tuple[str | None, str | None, float] | None:
        """(since, until, the boost's factor) when a range the query names is all that
        ``adjust`` can move (no line meta, no recency): the compiled keyword hits boost it
        then (fusion.dating_of), the same doubles; else None."""
        if self.meta or (self.half_life_days > 0 and self.today is not None):
            return None
        if not (self.since or self.until):
            return None
        return self.since, self.until, 1.0 + RANGE_BOOST

    def adjuster(self) -> Callable[[float, Spanned], float] | None:
        """What fusion calls on each score, or None when nothing can move one."""
        return self.adjust if self.active else None


def in_range(day: str, since: str | None, until: str | None) -> bool:
    return (since is None or day >= since) and (until is None or day <= until)


def recency_loss(day: str, today: dt.date, half_life_days: float) -> float:
    """The share a note of ``day`` loses: 0 today, half of (1 - floor) a half-life ago."""
    try:
        age = (today - dt.date.fromisoformat(day)).days
    except ValueError:
        return 0.0
    if age <= 0:
        return 0.0
    return (1.0 - RECENCY_FLOOR) * (1.0 - math.pow(0.5, age / half_life_days))


NO_PROJECTS: frozenset[str] = frozenset()  # a request naming none (most)


def for_request(
    req: SearchRequest, half_life_days: float, meta: LineMetaMap | None
) -> tuple[Signals, tuple[str | None, str | None] | None]:
    """The signals of ``req``, and the time its query names: read only when the request
    gives a ``today`` (what "yesterday" counts from), and never when it gives since/until
    itself (explicit dates win)."""
    today = dt.date.fromisoformat(req.today) if req.today else None
    dates = None
    if today is not None and not (req.since or req.until):
        dates = understood(req.query, today)
    # A full calendar date ("on 2024-02-07") is fusion's own date signal already (that day's
    # chunks as candidates, DATE_WEIGHT): said in ``dates``, not boosted twice.
    boost = dates if dates is not None and not query_days(req.query) else None
    signals = Signals(
        meta,
        frozenset(map(normalize_project, req.projects)) if req.projects else NO_PROJECTS,
        half_life_days,
        today or dt.date.today(),
        *(boost or (None, None)),
    )
    return signals, dates
