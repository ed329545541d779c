"""A three-way comparison of line lists: which regions each side kept, changed, or both.

The classic diff3: the lines both sides keep from the base (the intersections of their
matches with the base) split the files into stable regions and the regions between them,
where one side changed the base, or both did alike, or both did differently (a conflict).
What to do with a conflict is the caller's (merge_daily, merge_curated): git's textual
merge would leave markers in a memory file, which memoryd never does.

Written here (on difflib) rather than taken from a library: ``merge3``, the one kept Python
implementation, is GPL-2.0 (memoryd is Apache-2.0), and ``git merge-file`` answers with
marker text that would have to be parsed back into regions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

__all__ = ["Region", "regions"]


@dataclass(frozen=True)
class Region:
    """``kind``: "same" (both sides hold ``base``'s lines, or made the same change: ``a``),
    "a" (only ours changed: ``a`` stands), "b" (only theirs: ``b``), "conflict"."""

    kind: str
    base: Sequence[str]
    a: Sequence[str]
    b: Sequence[str]


def _matches(base: Sequence[str], other: Sequence[str]) -> list[tuple[int, int, int]]:
    sm = SequenceMatcher(None, base, other, autojunk=False)
    return [(m.a, m.b, m.size) for m in sm.get_matching_blocks()]


def _sync_points(
    base: Sequence[str], a: Sequence[str], b: Sequence[str]
) -> list[tuple[int, int, int, int]]:
    """Runs of base lines matched in both sides: (base start, a start, b start, length)."""
    am, bm = _matches(base, a), _matches(base, b)
    ia = ib = 0
    out: list[tuple[int, int, int, int]] = []
    while ia < len(am) and ib < len(bm):
        abase, amatch, alen = am[ia]
        bbase, bmatch, blen = bm[ib]
        lo, hi = max(abase, bbase), min(abase + alen, bbase + blen)
        if lo < hi:
            out.append((lo, amatch + lo - abase, bmatch + lo - bbase, hi - lo))
        if abase + alen < bbase + blen:
            ia += 1
        else:
            ib += 1
    out.append((len(base), len(a), len(b), 0))
    return out


def regions(base: Sequence[str], a: Sequence[str], b: Sequence[str]) -> Iterator[Region]:
    """The regions of a three-way comparison, in file order (stable ones are "same")."""
    # Appends on both sides (the common case for notes) share the whole base as a prefix:
    # no matching needed.
    n = len(base)
    if list(a[:n]) == list(base) and list(b[:n]) == list(base):
        if n:
            yield Region("same", base, base, base)
        yield from _between(base[n:], a[n:], b[n:])
        return
    i = j = k = 0
    for bi, ai, bk, size in _sync_points(base, a, b):
        yield from _between(base[i:bi], a[j:ai], b[k:bk])
        if size:
            stable = base[bi : bi + size]
            yield Region("same", stable, stable, stable)
        i, j, k = bi + size, ai + size, bk + size


def _between(base: Sequence[str], a: Sequence[str], b: Sequence[str]) -> Iterator[Region]:
    if not base and not a and not b:
        return
    if list(a) == list(b):
        yield Region("same", base, a, b)
    elif list(a) == list(base):
        yield Region("b", base, a, b)
    elif list(b) == list(base):
        yield Region("a", base, a, b)
    else:
        yield Region("conflict", base, a, b)
