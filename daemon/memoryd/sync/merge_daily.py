"""Daily notes (and opted-in transcripts) merged as a line union, in time order, once.

Notes are append-mostly. Where both hosts wrote at the same place (both appended to the
day, the usual case) both sides' new blocks are kept, interleaved by when they were written
(the ledger's ``at`` of their lines; a hand-written block, with no record, goes with the
block before it on its own side), and a line both sides added is written once. A line one
side removed since the base (a forget, an edit) stays removed. A block that repeats the
heading the note is already under loses the repeated heading, as an append would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.files.lines import line_key
from memoryd.sync.diff3 import Region, regions
from memoryd.sync.merge_ledger import LedgerView

__all__ = ["Sides", "merge_union"]


@dataclass(frozen=True)
class Sides:
    """What a merge of one file knows besides the three versions."""

    path: str
    ledger: LedgerView
    ours_host: str = "ours"
    theirs_host: str = "theirs"
    ours_time: float = 0.0  # when each side's version was committed
    theirs_time: float = 0.0
    day: str = ""  # today, for a conflict note

    def line_time(self, line: str, ours: bool) -> float:
        k = line_key(line)
        at = self.ledger.time_of(self.path, k) if k else None
        if at is not None:
            return at
        return self.ours_time if ours else self.theirs_time


def merge_union(
    base: Sequence[str], ours: Sequence[str], theirs: Sequence[str], sides: Sides
) -> list[str]:
    out: list[str] = []
    for r in regions(base, ours, theirs):
        if r.kind in ("same", "a"):
            out += r.a
        elif r.kind == "b":
            out += r.b
        else:
            out += _union(r, sides, out)
    return out


def _is_heading(line: str) -> bool:
    return line.startswith("#")


def _units(lines: Sequence[str]) -> list[list[str]]:
    """Blocks split at blank lines; a heading-only block stays with the block after it."""
    units: list[list[str]] = []
    cur: list[str] = []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur and not all(_is_heading(x) for x in cur):
            units.append(cur)
            cur = []
        elif cur:
            cur.append(line)  # the blank under a heading
    if cur:
        units.append(cur)
    return units


def _unit_time(unit: list[str], sides: Sides, before: float) -> float:
    times = [
        t
        for line in unit
        if (k := line_key(line)) and (t := sides.ledger.time_of(sides.path, k)) is not None
    ]
    return max(times) if times else before


def _timed(units: list[list[str]], sides: Sides) -> list[tuple[float, list[str]]]:
    out: list[tuple[float, list[str]]] = []
    before = float("-inf")
    for unit in units:
        before = _unit_time(unit, sides, before)
        out.append((before, unit))
    return out


def _union(r: Region, sides: Sides, before: list[str]) -> list[str]:
    base = set(r.base)
    b_set = set(r.b)
    # A base line one side dropped stays dropped; one both kept is written from ours.
    a_lines = [x for x in r.a if x not in base or x in b_set]
    b_lines = [x for x in r.b if x not in base]
    a_keys = {k for x in a_lines if (k := line_key(x))}
    b_lines = [x for x in b_lines if not ((k := line_key(x)) and k in a_keys)]
    a_units = _timed(_units(a_lines), sides)
    b_units = _timed(_units(b_lines), sides)
    merged: list[list[str]] = []
    i = j = 0
    while i < len(a_units) or j < len(b_units):
        if j >= len(b_units) or (i < len(a_units) and a_units[i][0] <= b_units[j][0]):
            merged.append(a_units[i][1])
            i += 1
        else:
            merged.append(b_units[j][1])
            j += 1
    ends_blank = any(side and not side[-1].strip() for side in (r.a, r.b))
    return _assemble(merged, before, ends_blank)


def _last_heading(lines: Sequence[str]) -> str | None:
    for line in reversed(lines):
        if line.startswith("## "):
            return line.strip()
        if line.startswith("# "):
            return None
    return None


def _assemble(units: list[list[str]], before: list[str], blank_after: bool) -> list[str]:
    out: list[str] = []
    for unit in units:
        heading = _last_heading([*before, *out])
        if unit and unit[0].startswith("## ") and unit[0].strip() == heading:
            unit = unit[1:]
            while unit and not unit[0].strip():
                unit = unit[1:]
        if not any(x.strip() for x in unit):
            continue
        prev = out[-1] if out else (before[-1] if before else None)
        if prev is not None and prev.strip():
            out.append("")
        out += unit
    if blank_after and out:
        out.append("")
    return out
