"""One synced file merged three-way by the rule of its kind (paths.kind_of).

A file one side deleted and the other changed is kept, changed: nothing is lost. A file
both sides created (two hosts that each had memory before they first synced) is merged
against what the two versions share, so only the lines that differ count as changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from memoryd.sync.merge_curated import merge_curated
from memoryd.sync.merge_daily import Sides, merge_union
from memoryd.sync.merge_ledger import merge_ledgers
from memoryd.sync.paths import DAILY, LEDGER, TRANSCRIPT
from memoryd.sync.text import as_bytes, as_text

__all__ = ["Merged", "merge_file"]


@dataclass(frozen=True)
class Merged:
    data: bytes | None  # None: the file is deleted
    notes: int = 0  # conflict notes written


def merge_file(
    kind: str, base: bytes | None, ours: bytes | None, theirs: bytes | None, sides: Sides
) -> Merged:
    if ours == theirs:
        return Merged(ours)
    if theirs == base:
        return Merged(ours)
    if ours == base:
        return Merged(theirs)
    if ours is None or theirs is None:  # deleted on one side, changed on the other
        return Merged(theirs if ours is None else ours)
    if kind == LEDGER:
        return Merged(merge_ledgers(base, ours, theirs))
    b, o, t = as_text(base), as_text(ours), as_text(theirs)
    end = o.newline_at_end or t.newline_at_end
    if kind in (DAILY, TRANSCRIPT):
        return Merged(as_bytes(merge_union(b.lines, o.lines, t.lines, sides), end))
    base_lines = b.lines if base is not None else _shared(o.lines, t.lines)
    lines, notes = merge_curated(base_lines, o.lines, t.lines, sides)
    return Merged(as_bytes(lines, end), notes)


def _shared(a: list[str], b: list[str]) -> list[str]:
    """The lines two unrelated versions share, in order: their merge base."""
    sm = SequenceMatcher(None, a, b, autojunk=False)
    return [x for m in sm.get_matching_blocks() for x in a[m.a : m.a + m.size]]
