"""What ``status`` says of one index: its counts, its provider and engines, and what is
degraded (damage, vectors off, a provider loading or failing), read without waiting for the
writer."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from memoryd import sqlite
from memoryd.errors import IndexUnavailable
from memoryd.files.layout import Layout
from memoryd.index import store
from memoryd.index.copies import Copies
from memoryd.index.damage import Damage
from memoryd.index.query_vectors import PROVIDER_LOADING, QueryVectors
from memoryd.index.readers import ReaderPool
from memoryd.sqlite import VecSupport


class Inspected(Protocol):
    """The parts of an index (index/workspace.py) that its status reads."""

    root: Path
    db_path: Path
    layout: Layout
    vec: VecSupport
    queries: QueryVectors
    damage: Damage
    readers: ReaderPool
    copies: Copies
    generation: int
    pending_syncs: int
    last_sync: float | None
    has_vec_table: bool
    vectors_landing: int
    rebuilt_reason: str | None


def index_status(ix: Inspected) -> dict[str, Any]:
    files = chunks = pending = malformed = 0
    skipped: dict[str, str] = {}
    try:
        with ix.readers.borrow() as r:
            files = int(sqlite.scalar(r.conn, "SELECT count(*) FROM files"))
            chunks = int(sqlite.scalar(r.conn, "SELECT count(*) FROM chunks"))
            pending = store.count_pending(r.conn)
            skipped = dict(
                r.conn.execute(
                    "SELECT path, skipped_reason FROM files WHERE skipped_reason IS NOT NULL"
                )
            )
            malformed = int(sqlite.scalar(r.conn, "SELECT coalesce(sum(malformed), 0) FROM files"))
    except IndexUnavailable:  # damaged, being rebuilt: degraded says so below
        pass
    q = ix.queries
    degraded = ix.damage.words()
    if not ix.vec.ok:
        degraded.append(f"vectors off: {ix.vec.reason}")
    if q.pending:
        degraded.append(PROVIDER_LOADING)
    elif q.provider is None:
        degraded.append(f"keyword only: {q.reason or 'no embedding provider'}")
    failure = q.embedder.failure if q.embedder is not None else None
    if failure is not None:
        degraded.append(
            f"embedding provider failing: {failure.reason} "
            f"(retry in {max(0.0, failure.retry_at - time.monotonic()):.0f}s)"
        )
    if rebuilt := ix.damage.rebuilt or ix.rebuilt_reason:
        degraded.append(rebuilt)
    p = q.provider
    waiting = pending if (p is not None or q.pending) and ix.vec.ok else 0
    return {
        "path": str(ix.root),
        "index": str(ix.db_path),
        "files": files,
        "chunks": chunks,
        # While the provider loads, the chunks it will embed (none: known at once).
        "pending_vectors": waiting,
        "pending_files": ix.pending_syncs,
        "index_generation": ix.generation,
        "last_sync": ix.last_sync,
        "malformed_lines": malformed,
        # Who embeds queries now: the provider, its fallback while it fails, or nobody.
        "query_provider": q.last_by if p is not None and ix.vec.ok else "none",
        "provider": {
            "name": p.name if p else "loading" if q.pending else "none",
            "model": p.model if p else "",
            "dims": p.dims if p else None,
            "reason": q.reason,
        },
        # Read after the count: a count that saw a vector write's commit is not ready until
        # the generation counts it too (the fleet's "published" compares generations). A
        # write that failed rolled back: its chunks are still pending.
        "vector_ready": bool(
            p is not None
            and ix.vec.ok
            and ix.has_vec_table
            and pending == 0
            and ix.vectors_landing != ix.generation
        ),
        "sqlite_vec": ix.vec.version or None,
        # The KNN's engine: the in-memory copy once loaded and within index.vector_memory_mb
        "vector_scan": (
            None
            if p is None or not ix.vec.ok
            else "memory"
            if ix.copies.vectors.usable
            else "sqlite-vec"
        ),
        # BM25's engine: the in-memory copy once loaded and within index.keyword_memory_mb
        "keyword_scan": ix.copies.keywords.scan,
        "degraded": degraded,
        "skipped": {**ix.layout.links_outside(), **skipped},
        **_embedding_progress(q, waiting),
    }


def _embedding_progress(q: QueryVectors, pending: int) -> dict[str, Any]:
    """``embedding: {rate_per_s, eta_s}`` while chunks wait for vectors and some got
    them within the last seconds (chunks per second; the model's pace on this machine)."""
    rate = q.embedder.rate.per_second() if pending and q.embedder else None
    if rate is None:
        return {}
    return {"embedding": {"rate_per_s": round(rate, 2), "eta_s": round(pending / rate, 1)}}
