"""An in-memory copy of the chunk vectors, scanned with numpy for the KNN of a search.

sqlite-vec stays the store: the mirror is loaded from ``chunks_vec`` and follows the
writer's committed changes. The reason it exists is speed: sqlite-vec's brute-force scan
costs ~400 ns a row (4-7 ms at 10k chunks, most of a hybrid search). When the vectors would
take more than ``max_bytes``, or before the mirror is loaded, ``knn`` answers None and the
caller asks sqlite-vec instead.

Up to QUANTISED_FROM live rows the scan is exact: every row's dot product (0.6 ms at 10k).
Above, reading 1.5 KB of float32 per row is the cost (~10 ms at 100k, memory-bound), so
each row also keeps its sign bits (1 bit a dimension: above or below the rows' mean; 48
bytes at 384 dims). A search first estimates every row's score from them, the query kept
at 3 bits a dimension (QUERY_BITS bit planes: popcounts of ANDs, ~2 ms at 100k; closer
than the Hamming distance between sign bits, which loses the query's magnitudes), each
estimate scaled by the row's own factor (below), then scores the best SHORTLIST rows
exactly and returns the best of those. It misses a true neighbour only when that is not
in the shortlist; bench/vector_recall.py measures how often (docs/benchmarks.md).

The factor is RaBitQ's (Gao and Long, SIGMOD 2024): with r = x - center and s its signs,
q.r is estimated as (q.s) x |r|^2 / |r|_1 (r's length over how well its signs align with
it). Without it every row's bits counted alike, and the estimates of a sparse vector's
query (a hashed bag of words: a few nonzero dimensions) tied in thousands of rows: a
shortlist of all that tied was 3-8 times as long, and one cut short found half as many of
the true neighbours (recall@24 .26 against .56 with the factor). On dense vectors the
factors are near one another and the ranking barely moves.

Products are einsum's, not BLAS's: OpenBLAS spreads a matrix-vector product over every
core, and on a busy machine waiting for the other threads made a 10k scan take 18 ms
instead of 0.6.

Readers never block on the writer: rows are only ever appended past the row count a
reader saw, deletions flip the row's id to -1, and growing or compacting builds new
arrays, so a reader's snapshot stays valid for its whole scan. How it follows commits:
staged.py.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import apsw

from memoryd import sqlite
from memoryd.embeddings.base import Vectors
from memoryd.index.row_codes import NO_DAY, SOURCE_CODES, day_number
from memoryd.index.scratch import SCRATCH, Scratch
from memoryd.index.staged import StagedMirror
from memoryd.records import Fields
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as fields_record
else:
    from memoryd.records import fields_record

if TYPE_CHECKING:
    import numpy.typing as npt

QUANTISED_FROM = 20_000  # live rows; fewer: the exact scan alone (as fast, nothing missed)
# Rows scored exactly after the bit scan: a share of the rows (in a denser set more rows
# crowd the true neighbours' estimates), at least 1024 and 32 x k.
SHORTLIST = 1024
SHORTLIST_PER_K = 32
SHORTLIST_SHARE = 40  # 1/40 of the live rows: 2,500 at 100k
ESTIMATE_BINS = 4096  # the shortlist's cut is made among this many steps of the estimates
QUERY_BITS = 3  # the query's precision in the bit scan (4: recall ~.001 higher, 1/3 slower)
LOAD_BATCH = 4096  # rows read from SQLite at a time by load


@functools.cache
def _half() -> npt.NDArray[np.float32]:
    """The bit scan's 0.5, made on first use (numpy is imported then: runtime/lazy_numpy.py)."""
    return np.full(1, 0.5, np.float32)


class VectorWidthError(ValueError):
    """The query vector is not as wide as the stored ones (the provider changed)."""


def dot(mat: npt.NDArray[np.float32], q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row's dot product with ``q``, on this thread (see the module's docstring)."""
    out: npt.NDArray[np.float32] = np.einsum("ij,j->i", mat, q)
    return out


def sign_bits(
    vecs: npt.NDArray[np.float32], center: npt.NDArray[np.float32]
) -> npt.NDArray[np.uint64]:
    """(words, rows): each row's bits (v - center > 0), 64 dimensions a word, word-major so
    that the scan reads each word of all rows as one contiguous array."""
    words = -(-vecs.shape[1] // 64)
    packed = np.packbits(vecs > center, axis=1)
    padded = np.zeros((len(vecs), words * 8), np.uint8)
    padded[:, : packed.shape[1]] = packed
    return np.ascontiguousarray(padded.view(np.uint64).T)


def default_shortlist(live: int, k: int) -> int:
    """How many rows knn scores exactly after the bit scan; 0: all (an exact scan)."""
    if live < QUANTISED_FROM:
        return 0
    return max(SHORTLIST, SHORTLIST_PER_K * k, live // SHORTLIST_SHARE)


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class _Rows(Fields):
    """The vector copy's rows: the matrix, their sign bits, norms, and the center."""

    mat: npt.NDArray[np.float32]  # (capacity, dims)
    bits: npt.NDArray[np.uint64]  # (words, capacity): sign_bits of each row
    ones: npt.NDArray[np.uint16]  # (capacity,): how many of a row's bits are set
    scale: npt.NDArray[np.float32]  # (capacity,): |r|^2 / |r|_1, r = row - center
    center: npt.NDArray[np.float32]  # (dims,): what the bits are taken around (set by
    # encode before readers can see the rows; fixed after)
    ids: npt.NDArray[np.int64]  # -1: deleted
    source: npt.NDArray[np.int8]
    day: npt.NDArray[np.int32]
    n: int = 0  # rows in use (live or deleted)
    dead: int = 0  # of those, deleted (their id -1)

    @classmethod
    def empty(
        cls, dims: int, capacity: int, center: npt.NDArray[np.float32] | None = None
    ) -> _Rows:
        return cls(
            np.zeros((capacity, dims), np.float32),
            np.zeros((-(-dims // 64), capacity), np.uint64),
            np.zeros(capacity, np.uint16),
            np.zeros(capacity, np.float32),
            np.zeros(dims, np.float32) if center is None else center,
            np.full(capacity, -1, np.int64),
            np.zeros(capacity, np.int8),
            np.zeros(capacity, np.int32),
        )

    @property
    def nbytes(self) -> int:
        return int(self.mat.nbytes + self.bits.nbytes + self.ones.nbytes + self.scale.nbytes)

    def encode(self) -> None:
        """The bits of rows [0, n), around the mean of the live ones (a sign bit says most
        when each dimension splits the rows about evenly)."""
        live = self.mat[: self.n][self.ids[: self.n] >= 0]
        if len(live):
            self.center = live.mean(axis=0, dtype=np.float64).astype(np.float32)
        for a in range(0, self.n, LOAD_BATCH):
            b = min(self.n, a + LOAD_BATCH)
            self.set_bits(a, b)

    def set_bits(self, a: int, b: int) -> None:
        bits = self.bits[:, a:b] = sign_bits(self.mat[a:b], self.center)
        self.ones[a:b] = np.bitwise_count(bits).sum(axis=0, dtype=np.uint16)
        r = self.mat[a:b] - self.center
        l1 = np.abs(r).sum(axis=1)
        self.scale[a:b] = np.einsum("ij,ij->i", r, r) / np.maximum(l1, np.float32(1e-30))


_Op = tuple[str, int, "Vectors | None", str, str]  # ("put" | "del" | "clear", id, vec, source, day)


class VectorMirror(StagedMirror[_Op]):
    def __init__(self, max_bytes: int, on_stale: Callable[[], None] = lambda: None) -> None:
        super().__init__(max_bytes, on_stale)
        self._rows: _Rows | None = None
        self._row_of: dict[int, int] = {}

    # -------------------------------------------------------------- writer side

    def load(self, conn: apsw.Connection, table: str | None) -> None:
        """(Re)read every vector of ``table`` (None: there is none yet). Writer thread."""
        self._begin_load()
        rows = None
        if table is not None and self.max_bytes > 0:
            rows = self._read(conn, table)
        with self._lock:
            if rows is not None:
                self._rows = rows
                self._row_of = {int(i): r for r, i in enumerate(rows.ids[: rows.n])}
            self._loaded = True

    def _read(self, conn: apsw.Connection, table: str) -> _Rows | None:
        """Every row of ``table``, a batch at a time; None when there is none, or no room
        (then ``_too_big``). Nobody reads the mirror meanwhile (it is not loaded)."""
        total = int(sqlite.scalar(conn, f"SELECT count(*) FROM {table}"))
        cursor = conn.execute(f"SELECT chunk_id, embedding, source, day FROM {table}")
        rows: _Rows | None = None
        while batch := list(itertools.islice(cursor, LOAD_BATCH)):
            ids, blobs, sources, days = zip(*batch, strict=True)
            mat = np.frombuffer(b"".join(blobs), np.float32).reshape(len(batch), -1)
            if rows is None:  # sized once: room for an eighth more
                rows = _Rows.empty(mat.shape[1], total + total // 8 + 64)
                if rows.nbytes > self.max_bytes:
                    with self._lock:
                        self._too_big = True
                    return None
            a, b = rows.n, rows.n + len(batch)
            rows.mat[a:b] = mat
            rows.ids[a:b] = ids
            rows.source[a:b] = [SOURCE_CODES.get(str(s), -1) for s in sources]
            rows.day[a:b] = [day_number(str(d)) for d in days]
            rows.n = b
        if rows is not None:
            rows.encode()
        return rows

    def stage_put(self, chunk_id: int, vec: Vectors, source: str, day: str) -> None:
        self._stage([("put", chunk_id, vec, source, day)])

    def stage_delete(self, chunk_ids: Sequence[int]) -> None:
        self._stage([("del", i, None, "", "") for i in chunk_ids])

    def stage_clear(self) -> None:
        self._stage([("clear", 0, None, "", "")])

    def _apply(self, ops: list[_Op]) -> None:
        for op, chunk_id, vec, source, day in ops:
            if op == "clear":
                self._drop()
                self._too_big = False
            elif op == "del":
                self._delete(chunk_id)
            elif vec is not None:
                self._put(chunk_id, vec, source, day)

    def _drop(self) -> None:
        self._rows, self._row_of = None, {}

    def _put(self, chunk_id: int, vec: Vectors, source: str, day: str) -> None:
        if self._too_big:
            return
        self._delete(chunk_id)
        rows = self._rows
        if rows is None or rows.mat.shape[1] != vec.shape[0]:
            rows = self._rows = _Rows.empty(int(vec.shape[0]), 1024)
            self._row_of = {}
            if rows.nbytes > self.max_bytes:
                self._too_big = True
                self._rows = None
                return
        if rows.n == rows.mat.shape[0]:
            rows = self._rows = self._regrow(rows)
            if rows.nbytes > self.max_bytes:
                self._too_big = True
                self._rows, self._row_of = None, {}
                return
        r = rows.n
        rows.mat[r] = vec
        rows.set_bits(r, r + 1)
        rows.source[r] = SOURCE_CODES.get(source, -1)
        rows.day[r] = day_number(day)
        rows.ids[r] = chunk_id
        rows.n = r + 1
        self._row_of[chunk_id] = r

    def _delete(self, chunk_id: int) -> None:
        r = self._row_of.pop(chunk_id, None)
        if r is not None and self._rows is not None:
            self._rows.ids[r] = -1
            self._rows.dead += 1

    def _regrow(self, old: _Rows) -> _Rows:
        """New arrays (never resized in place: readers may hold the old ones), live rows
        compacted to the front, room for half as many again, the bits taken around the
        new mean (a mirror filled by writes alone started around zero)."""
        live = np.flatnonzero(old.ids[: old.n] >= 0)
        new = _Rows.empty(old.mat.shape[1], max(1024, len(live) + len(live) // 2))
        m = len(live)
        new.mat[:m] = old.mat[live]
        new.ids[:m] = old.ids[live]
        new.source[:m] = old.source[live]
        new.day[:m] = old.day[live]
        new.n = m
        new.encode()
        self._row_of = {int(i): r for r, i in enumerate(new.ids[:m])}
        return new

    # -------------------------------------------------------------- reader side

    def stats(self) -> dict[str, int | bool]:
        with self._lock:
            rows = self._rows
            return {
                "loaded": self._loaded,
                "over_budget": self._too_big,
                "vectors": len(self._row_of),
                "bytes": rows.nbytes if rows is not None else 0,
            }

    def knn(
        self,
        q: Vectors,
        k: int,
        sources: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        shortlist: int | None = None,
    ) -> list[int] | None:
        """Chunk ids of the ``k`` nearest vectors (L2 on unit vectors, i.e. highest dot
        product), nearest first; None when the mirror cannot answer (not loaded, too big).

        ``shortlist``: None, exact up to QUANTISED_FROM live rows, above that the best of
        default_shortlist() rows by sign bits (the module's docstring); 0, exact; more, the
        best of that many by sign bits (bench/vector_recall.py)."""
        with self._lock:
            if not self.usable:
                return None
            rows = self._rows
            n = rows.n if rows is not None else 0
            dead = rows.dead if rows is not None else 0
        if rows is None or n == 0 or k <= 0:
            return []
        if rows.mat.shape[1] != q.shape[0]:
            raise VectorWidthError(f"query has {q.shape[0]} dims, the index {rows.mat.shape[1]}")
        q32 = np.ascontiguousarray(q, dtype=np.float32)
        exact = n < QUANTISED_FROM and shortlist is None
        if exact and not dead and sources is None and not (since or until):
            # Every row is live and asked for: scored as the path below would, without it.
            top = _best(dot(rows.mat[:n], q32), min(k, n))
            return list(rows.ids[top].tolist())
        keep = rows.ids[:n] >= 0
        if sources is not None:
            codes = [SOURCE_CODES[s] for s in sources if s in SOURCE_CODES]
            keep &= np.isin(rows.source[:n], codes)
        if since or until:
            days = rows.day[:n]
            keep &= days != NO_DAY
            if since:
                keep &= days >= day_number(since)
            if until:
                keep &= days <= day_number(until)
        live = int(np.count_nonzero(keep))
        k = min(k, live)
        if k == 0:
            return []
        if shortlist is None:
            shortlist = default_shortlist(live, k)
        with SCRATCH.borrow() as sc:
            if shortlist <= 0 or live <= shortlist:
                at = np.flatnonzero(keep)
            else:
                at = self._shortlist(rows, n, q32, keep, max(shortlist, k), sc)
            if len(at) == n:
                scores = dot(rows.mat[:n], q32)
            else:  # the rows gathered into a reused array (scratch.py)
                picked = sc.empty("rows", (len(at), rows.mat.shape[1]), np.float32)
                scores = dot(np.take(rows.mat, at, axis=0, out=picked, mode="clip"), q32)
        return list(rows.ids[at[_best(scores, k)]].tolist())

    @staticmethod
    def _shortlist(
        rows: _Rows,
        n: int,
        q: npt.NDArray[np.float32],
        keep: npt.NDArray[np.bool_],
        size: int,
        sc: Scratch,
    ) -> npt.NDArray[np.intp]:
        """The ``size`` kept rows of [0, n) with the best estimated scores, ascending: all
        that tie with the last place when that makes at most an eighth more, else the
        newest of them (the highest rows).

        A row's sign s_i (+1 or -1) stands for x_i - center_i, so q.x ranks as q.s times
        the row's factor (the module's docstring). The query is rounded to integers v_i
        in [-h, h] (h = 2^(QUERY_BITS-1) - 1), and v_i + h + 1 is written as QUERY_BITS
        bit planes: the sum of v_i over a row's set bits is sum_p 2^p popcount(bits &
        plane_p) - (h + 1) x ones, and q.s is twice that less sum(v). The scaled
        estimates are cut into ESTIMATE_BINS steps below the best, so the cut is read off
        a histogram instead of a partition. The per-row arrays are reused (scratch.py)."""
        h = (1 << (QUERY_BITS - 1)) - 1
        top = float(np.abs(q).max()) or 1.0
        u = (np.rint(q * (h / top)).astype(np.int16) + (h + 1)).astype(np.uint8)
        neg = sc.empty("neg", n, np.int16)  # (h + 1) x ones - sum: minus the sum of v_i
        np.multiply(rows.ones[:n], h + 1, out=neg, casting="unsafe")
        anded = sc.empty("and", n, np.uint64)
        ones = sc.empty("ones", n, np.uint8)
        count = sc.empty("count", n, np.uint16)
        for p in range(QUERY_BITS):
            plane = sign_bits(((u >> p) & 1)[None, :].astype(np.float32), _half())[:, 0]
            count.fill(0)
            for w in range(rows.bits.shape[0]):
                np.bitwise_and(rows.bits[w, :n], plane[w], out=anded)
                np.bitwise_count(anded, out=ones)
                np.add(count, ones, out=count)
            np.left_shift(count, p, out=count)
            np.subtract(neg, count.view(np.int16), out=neg)  # both below 2^15
        est = sc.empty("est", n, np.float32)
        np.multiply(neg, np.float32(-2), out=est)
        est -= np.float32(int(u.sum(dtype=np.int32)) - (h + 1) * len(u))  # sum(v)
        est *= rows.scale[:n]
        # Steps below the best row's (0), rows filtered out or not, in [0, ESTIMATE_BINS];
        # the rows filtered out are then put one past the last.
        best, worst = est.max(), est.min()
        np.subtract(best, est, out=est)
        est *= np.float32(ESTIMATE_BINS / (float(best - worst) or 1.0))
        step = sc.empty("step", n, np.uint16)
        np.copyto(step, est, casting="unsafe")  # (truncated: the floor of a value >= 0)
        step[~keep] = ESTIMATE_BINS + 1
        counts = np.cumsum(np.bincount(step, minlength=ESTIMATE_BINS + 2))
        cut = int(np.searchsorted(counts, size))  # the size-th best is in step ``cut``
        if counts[cut] <= size + size // 8:  # a few more than asked: cheaper than a cut
            return np.flatnonzero(step <= cut)
        better = np.flatnonzero(step < cut)
        tied = np.flatnonzero(step == cut)[len(better) - size :]
        return np.union1d(better, tied)


def _best(scores: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Where the ``k`` highest ``scores`` are (1 <= k <= len(scores)), highest first, ties
    in the order of a stable sort of the best k. Negates ``scores`` in place."""
    neg = np.negative(scores, out=scores)
    top = np.argpartition(neg, k - 1)[:k] if k < len(neg) else np.arange(len(neg))
    best: npt.NDArray[np.intp] = top[np.argsort(neg[top], kind="stable")]
    return best
