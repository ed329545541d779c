"""The index's use of its embedding provider: the background loop that gives chunks their
vectors, the cache of query vectors, and the back-off both share while the provider fails.

Chunks are committed by keyword first; this loop (its own thread) reads the ones waiting
for vectors, embeds them in batches (the on-disk cache answers repeated texts) and hands the
vectors to the writer thread. A failing provider is retried after a growing delay, and
meanwhile queries are not embedded either: searches answer by keyword and say why.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.embeddings.base import EmbeddingProvider, Vectors, as_query_vector, embed_query
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.errors import EmbeddingError, IndexUnavailable
from memoryd.index import store
from memoryd.index.readers import ReaderPool
from memoryd.index.store import CacheKey, PendingChunk
from memoryd.index.types import SyncProgress
from memoryd.index.vectors.windows import vector_windows
from memoryd.runtime.config import EmbeddingConfig
from memoryd.runtime.heap import release_free_memory
from memoryd.runtime.logs import get_logger
from memoryd.runtime.priority import lower_this_thread
from memoryd_client.rate import Rate

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why
else:
    from memoryd.named_tuple import NamedTuple

log = get_logger("memoryd.index")

MAX_BACKOFF_SECONDS = 600.0
# A batch (chunks read, embedded, written in one transaction) is sized to take about this
# long at the pace measured so far: status's rate (two batches within 10 s) and reindex
# --wait's progress move at least this often, even at the local model's 2-20 chunks/s (a
# fixed 64 chunks took up to 30 s). Smaller batches pad more: windows are sorted by length
# within a batch; on LoCoMo +0.6% tokens at 64 chunks, +1.6% at 16, +2.6% at 8.
BATCH_SECONDS = 4.0
FIRST_BATCH = 8  # chunks, before any pace is known
Embedded = list[tuple[PendingChunk, list[tuple[str, Vectors]]]]  # a chunk, its windows' vectors
WriteVectors = Callable[[CacheKey, Embedded], None]


class Failure(NamedTuple):
    retry_at: float  # monotonic
    reason: str
    failures: int  # in a row


class Embedder:
    def __init__(
        self,
        root: Path,
        provider: EmbeddingProvider,
        cfg: EmbeddingConfig,
        window_tokens: int,
        readers: ReaderPool,
        write_vectors: WriteVectors,
        syncing: Callable[[], bool],
        provider_answered: Callable[[], None] = lambda: None,
    ) -> None:
        """``write_vectors`` runs on the index's writer thread and returns once committed;
        ``syncing``: whether a sync is queued (it starts this loop itself when done);
        ``provider_answered``: called when the provider embedded something."""
        self.root = root
        self.provider = provider
        self.cfg = cfg
        self.window_tokens = window_tokens
        self._readers = readers
        self._write_vectors = write_vectors
        self._syncing = syncing
        self._provider_answered = provider_answered
        self.key = CacheKey(provider.name, provider.model, provider.provider_key)
        # Lowered priority (runtime/priority.py): searches never wait behind a first index.
        self._pool = ThreadPoolExecutor(
            1, thread_name_prefix="memoryd-embed", initializer=lower_this_thread
        )
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closed = False
        self._running = False
        self._retry: threading.Timer | None = None
        self.failure: Failure | None = None
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        self._embedded = 0  # chunks given vectors since open: the rate's running count
        self._pace: float | None = None  # chunks per second of the last batch
        self.rate = Rate()  # chunks per second, for status

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._changed.notify_all()
            if self._retry is not None:
                self._retry.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def run_later(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on this embedder's thread, after what it is doing (nothing if closing)."""
        with contextlib.suppress(RuntimeError):  # shutting down
            self._pool.submit(fn)

    # -- chunks ------------------------------------------------------------------------

    def kick(self) -> None:
        """Start the loop unless it runs, or a failure's retry timer will start it."""
        with self._lock:
            if self._closed or self._running:
                return
            if self.failure is not None and time.monotonic() < self.failure.retry_at:
                return
            self._running = True
        try:
            self._pool.submit(self._loop)
        except RuntimeError:  # shutting down
            with self._lock:
                self._running = False

    def _loop(self) -> None:
        embedded = False
        try:
            while not self._closed:
                if not self._batch():
                    break
                embedded = True
            if embedded:  # a burst of model runs and tokenizing ends: its free pages go back
                release_free_memory()
        except IndexUnavailable:  # damaged, being rebuilt: the rebuild's sync kicks us again
            pass
        except Exception as exc:  # never silent: the future of this loop is not awaited
            log.exception("embedding_loop_failed", workspace=str(self.root))
            self._record_failure(f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._running = False
                self._changed.notify_all()

    def _batch(self) -> bool:
        """Embed one batch of chunks waiting for vectors; False when done or failing."""
        started = time.monotonic()
        with self._readers.borrow() as r:
            batch = store.read_pending(r.conn, self._batch_chunks())
        if not batch:
            return False
        tokenizer = load_tokenizer()
        windows = {
            c.id: [
                (store.text_hash(w), w)
                for w in vector_windows(c.heading, c.text, tokenizer, self.window_tokens)
            ]
            for c in batch
        }
        hashes = {h for ws in windows.values() for h, _ in ws}
        dims = self.provider.dims
        with self._readers.borrow() as r:
            cached = store.read_cached(r.conn, self.key, hashes, dims) if dims else {}
        need = {h: w for ws in windows.values() for h, w in ws if h not in cached}
        try:
            vecs = self.provider.embed(list(need.values())) if need else None
        except EmbeddingError as exc:
            self._record_failure(str(exc))
            return False
        self._clear_failure()
        if vecs is not None:
            self._provider_answered()
        found = dict(cached)
        if vecs is not None:
            found.update(zip(need, vecs, strict=True))
        self._write_vectors(
            self.key, [(c, [(h, found[h]) for h, _ in windows[c.id]]) for c in batch]
        )
        self._embedded += len(batch)
        self.rate.add(self._embedded)
        self._pace = len(batch) / max(time.monotonic() - started, 1e-3)
        with self._lock:
            self._changed.notify_all()
        return True

    def _batch_chunks(self) -> int:
        most = self.cfg.batch_size * 4
        if self._pace is None:
            return min(most, FIRST_BATCH)
        return max(1, min(most, int(self._pace * BATCH_SECONDS)))

    def _record_failure(self, reason: str) -> None:
        with self._lock:
            count = (self.failure.failures if self.failure else 0) + 1
            delay = min(self.cfg.retry_after_seconds * 2 ** (count - 1), MAX_BACKOFF_SECONDS)
            self.failure = Failure(time.monotonic() + delay, reason, count)
            if self._retry is not None:
                self._retry.cancel()
            if not self._closed:
                self._retry = threading.Timer(delay, self.kick)
                self._retry.daemon = True
                self._retry.start()
            self._changed.notify_all()
        log.warning(
            "embedding_failed",
            workspace=str(self.root),
            reason=reason,
            retry_in_s=round(delay, 1),
            failures=count,
        )

    def _clear_failure(self) -> None:
        if self.failure is not None:
            with self._lock:
                self.failure = None
            log.info("embedding_recovered", workspace=str(self.root))

    def wait_done(
        self, timeout: float | None, progress: Callable[[SyncProgress], None] | None
    ) -> bool:
        """Block until no chunk waits for a vector; False on timeout or a failing provider."""
        deadline = None if timeout is None else time.monotonic() + timeout
        total: int | None = None
        while True:
            with self._readers.borrow() as r:
                pending = store.count_pending(r.conn)
            total = max(total or 0, pending)
            if progress is not None and total:
                progress(SyncProgress("embedding", total - pending, total))
            if pending == 0:
                return True
            with self._lock:
                if self._closed or self.failure is not None:
                    return False
                if not self._running and not self._syncing():
                    self._lock.release()
                    try:
                        self.kick()
                    finally:
                        self._lock.acquire()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(0.5 if left is None else min(left, 0.5))

    # -- queries -----------------------------------------------------------------------

    def cached_query(self, query: str) -> Vectors | None:
        """The query's vector if it was embedded lately; never runs the model."""
        with self._lock:
            vec = self._queries.get(query)
            if vec is not None:
                self._queries.move_to_end(query)
            return vec

    def has_query(self, query: str) -> bool:
        with self._lock:
            return query in self._queries

    def query_vector(self, query: str) -> Vectors:
        """The query's vector: cached, or embedded now (EmbeddingError while failing)."""
        hit = self.cached_query(query)
        if hit is not None:
            return hit
        failure = self.failure
        if failure is not None and time.monotonic() < failure.retry_at:
            left = failure.retry_at - time.monotonic()
            raise EmbeddingError(f"{failure.reason} (retrying in {left:.0f}s)")
        vec = as_query_vector(embed_query(self.provider, query))
        self._provider_answered()
        with self._lock:
            self._queries[query] = vec
            while len(self._queries) > self.cfg.query_cache_entries:
                self._queries.popitem(last=False)
        return vec
