"""WorkspaceIndex: one workspace's index, the API the daemon calls.

Threading contract:
- All mutations run on this index's single writer thread (``submit_sync`` / ``sync``).
- ``search`` is thread-safe and uses read-only connections from a pool, so it never waits
  behind indexing. It blocks; the daemon calls it in a thread, or on the event loop with
  ``in_memory`` (only what the in-memory copies rank, never the model).
- Embedding runs on a background thread after keyword rows are committed (embedder.py):
  a file is searchable by keyword as soon as its sync returns, by vector a little later.

Its parts live beside it: opening the file (opening.py: migrate, rebuild a damaged one,
fingerprints), the reader pool (readers.py), each file as indexed and those written lately
(freshness.py), the in-memory copies that rank searches (copies.py), the embedder and its query
cache (embedder.py), the query's vector or why a search gets none (``queries``:
query_vectors.py), damage found at run time (damage.py), the warm-up of append states
(tails.py) and what status says of it (health.py).

Damage found at run time (SQLITE_CORRUPT or SQLITE_NOTADB on a read or a write) is handled as
at start: the writer thread moves the file to ``<index>.corrupt`` and indexes every file into
a new one. Searches answer from it as it fills (``degraded`` says the results may be
incomplete), as while a first scan runs; only the swap itself answers ``unavailable``."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import apsw

from memoryd import sqlite
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.fallback import QueryFallback
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.errors import IndexUnavailable
from memoryd.files.layout import Layout
from memoryd.files.provenance import ledger_for
from memoryd.index import opening, schema, store
from memoryd.index.copies import Copies
from memoryd.index.damage import Damage, corruption_in, unmasked
from memoryd.index.embedder import Embedded, Embedder
from memoryd.index.freshness import Freshness
from memoryd.index.health import index_status
from memoryd.index.line_meta import LineMetaMap
from memoryd.index.query_vectors import PreparedQuery, QueryVectors
from memoryd.index.readers import ReaderPool
from memoryd.index.search.fusion import SearchEnv, run_search
from memoryd.index.search.rows import ChunkRows, ParsedQueries
from memoryd.index.search.signals import for_request
from memoryd.index.search.triggers import TriggerLane
from memoryd.index.secure_delete import SecureDeletes
from memoryd.index.store import CacheKey, FileRow
from memoryd.index.sync import Syncer
from memoryd.index.tail_warm import SyncerWarm
from memoryd.index.tails import TailWarmer
from memoryd.index.types import (
    NotInMemory,
    SearchRequest,
    SearchResponse,
    SyncProgress,
    SyncReport,
)
from memoryd.index.vectors.mirror import VectorWidthError
from memoryd.index.vectors.window_sims import KeptWindows
from memoryd.runtime.config import Config, SearchConfig
from memoryd.runtime.heap import release_free_memory
from memoryd.runtime.logs import get_logger
from memoryd_client.search_terms import SOURCE_MEMORY, SOURCE_SESSIONS

log = get_logger("memoryd.index")
T = TypeVar("T")


class WorkspaceIndex:
    def __init__(
        self,
        root: Path,
        db_path: Path,
        config: Config,
        provider: EmbeddingProvider | None,
        provider_reason: str = "",
        fallback: QueryFallback | None = None,
        search_settings: Callable[[], SearchConfig] | None = None,
        provider_pending: bool = False,
    ) -> None:
        """``fallback``: embeds queries while ``provider`` (openai) fails, when it is the
        same model (embeddings/fallback.py). ``search_settings``: read at each search (the
        daemon's after a reload); default ``config.search``. Embedding and index settings
        hold for the index's lifetime. ``provider_pending``: the provider is still being
        chosen (a model loading); ``attach_provider`` gives it later, and until then
        searches answer by keyword and say why."""
        self.root = root.resolve()
        self.db_path = db_path
        self.config = config
        self.search_settings = search_settings or (lambda: config.search)
        self.layout = Layout(self.root, config.index.sessions, config.index.extra_paths)
        self.generation = 0
        self.vec = sqlite.probe_vec()
        self.queries = QueryVectors(
            self.vec, provider, provider_reason, fallback, pending=provider_pending
        )
        self.damage = Damage(self.root, db_path, retry=self._sync_soon)
        self._check = opening.IntegrityCheck(
            db_path, lambda exc: self.damage.spotted(exc, "checking the file after opening it")
        )
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="memoryd-writer")
        self._wconn: apsw.Connection | None = None
        self.readers = ReaderPool(
            db_path, on_corrupt=lambda exc: self.damage.spotted(exc, "reading")
        )
        self.freshness = Freshness(self.layout)
        self.rows = ChunkRows()  # candidates' rows, kept for one generation
        self.windows = KeptWindows()  # and their window vectors
        self.parsed = ParsedQueries()
        self.line_meta = LineMetaMap()  # annotations and provenance per line (line_meta.py)
        self.triggers = TriggerLane(self.line_meta, self.root)  # recall's first lane
        # None without a provider or without sqlite-vec: keyword search only.
        self.queries.embedder = self._make_embedder(provider)
        self._lock = threading.Lock()
        self._closed = False
        self._attaching = False  # attach_provider was called
        self.pending_syncs = 0
        self._targeted = False
        self.last_sync: float | None = None
        self.has_vec_table = False
        self.vectors_landing = -1  # the generation a vector write began at (health.py)
        self.rebuilt_reason: str | None = None
        self._indexed_sources = (
            (SOURCE_MEMORY, SOURCE_SESSIONS) if config.index.sessions else (SOURCE_MEMORY,)
        )
        self._syncer: Syncer | None = None
        # The append states (tails.py) warmed after a whole scan.
        self.warmer = TailWarmer(
            self.root,
            self._writer.submit,
            lambda: None if self._syncer is None else SyncerWarm(self._syncer),
            lambda: self.pending_syncs > 0,
            lambda: self._closed,
            self.damage.check,
        )
        self.copies = Copies(
            self.root,
            db_path,
            config.index,
            self.vec.ok,
            conn=lambda: self._wconn,
            on_writer=self._on_writer,
            on_error=self.damage.check,
        )
        self.secure = SecureDeletes(self.layout, self.on_writer, self.copies.drop_sidecar)

    def _make_embedder(self, provider: EmbeddingProvider | None) -> Embedder | None:
        if provider is None or not self.vec.ok:
            return None
        return Embedder(
            self.root,
            provider,
            self.config.embedding,
            self.config.index.vector_window_tokens,
            self.readers,
            self._write_vectors_now,
            lambda: self.pending_syncs > 0,
            self.queries.compare_fallback_soon,
        )

    # ------------------------------------------------------------------ lifecycle

    def open(self, later: bool = False) -> None:
        """Open (create, migrate; a corrupt file is moved aside and rebuilt). Fast: no scan;
        the in-memory copies load next on the writer thread (sqlite-vec and FTS5 answer
        meanwhile). ``later``: at ``open_later`` (a daemon's first answer) or a first write;
        the check of every page too (at ``open_later``: its ~12 M instructions of reading
        took a core from a daemon's first answer, issue 38)."""
        self._writer.submit(self._open_writer).result()
        self.copies.defer()
        if not later:
            self._writer.submit(self.copies.load_deferred)
            self._check.start()

    def open_later(self) -> None:
        """Queue what ``open(later=True)`` left: the copies' loads (once), the keyword
        upgrade; and begin the check of every page (once)."""
        self.copies.load_soon()
        self._check.start()

    def on_writer(self, fn: Callable[[apsw.Connection], T]) -> Future[T | None]:
        """Run ``fn`` with the writer's connection on the writer thread, after everything
        queued before it (forget: its embedding-cache purge after its re-sync)."""

        def call() -> T | None:
            conn = self._wconn
            return None if conn is None else fn(conn)

        return self._writer.submit(call)

    def _on_writer(self, call: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # closing
            self._writer.submit(call)

    def _open_writer(self) -> None:
        conn, self.rebuilt_reason = opening.open_or_rebuild(self.db_path)
        try:
            self._use_writer(conn)
        except sqlite.CORRUPTION as exc:  # damage past what opening reads (IntegrityCheck's)
            self._wconn = None
            conn.close()
            conn, self.rebuilt_reason = opening.rebuild(
                self.db_path, f"{type(exc).__name__}: {exc}"
            )
            self._use_writer(conn)

    def _use_writer(self, conn: apsw.Connection) -> None:
        self.copies.follow(conn)
        try:
            opening.apply_fingerprint(
                conn,
                self.config.index,
                self.queries.provider,
                self.vec.ok,
                self.copies.vectors,
                provider_known=not self.queries.pending,
            )
        except opening.NOT_CORRUPTION as exc:
            conn.close()
            raise IndexUnavailable(f"cannot open index {self.db_path}: {exc}") from None
        self._wconn = conn
        self.has_vec_table = store.has_vec_table(conn)
        self.freshness.load(store.read_files(conn).values(), conn)
        self.line_meta.load(conn)
        self._syncer = Syncer(
            conn,
            self.layout,
            load_tokenizer,
            self.config.index.chunk_tokens,
            self.config.index.chunk_overlap,
            self.config.index.max_file_bytes,
            on_commit=self._on_commit,
            mirror=self.copies.vectors,
            keywords=self.copies.keywords,
            stopping=lambda: self._closed,
            meta=self.line_meta,
            ledger=ledger_for(self.root),
            secure=self.secure.covers,
            before_write=self.copies.load_deferred,
            between_files=self.copies.load_if_asked,
        )

    def attach_provider(
        self,
        provider: EmbeddingProvider | None,
        reason: str,
        fallback: QueryFallback | None = None,
    ) -> None:
        """The provider chosen after ``open`` (the registry opens indexes before a model has
        loaded). Vectors made by another model are dropped on the writer thread, after any
        sync queued there; when the stored ones fit (a restart), vector search starts now.
        A second call, or one after close, does nothing."""
        with self._lock:
            if self._closed or self._attaching or not self.queries.pending:
                return
            self._attaching = True
        try:
            with self.readers.borrow() as r:
                stored = schema.get_meta(r.conn).get("embedding")
        except (IndexUnavailable, apsw.Error):  # being rebuilt: the writer decides below
            stored = None
        if stored == opening.embedding_fingerprint(self.config.index, provider, self.vec.ok):
            self._use_provider(provider, reason, fallback)
            return

        def on_writer() -> None:
            conn = self._wconn
            if conn is None:
                return
            opening.apply_embedding(
                conn, self.config.index, provider, self.vec.ok, self.copies.vectors
            )
            self.has_vec_table = store.has_vec_table(conn)
            self._use_provider(provider, reason, fallback)

        self._on_writer(on_writer)

    def _use_provider(
        self, provider: EmbeddingProvider | None, reason: str, fallback: QueryFallback | None
    ) -> None:
        self.queries.use(provider, reason, fallback, self._make_embedder(provider))
        log.debug("index_provider_attached", workspace=str(self.root), reason=reason)
        with self._lock:
            syncing = self.pending_syncs > 0
        if not syncing:  # else the sync's end starts the embedder
            self._kick_embedder()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._check.close()
        self.damage.close()
        if self.queries.embedder is not None:
            self.queries.embedder.close()
        self._writer.shutdown(wait=True, cancel_futures=True)
        self.warmer.cancelled()
        # A search that found this index before it was closed (a workspace.remove racing
        # it, whose index file may be deleted next) is told so, not CantOpenError.
        self.readers.suspend(
            f"the index of {self.root} is closed (the workspace was removed, or the daemon "
            "is stopping)"
        )
        if self._wconn is not None:
            self.copies.save_keywords(self._wconn)
            self._wconn.close()
            self._wconn = None

    # ------------------------------------------------------------------ writing

    def submit_sync(
        self,
        paths: Iterable[Path] | None = None,
        *,
        full: bool = False,
        progress: Callable[[SyncProgress], None] | None = None,
    ) -> Future[SyncReport]:
        """Queue a sync on the writer thread. paths=None: scan the whole workspace."""
        path_list = None if paths is None else list(paths)
        with self._lock:
            if self._closed:
                raise IndexUnavailable(f"index of {self.root} is closed")
            self.pending_syncs += 1
        try:
            return self._writer.submit(self._run_sync, path_list, full, progress)
        except RuntimeError:
            with self._lock:
                self.pending_syncs -= 1
            raise IndexUnavailable(f"index of {self.root} is closed") from None

    def sync(
        self,
        paths: Iterable[Path] | None = None,
        *,
        full: bool = False,
        progress: Callable[[SyncProgress], None] | None = None,
    ) -> SyncReport:
        return self.submit_sync(paths, full=full, progress=progress).result()

    def _run_sync(
        self, paths: list[Path] | None, full: bool, progress: Callable[[SyncProgress], None] | None
    ) -> SyncReport:
        started = time.monotonic()
        try:
            paths = self.freshness.before_sync(paths)  # (a whole scan's folders read first)
            report, paths = self._sync_or_rebuild(paths, full, progress)
        finally:
            with self._lock:
                self.pending_syncs -= 1
            if self.copies.keywords.suspended:  # a bulk run: one load now (FTS5 meanwhile)
                self.copies.load_keywords(sidecar=False)
        report.seconds = time.monotonic() - started
        if paths is None:
            self.freshness.scanned(None if self._closed else self._wconn)  # not cut short
            if self._wconn is not None:
                # A whole scan fills the writer's page cache with rows later writes rarely
                # need again; a daemon with many workspaces would keep each one's for good.
                self._wconn.execute("PRAGMA shrink_memory")
                release_free_memory()
            self.warmer.start()
        self.last_sync = time.time()
        if report.files_changed or report.files_removed:
            log.info(
                "index_synced",
                workspace=str(self.root),
                **{k: v for k, v in report.to_dict().items() if k != "skipped"},
            )
        self._kick_embedder()
        return report

    def _sync_or_rebuild(
        self, paths: list[Path] | None, full: bool, progress: Callable[[SyncProgress], None] | None
    ) -> tuple[SyncReport, list[Path] | None]:
        """The sync asked for; or, when the file is (or is found) damaged, a rebuild: the
        new file gets every file, which covers the paths asked for. Returns what ran."""
        for attempt in range(2):  # damage found again during a rebuild: once more, then wait
            try:
                swapped = self._swap_if_corrupt()
                syncer = self._syncer
                if syncer is None:  # a rebuild could not open the new file
                    raise IndexUnavailable(self.damage.message())
                if swapped:
                    self._targeted = False
                    report = syncer.run(None, True, self.damage.progress_to(progress))
                    self.damage.finished()
                    return report, None
                self._targeted = paths is not None
                return syncer.run(paths, full, progress), paths
            except Exception as exc:
                found = corruption_in(exc)
                if found is None:
                    if (cause := unmasked(exc)) is not exc:
                        raise cause from None
                    raise
                self.damage.spotted(found, "writing", schedule=False)
                if attempt == 1:  # the new file is damaged too (the disk?): back off
                    self._rebuild_failed(found)
                    raise IndexUnavailable(self.damage.message()) from exc
        raise AssertionError("unreachable")

    def _on_commit(self, rel: str, row: FileRow | None) -> None:
        self.freshness.committed(rel, row, self._targeted)
        with self._lock:
            self.generation += 1

    # ------------------------------------------------------------------ damage at run time

    def _sync_soon(self) -> None:
        with contextlib.suppress(IndexUnavailable):  # closing
            self.submit_sync([])

    def _swap_if_corrupt(self) -> bool:
        """Writer thread: when the file was found damaged, close it, move it aside and open
        a new one (False: it was not). Reads fail with ``unavailable`` only meanwhile."""
        problem = self.damage.found
        if problem is None:
            return False
        self.readers.suspend(self.damage.message())
        self._syncer = None
        conn, self._wconn = self._wconn, None
        if conn is not None:
            with contextlib.suppress(apsw.Error):
                conn.close(True)
        try:
            self.copies.drop_sidecar()
            aside = sqlite.move_aside(self.db_path)
            self.copies.renew()
            self._open_writer()
        except Exception as exc:
            raise IndexUnavailable(self._rebuild_failed(exc)) from exc
        self.copies.load_vectors()
        self.copies.load_keywords(sidecar=False)
        self.damage.swapped(problem, aside)
        with self._lock:
            self.generation += 1
        self.readers.resume()
        return True

    def _rebuild_failed(self, exc: BaseException) -> str:
        """The new file could not be made (or is damaged too): reads answer ``unavailable``
        saying why until a retry (damage.py's back-off) succeeds."""
        error = self.damage.failed(exc)
        self.readers.suspend(error)
        return error

    # ------------------------------------------------------------------ vectors

    def _kick_embedder(self) -> None:
        if self.queries.embedder is not None:
            self.queries.embedder.kick()

    def _write_vectors_now(self, key: CacheKey, items: Embedded) -> None:
        """The embedder's way to the writer thread: returns once the vectors are committed."""
        self._writer.submit(self._write_vectors, key, items).result()

    def _write_vectors(self, key: CacheKey, items: Embedded) -> None:
        conn = self._wconn
        if conn is None:  # being rebuilt: the chunks are embedded again once it is
            raise IndexUnavailable(self.damage.message())
        if not items or not items[0][1]:
            return
        self.vectors_landing = self.generation  # not vector_ready until the bump (health.py)
        cache_max = self.config.embedding.cache_max_entries
        try:
            old = store.write_batch(conn, key, items, cache_max, self.copies.vectors)
        except Exception as exc:
            if (found := corruption_in(exc)) is None:
                raise
            self.damage.spotted(found, "writing vectors")
            raise IndexUnavailable(self.damage.message()) from exc
        if old is not None:
            new = int(items[0][1][0][1].shape[0])
            log.warning("embedding_dims_changed", workspace=str(self.root), old=old, new=new)
        self.has_vec_table = True
        with self._lock:
            self.generation += 1

    def _rebuild_vectors_if_mismatched(self, dims: int) -> None:
        """The provider's width no longer fits the vector table: start the vectors over."""

        def rebuild() -> None:
            conn = self._wconn
            if conn is None:  # being rebuilt
                return
            with conn:
                old = store.drop_other_width(conn, dims, self.copies.vectors)
            if old is not None:
                log.warning("embedding_dims_changed", workspace=str(self.root), old=old, new=dims)
                self.has_vec_table = False
            self._kick_embedder()

        self._on_writer(rebuild)

    def wait_embedded(
        self, timeout: float | None = None, progress: Callable[[SyncProgress], None] | None = None
    ) -> bool:
        """Block until no chunk waits for a vector; False on timeout or a failing provider."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.queries.wait_known(0.2):
            if self._closed or (deadline is not None and time.monotonic() > deadline):
                return False
        if self.queries.embedder is None:
            return True
        if deadline is not None:
            timeout = max(0.0, deadline - time.monotonic())
        return self.queries.embedder.wait_done(timeout, progress)

    # ------------------------------------------------------------------ reading

    def search(
        self, req: SearchRequest, prepared: PreparedQuery | None = None, *, in_memory: bool = False
    ) -> SearchResponse:
        """The index's one search. ``prepared``: the query's vector (queries.prepare), made
        beforehand on another thread; None: made here. ``in_memory``: answer only when the
        in-memory copies can rank it (search.answers_from_memory), else raise NotInMemory
        having done nothing costly; it never runs the embedding model then: without a
        ``prepared`` vector, only a cached one will do. ``req`` was checked when made."""
        if in_memory and prepared is None:
            prepared = self.queries.prepare_cached(req)
            if prepared is None:
                raise NotInMemory
        resp = self._search(req, prepared, in_memory)
        if resp is None:
            raise NotInMemory
        return resp

    def _search(
        self, req: SearchRequest, prepared: PreparedQuery | None, memory_only: bool
    ) -> SearchResponse | None:
        started = time.perf_counter()
        qvec, degraded = prepared or self.queries.prepare(req)
        usable = self.vec.ok and self.has_vec_table
        env = SearchEnv(
            cfg=self.search_settings(),
            line_stems=self.copies.line_stems,
            mirror=self.copies.vectors,
            window_budget=self.config.index.vector_window_tokens,
            indexed_sources=self._indexed_sources,
            keywords=self.copies.keywords,
            rows=self.rows,
            generation=self.generation,  # before any row is read (rows.py)
            parsed=self.parsed,
            windows=self.windows,
        )
        signals, dates = for_request(req, env.cfg.recency_half_life_days, self.line_meta)
        with self.readers.borrow() as r:
            if qvec is not None:
                pending = store.count_pending(r.conn)
                if pending:
                    degraded = f"{pending} chunks still waiting for vectors"
                if not usable:
                    degraded = f"vectors not built yet ({pending} chunks pending)"
            try:
                hits, mode_used = run_search(
                    r.conn, r.tokenize, req, env, qvec, usable, memory_only, signals
                )
            except NotInMemory:
                return None
            except (apsw.Error, VectorWidthError) as exc:
                if qvec is None:
                    raise
                # A vector table that no longer fits the provider (dims changed) must not
                # fail searches: answer by keyword, say why, and let the embedder rebuild.
                log.warning("vector_search_failed", workspace=str(self.root), error=str(exc))
                self._rebuild_vectors_if_mismatched(int(qvec.shape[0]))
                degraded = f"vector search failed, keyword results only: {exc}"
                hits, mode_used = run_search(
                    r.conn, r.tokenize, req, env, None, False, signals=signals
                )
        rebuilding = self.damage.rebuilding
        if rebuilding is not None:  # found damaged: answering from the new file
            degraded = f"{rebuilding}; {degraded}" if degraded else rebuilding
        p = self.queries.provider
        return SearchResponse(
            results=hits,
            provider=p.name if p else "none",
            model=p.model if p else "",
            mode_used=mode_used,
            took_ms=(time.perf_counter() - started) * 1000,
            index_generation=self.generation,
            pending_files=self.pending_syncs,
            degraded=degraded,
            dates=dates,
        )

    # ------------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        return index_status(self)
