"""A search's window similarities: each candidate chunk's best window (windows.py) and its
cosine with the query, for fusion's vector signal and the snippet of a semantic match.

The candidates' window vectors come from ``window_vectors`` (float16) or, in an index whose
windows all fit in WINDOW_BYTES_KEPT, from KeptWindows: one float32 array per index
generation that the windows of each chunk a search asked for are appended to, so that the
next searches gather theirs with one ``take`` (they were ~50 small arrays concatenated per
search, and the Python around them: a third of a small hybrid search).

The similarities are one matrix-vector product over the candidates' windows, chunk by chunk
in the candidates' order, exactly as laid out before: BLAS computes a row's dot product
differently by where the row falls (a full block of rows or the remainder), so the same
layout is what keeps every score the same double.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import apsw

from memoryd.embeddings.base import Vectors
from memoryd.index.scratch import Scratch
from memoryd.index.vectors.mirror import VectorWidthError
from memoryd.index.vectors.windows import WINDOW_SLOTS
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why

    import numpy.typing as npt
else:
    from memoryd.named_tuple import NamedTuple

try:  # _compiled_windows.c: the gather and the best windows; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - a build without a compiler
    compiled = None  # type: ignore[assignment]

# float32 window vectors: 1.5 KB a window at 384 dims, ~5 windows a chunk (a workspace of
# up to ~450 chunks: all of them)
WINDOW_BYTES_KEPT = 4 << 20
WINDOWS_PER_CHUNK = 6  # above the usual ~4.7 (400-token chunks, 128-token windows)
ARENA_BYTES_MAX = 2 * WINDOW_BYTES_KEPT  # fits() estimates; past this nothing more is kept


class Windows(NamedTuple):
    """Window vectors: their ids (``window_vectors``), chunk by chunk, and the vectors as
    float32 (stored as float16)."""

    ids: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]


class WindowSims(NamedTuple):
    """The chunks asked for that have windows, in the order asked, with their best window
    (its number within the chunk) and that window's similarity with the query."""

    chunks: list[int]
    best: list[int]
    sims: list[float]


class _Arena(NamedTuple):
    ids: npt.NDArray[np.int64]  # (capacity,) window ids
    vectors: npt.NDArray[np.float32]  # (capacity, dims)


_Span = tuple[int, int]  # a chunk's windows: (first row in the arena, how many); (0, 0): none


class KeptWindows:
    """The window vectors of the chunks searches asked for, valid for one generation of the
    index (rows.py's rule: the generation is read before anything is; a search of an older
    one neither uses nor keeps anything), in one array whose rows are only ever appended:
    a search holding the array reads rows that no later append touches, and growing it
    makes a new one. Thread-safe."""

    def __init__(self, max_bytes: int = WINDOW_BYTES_KEPT) -> None:
        self.capacity = max_bytes
        self._lock = threading.Lock()
        self._generation = -1
        self._arena: _Arena | None = None
        self._used = 0
        self._spans: dict[int, _Span] = {}
        self._last_rows = 0  # the last generation's array: the next one starts that large

    def fits(self, chunks: int, dims: int) -> bool:
        """Whether an index of ``chunks`` chunks is small enough to keep all its windows (in
        a larger one the next searches' candidates are mostly others)."""
        return chunks * WINDOWS_PER_CHUNK * dims * 4 <= self.capacity

    def find(self, ids: Sequence[int], generation: int) -> tuple[_Arena | None, list[_Span | None]]:
        """The array and each chunk's span in it; None for a chunk not kept."""
        with self._lock:
            if generation != self._generation:
                if generation < self._generation:
                    return None, [None] * len(ids)  # started before the last change
                if self._arena is not None:
                    self._last_rows = len(self._arena.ids)
                self._arena, self._used, self._spans = None, 0, {}
                self._generation = generation
            spans = self._spans
            return self._arena, [spans.get(i) for i in ids]

    def add(
        self, asked: Sequence[int], read: Windows | None, generation: int
    ) -> tuple[_Arena | None, dict[int, _Span]] | None:
        """Keep ``read``, the windows of the chunks ``asked`` (chunk by chunk, as
        read_windows gives them; a chunk asked for and not there has none). The array now
        and every asked chunk's span; None when the index moved on, or past ARENA_BYTES_MAX
        (then nothing is kept)."""
        with self._lock:
            if generation != self._generation:
                return None
            spans = {i: (0, 0) for i in asked}
            if read is None or not len(read.ids):
                self._spans.update(spans)
                return self._arena, spans
            arena = self._room(len(read.ids), read.vectors.shape[1])
            if arena is None:
                return None
            a = self._used
            b = a + len(read.ids)
            arena.ids[a:b] = read.ids
            arena.vectors[a:b] = read.vectors
            owner = read.ids // WINDOW_SLOTS
            cuts = np.flatnonzero(owner[1:] != owner[:-1]) + 1
            firsts = [0, *cuts.tolist()]
            for s, e in zip(firsts, [*firsts[1:], b - a], strict=True):
                spans[int(owner[s])] = (a + s, e - s)
            self._used = b
            self._spans.update(spans)
            return arena, spans

    def _room(self, rows: int, dims: int) -> _Arena | None:
        """The array with room for ``rows`` more (a new, larger one when it is full)."""
        old = self._arena
        if old is not None and old.vectors.shape[1] != dims:
            return None
        cap = 0 if old is None else len(old.ids)
        if self._used + rows <= cap:
            return old
        # Each new array is an mmap and its predecessor's munmap (~0.15 ms at 400 KB here):
        # after the first generation the array starts as large as the last one grew.
        cap = max(2 * cap, self._used + rows, 256, self._last_rows)
        if cap * dims * 4 > ARENA_BYTES_MAX:
            cap = self._used + rows
            if cap * dims * 4 > ARENA_BYTES_MAX:
                return None
        new = _Arena(np.empty(cap, np.int64), np.empty((cap, dims), np.float32))
        if old is not None:
            new.ids[: self._used] = old.ids[: self._used]
            new.vectors[: self._used] = old.vectors[: self._used]
        self._arena = new
        return new

    def clear(self) -> None:
        with self._lock:
            self._arena, self._used, self._spans = None, 0, {}


def window_sims(
    conn: apsw.Connection,
    ids: Sequence[int],
    q: Vectors,
    kept: KeptWindows | None,
    generation: int,
    scratch: Scratch,
) -> WindowSims:
    """The best window of each chunk of ``ids`` that has windows, and its similarity with
    ``q``: the windows ``kept`` holds for ``generation``, the others read in one statement
    (and kept)."""
    if kept is not None:
        arena, spans = kept.find(ids, generation)
        missing = [i for i, s in zip(ids, spans, strict=True) if s is None]
        added = kept.add(missing, read_windows(conn, missing), generation) if missing else None
        if added is not None:
            arena, more = added
            spans = [s if s is not None else more[i] for i, s in zip(ids, spans, strict=True)]
        if not missing or added is not None:
            return _kept_sims(ids, spans, arena, q, scratch)
    # No kept windows, or the index moved on while they were read: read them all, keep none.
    read = read_windows(conn, ids)
    return WindowSims([], [], []) if read is None else _read_sims(read, q)


def _kept_sims(
    ids: Sequence[int],
    spans: Sequence[_Span | None],
    arena: _Arena | None,
    q: Vectors,
    scratch: Scratch,
) -> WindowSims:
    chunks = [i for i, span in zip(ids, spans, strict=True) if span is not None and span[1]]
    have = [span for span in spans if span is not None and span[1]]
    if arena is None or not have:
        return WindowSims([], [], [])
    dims = arena.vectors.shape[1]
    if dims != q.shape[0]:
        raise VectorWidthError(f"query has {q.shape[0]} dims, the index {dims}")
    if compiled is not None:  # the same rows, the same choices (_compiled_windows.c)
        total = sum(n for _, n in have)
        m = scratch.empty("windows", (total, dims), np.float32)
        compiled.take_spans(arena.vectors, have, m)
        best, sims = compiled.span_best(m @ q, have, arena.ids, WINDOW_SLOTS)
        return WindowSims(chunks, best, sims)
    return py_kept_sims(chunks, have, arena, q, scratch)


def py_kept_sims(
    chunks: list[int], have: list[_Span], arena: _Arena, q: Vectors, scratch: Scratch
) -> WindowSims:
    """_kept_sims in numpy (the compiled part gathers the spans and picks their best)."""
    dims = arena.vectors.shape[1]
    n = np.array([c for _, c in have], np.intp)
    offsets = np.cumsum(n)
    total = int(offsets[-1])
    offsets -= n  # each chunk's first row among the gathered ones
    rows = np.repeat(np.array([s for s, _ in have], np.intp) - offsets, n)
    rows += np.arange(total)
    m = scratch.empty("windows", (total, dims), np.float32)
    np.take(arena.vectors, rows, axis=0, out=m, mode="clip")
    return _best(chunks, arena.ids[rows], m, q, offsets, n)


def _read_sims(found: Windows, q: Vectors) -> WindowSims:
    """window_sims of windows read from the index (chunk by chunk)."""
    if found.vectors.shape[1] != q.shape[0]:
        raise VectorWidthError(f"query has {q.shape[0]} dims, the index {found.vectors.shape[1]}")
    owner = found.ids // WINDOW_SLOTS
    offsets = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    n = np.diff(offsets, append=len(owner))
    return _best(owner[offsets].tolist(), found.ids, found.vectors, q, offsets, n)


def _best(
    chunks: list[int],
    wids: npt.NDArray[np.int64],
    m: npt.NDArray[np.float32],
    q: Vectors,
    offsets: npt.NDArray[np.intp],
    n: npt.NDArray[np.intp],
) -> WindowSims:
    """Each chunk's best window: ``m``'s rows ``offsets[j]`` to ``offsets[j] + n[j]`` are
    chunk ``chunks[j]``'s windows ``wids``; the first of its highest similarities wins."""
    sims: npt.NDArray[np.float32] = m @ q
    best = np.maximum.reduceat(sims, offsets)
    if np.isnan(best).any():  # no highest: a stable sort puts NaN last, as it always did
        first = np.lexsort((-sims, np.repeat(np.arange(len(n)), n)))[offsets]
    else:
        at = np.flatnonzero(sims == np.repeat(best, n))
        first = at[np.searchsorted(at, offsets)]
    return WindowSims(chunks, (wids[first] % WINDOW_SLOTS).tolist(), sims[first].tolist())


def read_windows(conn: apsw.Connection, ids: Sequence[int]) -> Windows | None:
    """The window vectors of chunks ``ids`` (those that have any), chunk by chunk in that
    order, windows ascending, in one statement (a rowid range per chunk); None when none
    has any."""
    rows = conn.execute(
        "SELECT w.id, w.embedding FROM json_each(?) AS j CROSS JOIN window_vectors AS w "
        f"ON w.id BETWEEN j.value * {WINDOW_SLOTS} AND j.value * {WINDOW_SLOTS} + "
        f"{WINDOW_SLOTS - 1}",
        (json.dumps(list(ids)),),
    ).fetchall()
    if not rows:
        return None
    blob = b"".join(cast(bytes, r[1]) for r in rows)
    vectors = np.frombuffer(blob, dtype=np.float16).reshape(len(rows), -1)
    wids = np.fromiter((cast(int, r[0]) for r in rows), dtype=np.int64, count=len(rows))
    return Windows(wids, vectors.astype(np.float32))
