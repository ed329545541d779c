"""The in-memory copies of one index, and how they are loaded from its file.

The vectors (vectors/mirror.py: the KNN), the BM25 postings (keyword/mirror.py) and the
snippets' line stems (search/snippets.py) rank searches without SQLite; the file stays the store.
Both mirrors load on the writer thread after the index opens (sqlite-vec and FTS5 answer
meanwhile), follow its commits, and are loaded again when one may be off. A daemon's start
defers their load (``defer``) until its first answer, or until something is about to be
written (``load_deferred``): the copies need numpy, ~a fifth of a start, and a first keyword
question is answered without it (FTS5 gives the copy's scores: search/fusion.py). The BM25 copy is
saved beside the index at a clean close and read back at the next open when it still
matches (keyword/sidecar.py). A rebuilt file starts with new, empty copies (its chunk ids
start over).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from memoryd import sqlite
from memoryd.index import opening, store
from memoryd.index.keyword import sidecar as keyword_sidecar
from memoryd.index.keyword.mirror import KeywordMirror
from memoryd.index.search.snippets import LineStems
from memoryd.index.vectors.mirror import VectorMirror
from memoryd.runtime.config import IndexConfig, MiB
from memoryd.runtime.heap import release_free_memory
from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.index")


class Copies:
    def __init__(
        self,
        root: Path,
        db_path: Path,
        cfg: IndexConfig,
        vec_ok: bool,
        conn: Callable[[], apsw.Connection | None],
        on_writer: Callable[[Callable[[], None]], None],
        on_error: Callable[[BaseException, str], None],
    ) -> None:
        """``conn``: the writer's connection now (None: closed, or being rebuilt);
        ``on_writer``: queues a call on the writer thread; ``on_error``: a load failed
        (the index checks it for damage)."""
        self.root = root
        self.db_path = db_path
        self.cfg = cfg
        self.vec_ok = vec_ok
        self._conn = conn
        self._on_writer = on_writer
        self._on_error = on_error
        # Loads left for later (``defer``): each goes once it runs, whoever runs it first.
        self._vectors_deferred = self._keywords_deferred = False
        self._open_pending = False  # load_deferred has not run since defer
        self._asked = False  # load_soon was called: a sync's files may wait no longer
        self.renew()

    def renew(self) -> None:
        """Empty copies: at first, and for a rebuilt file."""
        self.vectors = VectorMirror(
            self.cfg.vector_memory_mb * MiB,
            on_stale=lambda: self._reload_later("vector_mirror", self.load_vectors),
        )
        self.keywords = KeywordMirror(
            self.cfg.keyword_memory_mb * MiB,
            on_stale=lambda: self._reload_later("keyword_mirror", self.load_keywords),
        )
        self.line_stems = LineStems()

    def follow(self, conn: apsw.Connection) -> None:
        """The copies follow ``conn``'s committed transactions only: a rolled-back write
        never shows."""
        self.vectors.follow(conn, "vector_mirror")
        self.keywords.follow(conn, "keyword_mirror")

    def defer(self) -> None:
        """Open's loads, and the keyword upgrade after them, are left for ``load_deferred``."""
        self._vectors_deferred = self._keywords_deferred = self._open_pending = True

    @property
    def deferred(self) -> bool:
        return self._vectors_deferred or self._keywords_deferred

    def load_soon(self) -> None:
        """The daemon's first answer went out: the deferred loads, queued on the writer. A
        restart's scan running there meanwhile runs them between two of its files
        (``load_if_asked``) instead of after its last: at 104k chunks that scan takes
        seconds, and FTS5 ranked every search until it ended (x20 the in-memory copy's time)."""
        self._asked = True
        self._on_writer(self.load_deferred)

    def load_if_asked(self) -> None:
        """Writer thread, between two files of a sync (sync.py): the deferred loads once
        ``load_soon`` asked for them. Before the sync's first write, as ``load_deferred``
        needs: that write ran them itself."""
        if self._asked and self._open_pending:
            self.load_deferred()

    def load_deferred(self) -> None:
        """Writer thread, once: the loads ``defer`` left, if still left, then an old index's
        keyword upgrade (opening.py), as open ran them. Before anything is written: the saved
        BM25 copy matches the index only as it was at open. A keyword copy suspended by a
        bulk run meanwhile is loaded by that run instead."""
        if not self._open_pending:
            return
        self._open_pending = False
        if self._vectors_deferred:
            self.load_vectors()
        if self._keywords_deferred:
            if self.keywords.suspended:
                self._keywords_deferred = False
            else:
                self.load_keywords()
        opening.upgrade_keyword_text(self._conn(), self.root, self._on_error)

    def _reload_later(self, what: str, load: Callable[[], None]) -> None:
        """Called on the writer thread (a hook) when a copy may be off: reload after it."""
        log.warning(f"{what}_reload", workspace=str(self.root))
        self._on_writer(load)

    def load_vectors(self) -> None:
        """Writer thread. A zero budget: the mirror itself stays empty."""
        self._vectors_deferred = False
        if not self.vec_ok:
            return

        def load(conn: apsw.Connection) -> dict[str, Any]:
            self.vectors.load(conn, store.VEC_TABLE if store.has_vec_table(conn) else None)
            return self.vectors.stats()

        # On failure sqlite-vec keeps answering the KNN.
        self._load("vector_mirror", "loading the vectors", load)

    def load_keywords(self, sidecar: bool = True) -> None:
        """Writer thread. ``sidecar``: try the copy saved at the last close first (not
        after a bulk sync)."""
        self._keywords_deferred = False

        def load(conn: apsw.Connection) -> dict[str, Any]:
            found: dict[str, Any] = {"origin": "sidecar"}
            saved = keyword_sidecar.path_for(self.db_path)
            if not (sidecar and keyword_sidecar.load(self.keywords, saved, conn)):
                unstreamed = self.keywords.finish_stream()  # None: a bulk sync built it
                found["origin"] = "stream" if unstreamed is None else "chunks"
                if unstreamed:
                    found["unstreamed"] = unstreamed  # why the stream broke
            if found["origin"] == "chunks":
                self.keywords.load(
                    conn.execute("SELECT id, text, heading, source, day FROM chunks"),
                    int(sqlite.scalar(conn, "SELECT count(*) FROM chunks")),
                )
            # The load read every chunk through the writer's page cache, and its garbage
            # peaked at ~2x the copy: give both back.
            conn.execute("PRAGMA shrink_memory")
            release_free_memory()
            return {**found, **self.keywords.stats()}

        # On failure FTS5 keeps answering.
        self._load("keyword_mirror", "loading the keywords", load)

    def _load(
        self, what: str, doing: str, load: Callable[[apsw.Connection], dict[str, Any]]
    ) -> None:
        conn = self._conn()
        if conn is None:
            return
        started = time.perf_counter()
        try:
            stats = load(conn)
        except Exception as exc:  # a copy is never worth a crash: the file answers
            log.warning(f"{what}_failed", workspace=str(self.root), error=repr(exc))
            self._on_error(exc, doing)
            return
        log.debug(
            f"{what}_loaded",
            workspace=str(self.root),
            ms=round((time.perf_counter() - started) * 1000, 1),
            **stats,
        )

    def save_keywords(self, conn: apsw.Connection) -> None:
        """At close, once the writer has stopped: the copy is the index's last commit. One
        never loaded leaves the saved one as it is: nothing was written since it matched."""
        if self._keywords_deferred:
            return
        try:
            keyword_sidecar.save(self.keywords, keyword_sidecar.path_for(self.db_path), conn)
        except Exception as exc:  # the next start rebuilds it: slower, nothing lost
            log.warning("keyword_sidecar_failed", workspace=str(self.root), error=repr(exc))

    def drop_sidecar(self) -> None:
        """The saved BM25 copy of a damaged file must not be read for the new one."""
        with contextlib.suppress(FileNotFoundError):
            keyword_sidecar.path_for(self.db_path).unlink()
