"""WorkspaceIndex: one workspace's index, the API the daemon calls.

Threading contract:
- All mutations run on this index's single writer thread (``submit_sync`` / ``sync``).
- ``search`` and ``get`` are thread-safe and use read-only connections from a pool, so
  they never wait behind indexing. They block; the daemon calls them in a thread.
- Embedding runs on a background thread after keyword rows are committed: a file is
  searchable by keyword as soon as its sync returns, by vector a little later.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import date, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import apsw

from memoryd.embeddings.base import EmbeddingProvider, Vectors, embed_query
from memoryd.embeddings.fallback import QueryFallback
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.errors import EmbeddingError, IndexUnavailable
from memoryd.index import db, keyword_sidecar, schema, store
from memoryd.index.keyword_mirror import KeywordMirror
from memoryd.index.keyword_text import has_cjk, with_offsets
from memoryd.index.search import NotInMemory, SearchEnv, as_query_vector, run_search
from memoryd.index.snippets import LineStems, TokenizeOffsets
from memoryd.index.store import CacheKey, FileRow
from memoryd.index.sync import Syncer
from memoryd.index.types import (
    SearchRequest,
    SearchResponse,
    SyncProgress,
    SyncReport,
)
from memoryd.index.validate import check_search_request
from memoryd.index.vector_mirror import VectorMirror, VectorWidthError
from memoryd.index.windows import vector_windows
from memoryd.runtime.config import Config, MiB
from memoryd.runtime.heap import release_free_memory
from memoryd.runtime.logs import get_logger
from memoryd.workspace.layout import (
    MEMORY_DIR,
    MEMORY_FILES,
    SESSIONS_DIR,
    SOURCE_MEMORY,
    SOURCE_SESSIONS,
    Layout,
    daily_rel,
)
from memoryd_client.rate import Rate

log = get_logger("memoryd.index")

HOT_SECONDS = 600  # files changed this recently are stat'ed before each search...
HOT_MAX = 32  # ...at most this many, the most recent
MAX_BACKOFF_SECONDS = 600.0
# Errors that say the index cannot be used now, not that it is damaged: never moved aside.
NOT_CORRUPTION = (
    apsw.BusyError,
    apsw.LockedError,
    apsw.CantOpenError,
    apsw.PermissionsError,
    apsw.ReadOnlyError,
    apsw.IOError,
    apsw.FullError,
)
VECTORS_OFF = "vectors off"  # meta fingerprint of an index opened without sqlite-vec
CHUNKER_VERSION = 2  # bump when chunker output changes: indexes re-chunk on open


class _Reader:
    """A read-only connection with the index's own tokens (porter over keyword_text), with
    offsets into the chunk's text, for snippets."""

    def __init__(self, path: Path) -> None:
        self.conn = db.connect(path, readonly=True)
        porter = self.conn.fts5_tokenizer(*schema.FTS_TOKENIZER)

        def tokenize(raw: bytes) -> list[tuple[int, int, str]]:
            found = porter(
                raw,
                apsw.FTS5_TOKENIZE_DOCUMENT,
                None,
                include_offsets=True,
                include_colocated=False,
            )
            return found  # type: ignore[return-value]  # offsets on, colocated off: (s, e, tok)

        self.tokenize: TokenizeOffsets = with_offsets(tokenize)


class PreparedQuery(NamedTuple):
    vector: Vectors | None  # None: keyword only
    degraded: str | None  # why there is no vector when one was asked for


class WorkspaceIndex:
    def __init__(
        self,
        root: Path,
        db_path: Path,
        config: Config,
        provider: EmbeddingProvider | None,
        provider_reason: str = "",
        fallback: QueryFallback | None = None,
    ) -> None:
        """``fallback``: embeds queries while ``provider`` (openai) fails, when it is the
        same model (embeddings/fallback.py)."""
        self.root = root.resolve()
        self.db_path = db_path
        self.config = config
        self.provider = provider
        self.provider_reason = provider_reason
        self.fallback = fallback
        self._comparing = False  # a fallback comparison is queued on the embedder thread
        # Who embedded the last query: the provider, its fallback while it fails, or nobody
        self._last_query_by = provider.name if provider is not None else "none"
        self.layout = Layout(self.root, config.index.sessions, config.index.extra_paths)
        self.generation = 0
        self.vec = db.probe_vec()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="memoryd-writer")
        self._embedder = ThreadPoolExecutor(1, thread_name_prefix="memoryd-embed")
        self._wconn: apsw.Connection | None = None
        self._readers: queue.SimpleQueue[_Reader] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closed = False
        self._pending_syncs = 0
        self._embedding_running = False
        self._embedded = 0  # chunks given vectors since open: the rate's running count
        self.embed_rate = Rate()
        self._embed_retry: threading.Timer | None = None
        self._failure: tuple[float, str, int] | None = None  # (retry at, reason, failures)
        self._file_state: dict[str, tuple[int, int]] = {}
        self._recent: dict[str, float] = {}
        self._targeted = False
        self._dir_mtimes: dict[str, int] = {}
        self._last_sync: float | None = None
        self._last_report: SyncReport | None = None
        self._has_vec_table = False
        self._rebuilt_reason: str | None = None
        self._qcache: OrderedDict[str, Vectors] = OrderedDict()
        self._line_stems = LineStems()
        self._indexed_sources = (
            (SOURCE_MEMORY, SOURCE_SESSIONS) if config.index.sessions else (SOURCE_MEMORY,)
        )
        self._syncer: Syncer | None = None
        self._mirror = VectorMirror(
            config.index.vector_memory_mb * MiB,
            on_stale=lambda: self._reload_later("vector_mirror", self._load_mirror),
        )
        self._keywords = KeywordMirror(
            config.index.keyword_memory_mb * MiB,
            on_stale=lambda: self._reload_later("keyword_mirror", self._load_keywords),
        )

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        """Open (create, migrate; a corrupt file is moved aside and rebuilt). Fast: no scan;
        the in-memory copies load next on the writer thread (sqlite-vec and FTS5 answer
        meanwhile)."""
        self._writer.submit(self._open_writer).result()
        self._writer.submit(self._load_mirror)
        self._writer.submit(self._load_keywords)
        self._writer.submit(self._upgrade_keyword_text)

    def _reload_later(self, what: str, load: Callable[[], None]) -> None:
        """Called on the writer thread (a hook) when a copy may be off: reload after it."""
        log.warning(f"{what}_reload", workspace=str(self.root))
        with contextlib.suppress(RuntimeError):  # closing
            self._writer.submit(load)

    def _load_mirror(self) -> None:
        conn = self._wconn
        if conn is None or not self.vec.ok:  # a zero budget: the mirror itself stays empty
            return
        started = time.perf_counter()
        try:
            self._mirror.load(conn, store.VEC_TABLE if store.has_vec_table(conn) else None)
        except apsw.Error as exc:  # sqlite-vec keeps answering the KNN
            log.warning("vector_mirror_failed", workspace=str(self.root), error=str(exc))
            return
        log.debug(
            "vector_mirror_loaded",
            workspace=str(self.root),
            ms=round((time.perf_counter() - started) * 1000, 1),
            **self._mirror.stats(),
        )

    def _load_keywords(self, sidecar: bool = True) -> None:
        """``sidecar``: try the copy saved at the last close first (not after a bulk sync)."""
        conn = self._wconn
        if conn is None:
            return
        started = time.perf_counter()
        try:
            saved = keyword_sidecar.path_for(self.db_path)
            origin = "sidecar"
            if not (sidecar and keyword_sidecar.load(self._keywords, saved, conn)):
                origin = "chunks"
                self._keywords.load(
                    conn.execute("SELECT id, text, heading, source, day FROM chunks"),
                    int(db.scalar(conn, "SELECT count(*) FROM chunks")),
                )
        except Exception as exc:  # FTS5 keeps answering; a copy is never worth a crash
            log.warning("keyword_mirror_failed", workspace=str(self.root), error=repr(exc))
            return
        # The load read every chunk through the writer's page cache, and its garbage peaked
        # at ~2x the copy: give both back.
        conn.execute("PRAGMA shrink_memory")
        release_free_memory()
        log.debug(
            "keyword_mirror_loaded",
            workspace=str(self.root),
            origin=origin,
            ms=round((time.perf_counter() - started) * 1000, 1),
            **self._keywords.stats(),
        )

    def _upgrade_keyword_text(self) -> None:
        """An index made before CJK bigrams re-indexes its CJK chunks' keywords (once)."""
        conn = self._wconn
        if conn is None:
            return
        started = time.perf_counter()
        try:
            redone = schema.upgrade_keyword_text(conn)
        except apsw.Error as exc:  # rolled back: the old keywords keep answering
            log.error("keyword_upgrade_failed", workspace=str(self.root), error=str(exc))
            return
        if redone:  # None: done before; 0: nothing in CJK
            log.info(
                "keyword_text_upgraded",
                workspace=str(self.root),
                chunks=redone,
                ms=round((time.perf_counter() - started) * 1000, 1),
            )

    def _open_writer(self) -> None:
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        opened: apsw.Connection | None = None
        try:
            opened = db.connect(self.db_path)
            problem = db.quick_check(opened)
            if problem is None:
                schema.migrate(opened)
        except NOT_CORRUPTION as exc:
            # Not corruption: moving the file aside would throw a good index away.
            if opened is not None:
                opened.close()
            raise IndexUnavailable(f"cannot open index {self.db_path}: {exc}") from None
        except apsw.Error as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem is not None or opened is None:
            if opened is not None:
                opened.close()
            self._move_aside(problem or "could not open")
            opened = db.connect(self.db_path)
            schema.migrate(opened)
        conn = opened
        # The copies follow committed transactions only: a rolled-back write never shows.
        self._mirror.follow(conn, "vector_mirror")
        self._keywords.follow(conn, "keyword_mirror")
        try:
            self._apply_fingerprint(conn)
        except NOT_CORRUPTION as exc:
            conn.close()
            raise IndexUnavailable(f"cannot open index {self.db_path}: {exc}") from None
        self._wconn = conn
        self._has_vec_table = store.has_vec_table(conn)
        self._file_state = {r.path: (r.mtime_ns, r.size) for r in store.read_files(conn).values()}
        self._syncer = Syncer(
            conn,
            self.layout,
            load_tokenizer,
            self.config.index.chunk_tokens,
            self.config.index.chunk_overlap,
            self.config.index.max_file_bytes,
            on_commit=self._on_commit,
            mirror=self._mirror,
            keywords=self._keywords,
        )

    def _move_aside(self, problem: str) -> None:
        aside = self.db_path.with_name(self.db_path.name + ".corrupt")
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(self.db_path) + suffix).unlink()
        if self.db_path.exists():
            os.replace(self.db_path, aside)
        self._rebuilt_reason = f"index was corrupt ({problem}); rebuilt from the files"
        log.error(
            "index_corrupt",
            path=str(self.db_path),
            problem=problem,
            moved_to=str(aside),
            action="rebuilding from the markdown files",
        )

    def _apply_fingerprint(self, conn: apsw.Connection) -> None:
        """A chunking change re-chunks every file; an embedding change re-embeds every chunk.

        Both happen in the background: keyword search keeps answering meanwhile.
        """
        cfg = self.config.index
        meta = schema.get_meta(conn)
        chunking = f"{cfg.chunk_tokens}/{cfg.chunk_overlap}/{CHUNKER_VERSION}"
        p = self.provider
        if not self.vec.ok:
            # Vectors written now could not follow later deletes (the vec0 table cannot be
            # touched without sqlite-vec), so none are kept: this fingerprint makes the first
            # open with sqlite-vec again drop what is left and re-embed (mostly from the cache).
            embedding = VECTORS_OFF
        elif p is not None:
            embedding = f"{p.name}|{p.model}|{p.provider_key}|windows={cfg.vector_window_tokens}|l2"
        else:
            embedding = "none"
        with conn:
            if meta.get("chunking") != chunking:
                conn.execute("UPDATE files SET hash = ''")
            if meta.get("embedding") != embedding:
                store.drop_vectors(conn, self._mirror)
            schema.set_meta(
                conn,
                {
                    "schema_version": str(schema.SCHEMA_VERSION),
                    "chunking": chunking,
                    "embedding": embedding,
                },
            )
            if p is not None and p.dims and self.vec.ok:
                store.create_vec_table(conn, p.dims)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._changed.notify_all()
            if self._embed_retry is not None:
                self._embed_retry.cancel()
        self._embedder.shutdown(wait=True, cancel_futures=True)
        self._writer.shutdown(wait=True, cancel_futures=True)
        while True:
            try:
                self._readers.get_nowait().conn.close()
            except queue.Empty:
                break
        if self._wconn is not None:
            try:  # the writer has stopped: the copy is the index's last commit
                keyword_sidecar.save(self._keywords, keyword_sidecar.path_for(self.db_path),
                                     self._wconn)
            except Exception as exc:  # the next start rebuilds it: slower, nothing lost
                log.warning("keyword_sidecar_failed", workspace=str(self.root), error=repr(exc))
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
            self._pending_syncs += 1
        try:
            return self._writer.submit(self._run_sync, path_list, full, progress)
        except RuntimeError:
            with self._lock:
                self._pending_syncs -= 1
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
            assert self._syncer is not None, "open() first"
            if paths is not None:
                paths = self._expand_dirs(paths)
            self._targeted = paths is not None
            report = self._syncer.run(paths, full, progress)
        finally:
            with self._lock:
                self._pending_syncs -= 1
            if self._keywords.suspended:  # a bulk run: one load now (FTS5 answers meanwhile)
                self._load_keywords(sidecar=False)
        report.seconds = time.monotonic() - started
        if paths is None:
            self._dir_mtimes = self._read_dir_mtimes()
            self._last_report = report
            if self._wconn is not None:
                # A whole scan fills the writer's page cache with rows later writes rarely
                # need again; a daemon with many workspaces would keep each one's for good.
                self._wconn.execute("PRAGMA shrink_memory")
                release_free_memory()
        self._last_sync = time.time()
        if report.files_changed or report.files_removed:
            log.info(
                "index_synced",
                workspace=str(self.root),
                **{k: v for k, v in report.to_dict().items() if k != "skipped"},
            )
        self._kick_embedder()
        return report

    def _expand_dirs(self, paths: list[Path]) -> list[Path]:
        """A directory event (moved or deleted folder) stands for every file under it."""
        out: list[Path] = []
        for p in paths:
            rel = self.layout.rel(Path(os.path.abspath(p)))
            if rel is not None and Path(p).is_dir():
                out += [f.path for f in self.layout.iter_files() if f.rel.startswith(rel + "/")]
            elif rel is not None and not Path(p).exists():
                out += [self.root / k for k in self._file_state if k.startswith(rel + "/")]
            out.append(p)
        return out

    def _on_commit(self, rel: str, row: FileRow | None) -> None:
        with self._lock:
            if row is None:
                self._file_state.pop(rel, None)
            else:
                self._file_state[rel] = (row.mtime_ns, row.size)
            if self._targeted:  # a file someone is writing now, not a startup scan
                self._recent[rel] = time.monotonic()
                if len(self._recent) > HOT_MAX:
                    del self._recent[min(self._recent, key=self._recent.__getitem__)]
            self.generation += 1
            self._changed.notify_all()

    # ------------------------------------------------------------------ embedding

    def _cache_key(self) -> CacheKey:
        assert self.provider is not None
        return CacheKey(self.provider.name, self.provider.model, self.provider.provider_key)

    def _kick_embedder(self) -> None:
        if self.provider is None or not self.vec.ok:
            return
        with self._lock:
            if self._closed or self._embedding_running:
                return
            if self._failure is not None and time.monotonic() < self._failure[0]:
                return  # a retry timer is already set
            self._embedding_running = True
        try:
            self._embedder.submit(self._embed_loop)
        except RuntimeError:  # shutting down
            with self._lock:
                self._embedding_running = False

    def _embed_loop(self) -> None:
        try:
            while not self._closed:
                if not self._embed_batch():
                    break
        except Exception as exc:  # never silent: the future of this loop is not awaited
            log.exception("embedding_loop_failed", workspace=str(self.root))
            self._record_failure(f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._embedding_running = False
                self._changed.notify_all()

    def _embed_batch(self) -> bool:
        """Embed one batch of chunks waiting for vectors; False when done or failing."""
        assert self.provider is not None
        with self._reader() as r:
            batch = store.read_pending(r.conn, self.config.embedding.batch_size * 4)
        if not batch:
            return False
        tokenizer = load_tokenizer()
        budget = self.config.index.vector_window_tokens
        windows = {
            c.id: [
                (store.text_hash(w), w)
                for w in vector_windows(c.heading, c.text, tokenizer, budget)
            ]
            for c in batch
        }
        hashes = {h for ws in windows.values() for h, _ in ws}
        dims = self.provider.dims
        with self._reader() as r:
            cached = store.read_cached(r.conn, self._cache_key(), hashes, dims) if dims else {}
        need = {h: w for ws in windows.values() for h, w in ws if h not in cached}
        try:
            vecs = self.provider.embed(list(need.values())) if need else None
        except EmbeddingError as exc:
            self._record_failure(str(exc))
            return False
        self._clear_failure()
        if vecs is not None:
            self._compare_fallback()  # the endpoint answers: a moment to tell its model
        found = dict(cached)
        if vecs is not None:
            found.update(zip(need, vecs, strict=True))
        items = [(c, [(h, found[h]) for h, _ in windows[c.id]]) for c in batch]
        self._writer.submit(self._write_vectors, items).result()
        self._embedded += len(batch)
        self.embed_rate.add(self._embedded)
        return True

    def _write_vectors(
        self, items: list[tuple[store.PendingChunk, list[tuple[str, Vectors]]]]
    ) -> None:
        conn = self._wconn
        assert conn is not None
        if not items or not items[0][1]:
            return
        dims = int(items[0][1][0][1].shape[0])
        with conn:
            table_dims = store.vec_table_dims(conn)
            if table_dims is not None and table_dims != dims:
                # The endpoint now answers with another width: start the vectors over.
                log.warning(
                    "embedding_dims_changed", workspace=str(self.root), old=table_dims, new=dims
                )
                store.drop_vectors(conn, self._mirror)
                table_dims = None
            if table_dims is None:
                store.create_vec_table(conn, dims)
                self._has_vec_table = True
            store.write_vectors(
                conn,
                self._cache_key(),
                items,
                self.config.embedding.cache_max_entries,
                self._mirror,
            )
        with self._lock:
            self.generation += 1
            self._changed.notify_all()

    def _rebuild_vectors_if_mismatched(self, dims: int) -> None:
        """The provider's width no longer fits the vector table: start the vectors over."""

        def rebuild() -> None:
            conn = self._wconn
            assert conn is not None
            table = store.vec_table_dims(conn)
            if table is not None and table != dims:
                log.warning("embedding_dims_changed", workspace=str(self.root), old=table, new=dims)
                with conn:
                    store.drop_vectors(conn, self._mirror)
                self._has_vec_table = False
            self._kick_embedder()

        with contextlib.suppress(RuntimeError):  # closing
            self._writer.submit(rebuild)

    def _record_failure(self, reason: str) -> None:
        with self._lock:
            failures = (self._failure[2] if self._failure else 0) + 1
            delay = min(
                self.config.embedding.retry_after_seconds * 2 ** (failures - 1), MAX_BACKOFF_SECONDS
            )
            self._failure = (time.monotonic() + delay, reason, failures)
            if self._embed_retry is not None:
                self._embed_retry.cancel()
            if not self._closed:
                self._embed_retry = threading.Timer(delay, self._kick_embedder)
                self._embed_retry.daemon = True
                self._embed_retry.start()
            self._changed.notify_all()
        log.warning(
            "embedding_failed",
            workspace=str(self.root),
            reason=reason,
            retry_in_s=round(delay, 1),
            failures=failures,
        )

    def _clear_failure(self) -> None:
        if self._failure is not None:
            with self._lock:
                self._failure = None
            log.info("embedding_recovered", workspace=str(self.root))

    def wait_embedded(
        self, timeout: float | None = None, progress: Callable[[SyncProgress], None] | None = None
    ) -> bool:
        """Block until no chunk waits for a vector; False on timeout or a failing provider."""
        if self.provider is None or not self.vec.ok:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        total: int | None = None
        while True:
            with self._reader() as r:
                pending = store.count_pending(r.conn)
            total = max(total or 0, pending)
            if progress is not None and total:
                progress(SyncProgress("embedding", total - pending, total))
            if pending == 0:
                return True
            with self._lock:
                if self._closed or self._failure is not None:
                    return False
                if not self._embedding_running and self._pending_syncs == 0:
                    self._lock.release()
                    try:
                        self._kick_embedder()
                    finally:
                        self._lock.acquire()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(0.5 if left is None else min(left, 0.5))

    # ------------------------------------------------------------------ reading

    @contextlib.contextmanager
    def _reader(self) -> Iterator[_Reader]:
        try:
            r = self._readers.get_nowait()
        except queue.Empty:
            r = _Reader(self.db_path)
        try:
            yield r
        finally:
            self._readers.put(r)

    def _query_vector(self, query: str) -> Vectors:
        assert self.provider is not None
        with self._lock:
            hit = self._qcache.get(query)
            if hit is not None:
                self._qcache.move_to_end(query)
                return hit
            failure = self._failure
        if failure is not None and time.monotonic() < failure[0]:
            raise EmbeddingError(f"{failure[1]} (retrying in {failure[0] - time.monotonic():.0f}s)")
        vec = as_query_vector(embed_query(self.provider, query))
        self._compare_fallback_soon()
        with self._lock:
            self._qcache[query] = vec
            while len(self._qcache) > self.config.embedding.query_cache_entries:
                self._qcache.popitem(last=False)
        return vec

    def embeds_query(self, req: SearchRequest) -> bool:
        """Whether searching ``req`` would run the embedding model (its vector is not cached):
        the daemon then prepares it on another thread than the searches'."""
        if req.mode == "keyword" or not self.vec.ok or self.provider is None:
            return False
        if self._not_embeddable(req.query) is not None:
            return False
        with self._lock:
            return req.query not in self._qcache

    def _not_embeddable(self, query: str) -> str | None:
        """Why the query gets no vector though vectors are on: an English-only model (the
        bundled MiniLM) puts any two CJK texts close together, so its nearest chunks to a
        Chinese, Japanese or Korean query are noise, found even when no note shares a word."""
        p = self.provider
        if p is None or not getattr(p, "english_only", False) or not has_cjk(query):
            return None
        return (
            f"{p.model} is an English model: a query in Chinese, Japanese or Korean is "
            "searched by keyword (embedding.model_path takes a multilingual model)"
        )

    def prepare_query(self, req: SearchRequest) -> PreparedQuery:
        """The query vector ``req`` needs (None for keyword), or why there is none."""
        if req.mode == "keyword":
            return PreparedQuery(None, None)
        if not self.vec.ok:
            return PreparedQuery(None, f"vectors off: {self.vec.reason}")
        if self.provider is None:
            return PreparedQuery(
                None, f"vectors off: {self.provider_reason or 'no embedding provider'}"
            )
        if (why := self._not_embeddable(req.query)) is not None:
            return PreparedQuery(None, why)
        try:
            vec = self._query_vector(req.query)
        except EmbeddingError as exc:
            return self._fallback_query(req.query, exc)
        self._last_query_by = self.provider.name
        return PreparedQuery(vec, None)

    def _fallback_query(self, query: str, failed: EmbeddingError) -> PreparedQuery:
        """While the provider fails: the fallback's vector when it is the same model."""
        fb = self.fallback
        try:
            vec = fb.embed_query(query) if fb is not None else None
        except EmbeddingError as exc:
            failed = EmbeddingError(f"{failed}; the fallback failed too: {exc}")
            vec = None
        name = self.provider.name if self.provider is not None else "none"
        if fb is None or vec is None:
            self._last_query_by = f"none (keyword only while {name} fails)"
            return PreparedQuery(None, f"query embedding failed, keyword results only: {failed}")
        self._last_query_by = f"{fb.provider.name} (fallback while {name} fails)"
        return PreparedQuery(
            as_query_vector(vec),
            f"query embedded by the fallback {fb.provider.name} {fb.provider.model} (the same "
            f"model) while the provider fails: {failed}",
        )

    def _compare_fallback(self) -> None:
        """Tell (once) whether the fallback is the provider's model; on the embedder thread."""
        fb, p = self.fallback, self.provider
        self._comparing = False
        if fb is not None and p is not None and fb.same_model is None:
            fb.compare(p)

    def _compare_fallback_soon(self) -> None:
        fb = self.fallback
        if fb is None or fb.same_model is not None or self._comparing:
            return
        self._comparing = True
        with contextlib.suppress(RuntimeError):  # closing
            self._embedder.submit(self._compare_fallback)

    def search(self, req: SearchRequest, prepared: PreparedQuery | None = None) -> SearchResponse:
        """``prepared``: prepare_query(req) done beforehand (elsewhere); None: done here."""
        resp = self._search(req, prepared, memory_only=False)
        assert resp is not None
        return resp

    def search_in_memory(
        self, req: SearchRequest, prepared: PreparedQuery | None = None
    ) -> SearchResponse | None:
        """search(), when the in-memory copies can rank it (search.answers_from_memory); else
        None, having done nothing costly. It never runs the embedding model: without a
        ``prepared`` query vector, only a cached one will do."""
        if prepared is None:
            prepared = self._prepare_cached(req)
            if prepared is None:
                return None
        return self._search(req, prepared, memory_only=True)

    def _prepare_cached(self, req: SearchRequest) -> PreparedQuery | None:
        """prepare_query(req) where that runs no model: None when the vector is not cached."""
        if (
            req.mode == "keyword"
            or not self.vec.ok
            or self.provider is None
            or self._not_embeddable(req.query) is not None
        ):
            return self.prepare_query(req)
        with self._lock:
            vec = self._qcache.get(req.query)
            if vec is None:
                return None
            self._qcache.move_to_end(req.query)
        return PreparedQuery(vec, None)

    def _search(
        self, req: SearchRequest, prepared: PreparedQuery | None, memory_only: bool
    ) -> SearchResponse | None:
        started = time.perf_counter()
        check_search_request(req)
        qvec, degraded = prepared or self.prepare_query(req)
        usable = self.vec.ok and self._has_vec_table
        env = SearchEnv(
            self.config.search,
            self._line_stems,
            self._mirror,
            self.config.index.vector_window_tokens,
            self._indexed_sources,
            self._keywords,
        )
        with self._reader() as r:
            if qvec is not None:
                pending = store.count_pending(r.conn)
                if pending:
                    degraded = f"{pending} chunks still waiting for vectors"
                if not usable:
                    degraded = f"vectors not built yet ({pending} chunks pending)"
            try:
                hits, mode_used = run_search(
                    r.conn, r.tokenize, req, env, qvec, usable, memory_only
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
                hits, mode_used = run_search(r.conn, r.tokenize, req, env, None, False)
        p = self.provider
        return SearchResponse(
            results=hits,
            provider=p.name if p else "none",
            model=p.model if p else "",
            mode_used=mode_used,
            took_ms=(time.perf_counter() - started) * 1000,
            index_generation=self.generation,
            pending_files=self._pending_syncs,
            degraded=degraded,
        )

    # ------------------------------------------------------------------ freshness

    def is_indexed_path(self, path: Path) -> bool:
        """Whether a change at ``path`` (absolute) concerns this index (the watcher's filter)."""
        rel = self.layout.rel(Path(os.path.abspath(path)))
        if rel is None:
            return False
        with self._lock:  # the writer thread changes _file_state meanwhile
            known = rel in self._file_state or any(
                k.startswith(rel + "/") for k in self._file_state
            )
        if known or self.layout.classify(rel) is not None:
            return True
        return (rel in (MEMORY_DIR, SESSIONS_DIR) or rel.startswith(MEMORY_DIR + "/")) and Path(
            path).is_dir()

    def _read_dir_mtimes(self) -> dict[str, int]:
        out = {}
        root = str(self.root)
        for rel in ("", MEMORY_DIR, SESSIONS_DIR):
            with contextlib.suppress(OSError):
                out[rel] = os.stat(os.path.join(root, rel)).st_mtime_ns
        return out

    def stale_hot_paths(self) -> list[Path]:
        """Recently active files whose (mtime, size) differ from the index: a cheap check
        (a few stats) that lets a search see a write the watcher has not reported yet."""
        today = date.today()
        hot = {*MEMORY_FILES, daily_rel(today), daily_rel(today - timedelta(days=1))}
        now = time.monotonic()
        with self._lock:  # only the hot entries: this runs before every search
            hot |= {rel for rel, t in self._recent.items() if now - t < HOT_SECONDS}
            state = {rel: self._file_state.get(rel) for rel in hot}
        stale = []
        root = str(self.root)
        for rel in hot:
            try:
                st = os.stat(os.path.join(root, rel))
                current: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
            except OSError:
                current = None
            if current != state[rel] and (current is None or self.layout.classify(rel)):
                stale.append(self.root / rel)
        if self._dir_mtimes and self._read_dir_mtimes() != self._dir_mtimes:
            with self._lock:
                known = set(self._file_state)
            present = {f.rel for f in self.layout.iter_files()}
            stale += [self.root / rel for rel in sorted(present ^ known)]
            self._dir_mtimes = self._read_dir_mtimes()
        return stale

    # ------------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        with self._reader() as r:
            files = int(db.scalar(r.conn, "SELECT count(*) FROM files"))
            chunks = int(db.scalar(r.conn, "SELECT count(*) FROM chunks"))
            pending = store.count_pending(r.conn)
            skipped = dict(
                r.conn.execute(
                    "SELECT path, skipped_reason FROM files WHERE skipped_reason IS NOT NULL"
                )
            )
            malformed = int(db.scalar(r.conn, "SELECT coalesce(sum(malformed), 0) FROM files"))
        degraded = []
        if not self.vec.ok:
            degraded.append(f"vectors off: {self.vec.reason}")
        if self.provider is None:
            degraded.append(f"keyword only: {self.provider_reason or 'no embedding provider'}")
        failure = self._failure
        if failure is not None:
            degraded.append(
                f"embedding provider failing: {failure[1]} "
                f"(retry in {max(0.0, failure[0] - time.monotonic()):.0f}s)"
            )
        if self._rebuilt_reason:
            degraded.append(self._rebuilt_reason)
        p = self.provider
        return {
            "path": str(self.root),
            "index": str(self.db_path),
            "files": files,
            "chunks": chunks,
            "pending_vectors": pending if p is not None and self.vec.ok else 0,
            "pending_files": self._pending_syncs,
            "index_generation": self.generation,
            "last_sync": self._last_sync,
            "malformed_lines": malformed,
            # Who embeds queries now: the provider, its fallback while it fails, or nobody.
            "query_provider": self._last_query_by
            if p is not None and self.vec.ok
            else "none",
            "provider": {
                "name": p.name if p else "none",
                "model": p.model if p else "",
                "dims": p.dims if p else None,
                "reason": self.provider_reason,
            },
            "vector_ready": bool(
                p is not None and self.vec.ok and self._has_vec_table and pending == 0
            ),
            "sqlite_vec": self.vec.version or None,
            # The KNN's engine: the in-memory copy once loaded and within index.vector_memory_mb
            "vector_scan": (
                None
                if p is None or not self.vec.ok
                else "memory"
                if self._mirror.usable
                else "sqlite-vec"
            ),
            # BM25's engine: the in-memory copy once loaded and within index.keyword_memory_mb
            "keyword_scan": self._keywords.scan,
            "degraded": degraded,
            "skipped": {**self.layout.links_outside(), **skipped},
            **self._embedding_progress(pending if p is not None and self.vec.ok else 0),
        }

    def _embedding_progress(self, pending: int) -> dict[str, Any]:
        """``embedding: {rate_per_s, eta_s}`` while chunks wait for vectors and some got
        them within the last seconds (chunks per second; the model's pace on this machine)."""
        rate = self.embed_rate.per_second() if pending else None
        if rate is None:
            return {}
        return {"embedding": {"rate_per_s": round(rate, 2), "eta_s": round(pending / rate, 1)}}
