"""An in-memory copy of the chunk vectors, scanned with numpy for the KNN of a search.

sqlite-vec stays the store: the mirror is loaded from ``chunks_vec`` and follows the
writer's committed changes. The reason it exists is speed: sqlite-vec's brute-force scan
costs ~400 ns a row (4-7 ms at 10k chunks, most of a hybrid search), one BLAS
matrix-vector product over the same rows ~1 ms. When the vectors would take more than
``max_bytes``, or before the mirror is loaded, ``knn`` answers None and the caller asks
sqlite-vec instead.

Readers never block on the writer: rows are only ever appended past the row count a
reader saw, deletions flip the row's id to -1, and growing or compacting builds new
arrays, so a reader's snapshot stays valid for its whole scan. How it follows commits:
mirror.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import apsw
import numpy as np
import numpy.typing as npt

from memoryd.embeddings.base import Vectors
from memoryd.index import db
from memoryd.index.mirror import StagedMirror
from memoryd.workspace.layout import ISO_DAY

SOURCE_CODES = {"memory": 0, "sessions": 1}
NO_DAY = 0


def day_number(day: str) -> int:
    """'2026-11-23' -> 20261123, ordered as the strings are; '' (undated) -> 0, which no
    since/until admits."""
    return int(day[:4] + day[5:7] + day[8:10]) if ISO_DAY.fullmatch(day) else NO_DAY


class VectorWidthError(ValueError):
    """The query vector is not as wide as the stored ones (the provider changed)."""


@dataclass
class _Rows:
    mat: npt.NDArray[np.float32]  # (capacity, dims)
    ids: npt.NDArray[np.int64]  # -1: deleted
    source: npt.NDArray[np.int8]
    day: npt.NDArray[np.int32]
    n: int = 0  # rows in use (live or deleted)

    @classmethod
    def empty(cls, dims: int, capacity: int) -> _Rows:
        return cls(
            np.zeros((capacity, dims), np.float32),
            np.full(capacity, -1, np.int64),
            np.zeros(capacity, np.int8),
            np.zeros(capacity, np.int32),
        )


_Op = tuple[str, int, Vectors | None, str, str]  # ("put" | "del" | "clear", id, vec, source, day)


class VectorMirror(StagedMirror[_Op]):
    def __init__(self, max_bytes: int, on_stale: Callable[[], None] = lambda: None) -> None:
        super().__init__(max_bytes, on_stale)
        self._rows: _Rows | None = None
        self._row_of: dict[int, int] = {}

    # -------------------------------------------------------------- writer side

    def load(self, conn: apsw.Connection, table: str | None) -> None:
        """(Re)read every vector of ``table`` (None: there is none yet). Writer thread."""
        self._begin_load()
        if table is not None and self.max_bytes > 0:
            total = int(db.scalar(conn, f"SELECT count(*) FROM {table}"))
            for chunk_id, blob, source, day in conn.execute(
                f"SELECT chunk_id, embedding, source, day FROM {table}"
            ):
                vec = np.frombuffer(blob, dtype=np.float32)
                with self._lock:
                    if self._rows is None:  # sized once: room for an eighth more
                        self._rows = _Rows.empty(int(vec.shape[0]), total + total // 8 + 64)
                        self._too_big = self._rows.mat.nbytes > self.max_bytes
                    if self._too_big:
                        self._rows = None
                        break
                    self._put(int(chunk_id), vec, str(source), str(day))
        with self._lock:
            self._loaded = True

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
            if rows.mat.nbytes > self.max_bytes:
                self._too_big = True
                self._rows = None
                return
        if rows.n == rows.mat.shape[0]:
            rows = self._rows = self._regrow(rows)
            if rows.mat.nbytes > self.max_bytes:
                self._too_big = True
                self._rows, self._row_of = None, {}
                return
        r = rows.n
        rows.mat[r] = vec
        rows.source[r] = SOURCE_CODES.get(source, -1)
        rows.day[r] = day_number(day)
        rows.ids[r] = chunk_id
        rows.n = r + 1
        self._row_of[chunk_id] = r

    def _delete(self, chunk_id: int) -> None:
        r = self._row_of.pop(chunk_id, None)
        if r is not None and self._rows is not None:
            self._rows.ids[r] = -1

    def _regrow(self, old: _Rows) -> _Rows:
        """New arrays (never resized in place: readers may hold the old ones), live rows
        compacted to the front, room for half as many again."""
        live = np.flatnonzero(old.ids[: old.n] >= 0)
        new = _Rows.empty(old.mat.shape[1], max(1024, len(live) + len(live) // 2))
        m = len(live)
        new.mat[:m] = old.mat[live]
        new.ids[:m] = old.ids[live]
        new.source[:m] = old.source[live]
        new.day[:m] = old.day[live]
        new.n = m
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
                "bytes": int(rows.mat.nbytes) if rows is not None else 0,
            }

    def knn(
        self,
        q: Vectors,
        k: int,
        sources: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[int] | None:
        """Chunk ids of the ``k`` nearest vectors (L2 on unit vectors, i.e. highest dot
        product), nearest first; None when the mirror cannot answer (not loaded, too big)."""
        with self._lock:
            if not self.usable:
                return None
            rows = self._rows
            n = rows.n if rows is not None else 0
        if rows is None or n == 0 or k <= 0:
            return []
        if rows.mat.shape[1] != q.shape[0]:
            raise VectorWidthError(f"query has {q.shape[0]} dims, the index {rows.mat.shape[1]}")
        scores = rows.mat[:n] @ q.astype(np.float32, copy=False)
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
        scores[~keep] = -np.inf
        live = int(np.count_nonzero(keep))
        k = min(k, live)
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.argsort(-scores[top], kind="stable")]
        ids = rows.ids[top]
        return [int(i) for i in ids if i >= 0]
