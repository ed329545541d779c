"""FTS5 secure deletes for the files a forget changes, and only for them.

FTS5 keeps a deleted chunk's terms in its older segments until they are merged (a delete
adds a marker in a new segment); its ``secure-delete`` option removes them from the
segment that holds them, but left on it makes every later edit ~20x as costly
(docs/lifecycle.md). So it is switched on only inside the transaction that deletes a
registered file's chunks, and off again before that transaction ends: a rollback or a kill
leaves it as it was (off). The connection runs with ``PRAGMA secure_delete`` (sqlite.py),
so the rewritten FTS5 pages zero what they dropped.

A forget registers its files (``SecureDeletes.hold``) before it touches any of them, so the
watch's own sync of those files in between deletes securely too, and releases them after
its own index sync: then the WAL is checkpointed and truncated (no older page image of a
removed line stays in it) and the keyword copy's file (its stems, written at the last clean
close) is removed; the next clean close writes it again from the copy, which holds no stem
of a deleted chunk.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import apsw

from memoryd.files.layout import Layout, display_name
from memoryd.index.purge import checkpoint
from memoryd.runtime.logs import get_logger

__all__ = ["SecureDeletes", "SecureHold", "fts_secure"]

log = get_logger("memoryd.index")

_SET = "INSERT INTO chunks_fts(chunks_fts, rank) VALUES('secure-delete', ?)"


@contextlib.contextmanager
def fts_secure(conn: apsw.Connection, on: bool) -> Iterator[None]:
    """Inside the caller's transaction: FTS5 deletes are secure until the block ends. Off
    again even when the block fails (before the caller's rollback: the connection's own copy
    of the setting is not reverted by a rollback)."""
    if not on:
        yield
        return
    conn.execute(_SET, (1,))
    try:
        yield
    finally:
        conn.execute(_SET, (0,))


class SecureDeletes:
    """The files whose chunks' deletes are secure now: counted, as two forgets may hold the
    same file. Asked by the writer thread (``covers``), changed from any thread."""

    def __init__(
        self,
        layout: Layout,
        on_writer: Callable[[Callable[[apsw.Connection], Any]], Future[Any]],
        drop_sidecar: Callable[[], None],
    ) -> None:
        self.layout = layout
        self._on_writer = on_writer
        self._drop_sidecar = drop_sidecar
        self._lock = threading.Lock()
        self._held: Counter[str] = Counter()

    def covers(self, rel: str) -> bool:
        with self._lock:
            return self._held[rel] > 0

    def rels(self, paths: Iterable[Path]) -> list[str]:
        out = []
        for p in paths:
            rel = self.layout.rel(Path(os.path.abspath(p)))  # as the syncer names them
            if rel is not None:
                out.append(display_name(rel))
        return out

    def hold(self, paths: Iterable[Path]) -> SecureHold:
        """Deletes of these files' chunks are secure until the hold is released."""
        rels = self.rels(paths)
        with self._lock:
            self._held.update(rels)
        return SecureHold(self, rels, lambda: self._on_writer(self._finish))

    def _finish(self, conn: apsw.Connection) -> None:
        """Writer thread, after the forget's sync: no older page image of a removed line
        stays in the WAL, nor its stems in the keyword copy's file."""
        try:
            checkpoint(conn)
        except apsw.Error as exc:  # the forget is done; a later checkpoint finishes this
            log.warning("forget_checkpoint_failed", error=repr(exc))
        self._drop_sidecar()

    def _drop(self, rels: list[str]) -> None:
        with self._lock:
            self._held.subtract(rels)
            self._held = +self._held  # counts at zero go


class SecureHold:
    """A forget's files, held secure until ``release``: after what was queued on the
    writer before it (the forget's sync), ``finish`` runs there (the WAL truncated, the
    keyword file removed), then the files are let go. A context manager for blocking
    callers (recovery)."""

    def __init__(
        self, owner: SecureDeletes, rels: list[str], finish: Callable[[], Future[Any]]
    ) -> None:
        self._owner = owner
        self.rels = rels
        self._finish = finish
        self._released = False

    def release(self) -> Future[Any]:
        if self._released:
            done: Future[Any] = Future()
            done.set_result(None)
            return done
        self._released = True
        try:
            fut = self._finish()
        except RuntimeError:  # the index is closing: nothing more is synced
            self._owner._drop(self.rels)
            fut = Future()
            fut.set_result(None)
            return fut
        fut.add_done_callback(lambda _f: self._owner._drop(self.rels))
        return fut

    def __enter__(self) -> SecureHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release().result()
