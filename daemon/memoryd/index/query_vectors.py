"""A search's query vector: which provider embeds it, and why a search gets none.

The provider may be chosen after the index opens (a model still loading: keyword results
until then), may fail (its fallback then embeds queries when it is the same model, else
keyword results, saying why), or may be an English-only model that a CJK query would only
confuse. Every such reason reaches the response's ``degraded``; status shows who embedded
the last query.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from memoryd.embeddings.base import EmbeddingProvider, Vectors, as_query_vector
from memoryd.embeddings.fallback import QueryFallback
from memoryd.errors import EmbeddingError
from memoryd.index.embedder import Embedder
from memoryd.index.keyword.text import has_cjk
from memoryd.index.types import SearchRequest
from memoryd.sqlite import VecSupport

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why
else:
    from memoryd.named_tuple import NamedTuple

PROVIDER_LOADING = "the embedding provider is still loading: keyword results only"


class PreparedQuery(NamedTuple):
    vector: Vectors | None  # None: keyword only
    degraded: str | None  # why there is no vector when one was asked for


class QueryVectors:
    def __init__(
        self,
        vec: VecSupport,
        provider: EmbeddingProvider | None,
        reason: str,
        fallback: QueryFallback | None,
        pending: bool,
    ) -> None:
        """``pending``: the provider is still being chosen; ``use`` gives it later."""
        self.vec = vec
        self.provider = provider
        self.reason = reason
        self.fallback = fallback
        # Set by the index once it has made it (None: keyword search only).
        self.embedder: Embedder | None = None
        self._comparing = False  # a fallback comparison is queued on the embedder thread
        # Who embedded the last query: the provider, its fallback while it fails, or nobody
        self.last_by = provider.name if provider is not None else "none"
        self._known = threading.Event()
        if not pending:
            self._known.set()

    @property
    def pending(self) -> bool:
        """The provider is still being chosen: keyword search only, for now."""
        return not self._known.is_set()

    def wait_known(self, timeout: float) -> bool:
        return self._known.wait(timeout)

    def use(
        self,
        provider: EmbeddingProvider | None,
        reason: str,
        fallback: QueryFallback | None,
        embedder: Embedder | None,
    ) -> None:
        """The provider chosen after the index opened, with the embedder made for it."""
        # The embedder before the flag: a search that sees the provider finds its embedder.
        self.embedder = embedder
        self.fallback = fallback
        self.reason = reason
        self.last_by = provider.name if provider is not None else "none"
        self.provider = provider
        self._known.set()

    def embeds(self, req: SearchRequest) -> bool:
        """Whether preparing ``req`` would run the embedding model (its vector is not
        cached): the daemon then prepares it on another thread than the searches'."""
        if req.mode == "keyword" or self.embedder is None or self.pending:
            return False
        if self._not_embeddable(req.query) is not None:
            return False
        return not self.embedder.has_query(req.query)

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

    def prepare(self, req: SearchRequest) -> PreparedQuery:
        """The query vector ``req`` needs (None for keyword), or why there is none."""
        if req.mode == "keyword":
            return PreparedQuery(None, None)
        if self.pending:
            return PreparedQuery(None, PROVIDER_LOADING)
        if not self.vec.ok:
            return PreparedQuery(None, f"vectors off: {self.vec.reason}")
        if self.provider is None:
            return PreparedQuery(None, f"vectors off: {self.reason or 'no embedding provider'}")
        if (why := self._not_embeddable(req.query)) is not None:
            return PreparedQuery(None, why)
        assert self.embedder is not None  # a provider and sqlite-vec
        try:
            vec = self.embedder.query_vector(req.query)
        except EmbeddingError as exc:
            return self._fallback_query(req.query, exc)
        self.last_by = self.provider.name
        return PreparedQuery(vec, None)

    def prepare_cached(self, req: SearchRequest) -> PreparedQuery | None:
        """prepare(req) where that runs no model: None when the vector is not cached."""
        if (
            req.mode == "keyword"
            or self.embedder is None
            or self.pending
            or self._not_embeddable(req.query) is not None
        ):
            return self.prepare(req)
        vec = self.embedder.cached_query(req.query)
        return None if vec is None else PreparedQuery(vec, None)

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
            self.last_by = f"none (keyword only while {name} fails)"
            return PreparedQuery(None, f"query embedding failed, keyword results only: {failed}")
        self.last_by = f"{fb.provider.name} (fallback while {name} fails)"
        return PreparedQuery(
            as_query_vector(vec),
            f"query embedded by the fallback {fb.provider.name} {fb.provider.model} (the same "
            f"model) while the provider fails: {failed}",
        )

    def compare_fallback_soon(self) -> None:
        """The embedder's hook once the provider answered: tell (once, on the embedder's
        thread) whether the fallback is the provider's model."""
        fb = self.fallback
        if fb is None or fb.same_model is not None or self._comparing or self.embedder is None:
            return
        self._comparing = True
        self.embedder.run_later(self._compare_fallback)

    def _compare_fallback(self) -> None:
        fb, p = self.fallback, self.provider
        self._comparing = False
        if fb is not None and p is not None and fb.same_model is None:
            fb.compare(p)
