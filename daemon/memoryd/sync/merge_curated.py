"""MEMORY.md, USER.md and other notes merged three-way: keys decide, else a visible note.

Changes on one side only are taken as they are; the same change on both sides once. Where
both sides changed the same lines:
- lines both sides added (nothing of the base between them) are all kept, each once;
- supersession keys (``<!-- key: K -->``) decide between the two versions of a keyed line:
  a version left as the base had it yields to the changed one, else the newer stands (the
  ledger's ``at`` of the line, else the time its side was committed). A key on a line the
  ledger records as untrusted or system decides nothing (docs/provenance.md);
- what keys do not settle is written twice, ours then theirs, under a conflict note
  (conflict_note.py) that ``memctl sync status`` lists. Nothing is lost, and no git markers.
"""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.files.annotations import parse_line
from memoryd.files.lines import line_key
from memoryd.sync.conflict_note import note_line
from memoryd.sync.diff3 import Region, regions
from memoryd.sync.merge_daily import Sides

__all__ = ["merge_curated"]


def merge_curated(
    base: Sequence[str], ours: Sequence[str], theirs: Sequence[str], sides: Sides
) -> tuple[list[str], int]:
    """The merged lines and how many conflict notes were written."""
    out: list[str] = []
    notes = 0
    for r in regions(base, ours, theirs):
        if r.kind in ("same", "a"):
            out += r.a
        elif r.kind == "b":
            out += r.b
        else:
            lines, noted = _resolve(r, sides)
            out += lines
            notes += noted
    return out, notes


def _key_of(line: str, sides: Sides) -> str | None:
    _, ann = parse_line(line)
    if ann is None or ann.key is None:
        return None
    k = line_key(line)
    return ann.key if k and sides.ledger.trusted(sides.path, k) else None


def _apply_keys(r: Region, sides: Sides) -> tuple[list[str], list[str]]:
    """Both sides' lines with the losing version of each key both sides hold taken out."""
    a, b = list(r.a), list(r.b)
    base = set(r.base)
    a_keyed = {k: line for line in a if (k := _key_of(line, sides))}
    b_keyed = {k: line for line in b if (k := _key_of(line, sides))}
    for key in a_keyed.keys() & b_keyed.keys():
        la, lb = a_keyed[key], b_keyed[key]
        if la == lb:
            continue
        if la in base:  # ours left it as it was: theirs changed it
            loser_a = True
        elif lb in base:
            loser_a = False
        else:
            ta, tb = sides.line_time(la, True), sides.line_time(lb, False)
            if ta == tb:
                continue  # no way to tell: both stay (a conflict note if nothing else)
            loser_a = ta < tb
        if loser_a:
            a = [x for x in a if x != la]
        else:
            b = [x for x in b if x != lb]
    return a, b


def _resolve(r: Region, sides: Sides) -> tuple[list[str], int]:
    a, b = _apply_keys(r, sides)
    base = list(r.base)
    if a == b or b == base:
        return a, 0
    if a == base:
        return b, 0
    a_set = set(a)
    extra = [x for x in b if x not in a_set or not x.strip()]
    if not base or set(b) <= a_set:  # only additions (or theirs is within ours): all of both
        return _join(a, extra), 0
    if a_set <= set(b):
        return b, 0
    note = note_line(sides.day, sides.ours_host, sides.theirs_host)
    return [note, *_join(a, extra)], 1


def _join(a: list[str], extra: list[str]) -> list[str]:
    """Ours, then theirs' lines ours lacks, without doubled or leading blank lines."""
    out = list(a)
    for line in extra:
        if not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line)
    while len(out) > len(a) and not out[-1].strip():
        out.pop()
    return out
