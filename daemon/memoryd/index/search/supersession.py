"""Supersession: of the memory lines sharing ``<!-- key: K -->``, the newest stands.

Newest: by the note's date (a daily file's day; MEMORY.md, USER.md and other notes: the day of
their last change), then by position (the later line). The older lines are superseded:
search and recall leave them out of their snippets (a hit left with nothing else goes)
unless ``include_superseded``; a hit showing a standing line says what it superseded
(``supersedes: ["path#Lnn"]``). A key on an untrusted or system line is ignored: a web page
must not supersede the owner's fact (docs/provenance.md).

Where the keyed lines come from: the index's line meta (``index/line_meta.py``, the
in-memory copy of table ``line_meta``: its ``key`` column, untrusted and system lines
already without one). Worked out again only when that meta changes; a search then costs a
dict lookup and an int compare, and a workspace with no annotated line one truth test.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.files.layout import day_of
from memoryd.files.lines import line_key
from memoryd.records import Fields

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as fields_record
else:
    from memoryd.records import fields_record


if TYPE_CHECKING:
    from memoryd.index.line_meta import LineMetaMap

__all__ = ["Superseded", "Supersession"]


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Superseded(Fields):
    """Per (path, line): who stands over a superseded line, what a standing line superseded."""

    by: dict[tuple[str, int], str] = field(default_factory=dict)
    over: dict[tuple[str, int], list[str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.by


def _day(root: Path, rel: str, day: str) -> str:
    if day:
        return day
    try:
        stamp = os.stat(root / rel).st_mtime
    except OSError:
        return ""
    return dt.date.fromtimestamp(stamp).isoformat()


def compute(root: Path, meta: LineMetaMap) -> Superseded:
    """The workspace's supersessions from its index's line meta (the keyed lines; untrusted
    and system lines carry no key there)."""
    out = Superseded()
    groups: dict[str, list[tuple[str, int, str]]] = {}
    days: dict[str, str] = {}
    for rel, number, key in meta.keyed():
        if rel not in days:
            days[rel] = _day(root, rel, day_of(rel))
        groups.setdefault(key, []).append((days[rel], number, rel))
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort()
        _, top_line, top_path = members[-1]
        standing = f"{top_path}#L{top_line}"
        out.over[(top_path, top_line)] = [f"{p}#L{n}" for _, n, p in members[:-1]]
        for _, n, p in members[:-1]:
            out.by[(p, n)] = standing
    return out


class Supersession:
    """One per daemon: each workspace's supersessions, as of its line meta's generation
    (which moves only when a line's annotations or provenance change)."""

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[int, Superseded]] = {}

    def current(self, root: Path, meta: LineMetaMap) -> Superseded | None:
        """The workspace's, from its index's line meta (None: no keyed line at all, the
        common case: one truth test)."""
        if not meta:
            return None
        got = self._cache.get(root)
        if got is None or got[0] != meta.generation:
            generation = meta.generation
            got = (generation, compute(root, meta))
            self._cache[root] = got
        return got[1]


def apply(answer: dict[str, Any], sup: Superseded, include: bool) -> dict[str, Any]:
    """The search answer with superseded lines left out of its hits (or marked, with
    ``include``), and standing lines' hits saying what they superseded (in place)."""
    if sup.empty:
        return answer
    kept = []
    for hit in answer.get("results", []):
        if hit.get("source", "memory") != "memory":
            kept.append(hit)
            continue
        path = str(hit["path"])
        first = int(hit.get("snippet_start_line") or hit["start_line"])
        lines = str(hit.get("snippet") or "").split("\n")
        numbers = range(first, first + len(lines))
        over = [o for n in numbers for o in sup.over.get((path, n), [])]
        if over:
            hit["supersedes"] = over
        gone = [n for n in numbers if (path, n) in sup.by]
        if gone and include:
            hit["superseded"] = True
            hit["superseded_by"] = sorted({sup.by[(path, n)] for n in gone})
        elif gone:
            left = [text for n, text in zip(numbers, lines, strict=True) if (path, n) not in sup.by]
            if not any(line_key(text) for text in left):
                continue  # nothing but superseded lines (and headings): the hit goes
            hit["snippet"] = "\n".join(left)
        kept.append(hit)
    answer["results"] = kept
    return answer
