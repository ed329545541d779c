"""FTS5's bm25() over postings in numpy: every posting scored, or MaxScore's short cut.

The arithmetic is fts5_aux.c's, in its order (k1 1.2, b 0.75, the IDF floored at 1e-6, one
term after another in query order), so the scores are FTS5's bit for bit whichever way a
top is found. keyword/mirror.py holds the postings and picks the way; the fleet's remote
search uses the same constants in SQL. Below PRUNE_FROM chunks every posting is scored, by
index/_compiled_bm25.c when it is built (``scored_top``; the same doubles and the same top).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from memoryd.index.scratch import SCRATCH, Scratch
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why

    import numpy.typing as npt
else:
    from memoryd.named_tuple import NamedTuple

try:  # _compiled_bm25.c: scored_top in a tenth of the instructions; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - installs without a compiler
    compiled = None  # type: ignore[assignment]

K1 = 1.2  # fts5_aux.c's constants
B = 0.75
MIN_IDF = 1e-6
# A bound that rounding could make a score exceed by a few ulps: margin enough for that.
_BOUND_SLACK = 1e-9


def scored_all(
    lists: list[Term],
    norm: npt.NDArray[np.float64],
    used: int,
    accepted: Callable[[npt.NDArray[np.intp]], npt.NDArray[np.intp]],
    sc: Scratch,
    accepted_below: Callable[[int], npt.NDArray[np.bool_]] | None = None,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """Every posting scored: the accepted chunks that hold any term, and their scores.
    ``accepted_below(n)``: the same verdict for every slot below ``n`` at once, cheaper
    than gathering each hit's columns when a common term puts most slots in the hits."""
    full = sc.zeros("full", used, np.float64)
    for t in lists:
        if t.dense is not None:  # slots without the stem add (0 * ...) / (0 + norm) = 0
            m = min(len(t.dense), used)
            # idf * ((f * (k1 + 1)) / (f + norm)), f = freq2 / 2, into reused arrays
            f = np.multiply(t.dense[:m], 0.5, out=sc.empty("f", m, np.float64))
            num = np.multiply(f, K1 + 1.0, out=sc.empty("num", m, np.float64))
            den = np.add(f, norm[:m], out=sc.empty("den", m, np.float64))
            np.divide(num, den, out=num)
            np.multiply(num, t.idf, out=num)
            np.add(full[:m], num, out=full[:m])
            continue
        f = t.freq2.astype(np.float64) * 0.5
        # fts5_aux.c: score += aIDF[i] * ((aFreq[i] * (k1 + 1.0)) /
        #                                 (aFreq[i] + k1 * (1 - b + b * D / avgdl)))
        # A stem's slots are distinct: add.at adds each once, as += would (but faster).
        np.add.at(full, t.slots, t.idf * ((f * (K1 + 1.0)) / (f + norm[t.slots])))
    # every term adds > 0 (IDF is floored): the chunks that hold one have a score > 0
    if accepted_below is not None and any(t.dense is not None for t in lists):
        hit = np.flatnonzero(np.logical_and(full > 0.0, accepted_below(used)))
    else:
        hit = accepted(np.flatnonzero(full > 0.0))
    return hit, full[hit]


def ranked(
    hit: npt.NDArray[np.intp],
    score: npt.NDArray[np.float64],
    chunk_id: npt.NDArray[np.int64],
    limit: int,
) -> list[tuple[int, float]]:
    """The top ``limit`` (chunk id, score) of the slots ``hit``: score descending, ties by id."""
    if len(hit) > limit:  # all that tie with the last place, then ties go by id
        last = kth_largest(score, limit)
        tied = score >= last
        hit, score = hit[tied], score[tied]
    ids = chunk_id[hit]
    order = np.lexsort((ids, -score))[:limit]
    return list(zip(ids[order].tolist(), score[order].tolist(), strict=True))


def term_of(taken: Term | tuple[Any, ...]) -> Term:
    """A Term of a term taken with its postings' count (slots, freq2, dense, top_f2, idf,
    count: KeywordMirror.top): its first ``count`` postings; a Term as it is."""
    if len(taken) == 5:
        return cast(Term, taken)
    slots, freq2, dense, top_f2, weight, count = taken
    return new_term(Term, (slots[:count], freq2[:count], dense, top_f2, weight))


def scored_top(
    lists: Sequence[Term | tuple[Any, ...]],
    norm: npt.NDArray[np.float64],
    keep: npt.NDArray[np.bool_],
    chunk_id: npt.NDArray[np.int64],
    limit: int,
) -> list[tuple[int, float]]:
    """Every posting of the slots below ``len(keep)`` scored, and the top ``limit`` of the
    chunks ``keep`` keeps (``ranked``). Compiled when it can be; ``py_scored_top`` otherwise."""
    if compiled is not None:  # reads a term's count itself
        return compiled.bm25_top(lists, norm, keep, chunk_id, limit)
    return py_scored_top([term_of(t) for t in lists], norm, keep, chunk_id, limit)


def py_scored_top(
    lists: list[Term],
    norm: npt.NDArray[np.float64],
    keep: npt.NDArray[np.bool_],
    chunk_id: npt.NDArray[np.int64],
    limit: int,
) -> list[tuple[int, float]]:
    """scored_top in Python (_compiled_bm25.c computes the same doubles, in the same order)."""
    if limit <= 0:
        return []
    used = len(keep)
    with SCRATCH.borrow() as sc:
        hit, score = scored_all(lists, norm, used, lambda h: h[keep[h]], sc, lambda n: keep[:n])
    return ranked(hit, score, chunk_id, limit)


_BLOCK = 256  # kth_largest's block of values


def kth_largest(values: npt.NDArray[np.float64], k: int) -> float:
    """The k-th largest of ``values`` (1 <= k <= len), as np.partition finds it, but from
    the few values at or above a bound: k blocks' maxima are k values at or above the k-th
    largest block maximum, so the k-th largest value is too. (np.partition of 100k scores
    took ~0.7 ms, the largest single cost of a search that scores every posting.)"""
    n_blocks = len(values) // _BLOCK
    if n_blocks < 4 * k:
        return float(-np.partition(-values, k - 1)[k - 1])
    maxima = values[: n_blocks * _BLOCK].reshape(n_blocks, _BLOCK).max(axis=1)
    bound = -np.partition(-maxima, k - 1)[k - 1]
    near = values[values >= bound]
    return float(-np.partition(-near, k - 1)[k - 1])


class Term(NamedTuple):
    """One query term's postings as ``top`` saw them (a snapshot: writers append past it).
    A tuple: the compiled scored_top reads its items."""

    slots: npt.NDArray[np.uint32]
    freq2: npt.NDArray[np.uint16]
    dense: npt.NDArray[np.uint8] | None
    top_f2: int
    idf: float

    def freq2_of(self, hit: npt.NDArray[np.intp], used: int, sc: Scratch) -> npt.NDArray[np.uint16]:
        """freq2 of each slot of ``hit`` (ascending, below ``used``), 0 where the stem is
        not: looked up by slot in the dense array, or in the postings scattered into one
        (reused arrays, scratch.py)."""
        if self.dense is not None and len(self.dense) >= used:
            byte = sc.empty("freq2_of_dense", len(hit), np.uint8)
            return np.take(self.dense, hit, out=byte, mode="clip")
        out = sc.empty("freq2_of", len(hit), np.uint16)
        by_slot = sc.zeros("by_slot", used, np.uint16)
        if self.dense is not None:
            m = min(len(self.dense), used)
            by_slot[:m] = self.dense[:m]
        else:
            by_slot[self.slots] = self.freq2
        return np.take(by_slot, hit, out=out, mode="clip")


# tuple's __new__ makes a Term without the Python __new__ a NamedTuple has (a term each)
new_term: Callable[[type[Term], tuple[Any, ...]], Term] = tuple.__new__


def idf(rows: int, df: int) -> float:
    """FTS5's IDF with its floor. ``df`` is held to ``rows``: counted apart from them (the
    fleet's postings while a host publishes) it can exceed them, and the log would fail."""
    df = min(df, rows)
    value = math.log((rows - df + 0.5) / (df + 0.5))
    return MIN_IDF if value <= 0.0 else value


def pruned(
    lists: list[Term],
    norm: npt.NDArray[np.float64],
    norm_low: float,
    used: int,
    limit: int,
    accepted: Callable[[npt.NDArray[np.intp]], npt.NDArray[np.intp]],
    sc: Scratch,
) -> npt.NDArray[np.intp] | None:
    """Slots (ascending, accepted) among which the whole top ``limit`` lies, found from the
    postings of the query's rarer terms only; None when there is no such short cut.

    A term adds at most ``idf * f (k1 + 1) / (f + min norm)`` to a score (f its highest
    frequency). Terms are taken by that bound, highest first, summing what they add to the
    chunks they occur in: once the ``limit``-th best of those partial sums exceeds the
    bounds of all the terms not yet taken, no chunk outside could reach the top, nor any
    inside whose partial sum plus those bounds stays below it.
    """
    bound = [t.idf * ((t.top_f2 * 0.5 * (K1 + 1.0)) / (t.top_f2 * 0.5 + norm_low)) for t in lists]
    order = sorted(range(len(lists)), key=lambda i: -bound[i])
    rest = sum(bound)
    taken = 0.0  # the bounds of the terms taken
    partial = sc.zeros("partial", used, np.float64)
    for i in order:
        t = lists[i]
        if t.dense is not None:
            return None  # a common word's postings: as costly as scoring everything
        f = t.freq2.astype(np.float64) * 0.5
        np.add.at(partial, t.slots, t.idf * ((f * (K1 + 1.0)) / (f + norm[t.slots])))
        rest -= bound[i]
        taken += bound[i]
        # Subtracting each bound in turn can leave the sum of none a few ulps below 0.0: a
        # negative bound would drop the chunk tied with the last place.
        rest_high = max(rest, 0.0) * (1 + _BOUND_SLACK)
        if taken <= rest_high:
            continue  # no partial sum can exceed the rest yet: not worth looking
        hit = accepted(np.flatnonzero(partial > 0.0))
        if len(hit) >= limit and rest_high < (got := partial[hit]).max():
            kth = np.partition(got, len(got) - limit)[len(got) - limit] * (1 - _BOUND_SLACK)
            if rest_high < kth:
                # Nor can a chunk found so far whose words still to come cannot lift it.
                found: npt.NDArray[np.intp] = hit[got + rest_high >= kth]
                return found
    return None


def scores_of(
    lists: list[Term],
    norm: npt.NDArray[np.float64],
    hit: npt.NDArray[np.intp],
    used: int,
    sc: Scratch,
) -> npt.NDArray[np.float64]:
    """The scores of ``hit`` (ascending slots), term after term in query order: the same
    doubles as scoring every posting (a term a chunk lacks adds 0.0, which changes none).
    Computed in reused arrays, the same operations as score += idf * ((f * (k1 + 1)) /
    (f + norm)); the result is a new array."""
    n = len(hit)
    score = np.zeros(n, np.float64)
    nh = np.take(norm, hit, out=sc.empty("nh", n, np.float64), mode="clip")
    f = sc.empty("f", n, np.float64)
    num = sc.empty("num", n, np.float64)
    den = sc.empty("den", n, np.float64)
    for t in lists:
        np.multiply(t.freq2_of(hit, used, sc), 0.5, out=f)
        np.multiply(f, K1 + 1.0, out=num)
        np.add(f, nh, out=den)
        np.divide(num, den, out=num)
        np.multiply(num, t.idf, out=num)
        np.add(score, num, out=score)
    return score
