"""``[embedding] fallback = "local"``: who embeds a query while the openai endpoint fails.

The index's vectors came from the endpoint's model. A query vector from another model lives
in another space: its nearest chunks would be noise. So the local model stands in only when
it *is* the endpoint's model (Ollama's all-minilm is the bundled MiniLM; a model_path folder
can hold the model a server runs): a few probe texts are embedded by both, once, while the
endpoint answers, and every probe's two vectors must agree (cosine >= SAME_MODEL_COSINE; an
int8 and an fp32 copy of one model agree to ~0.99). Until that is known, or when they
differ, a failing endpoint means keyword-only search, as without a fallback.
"""

from __future__ import annotations

import threading

from memoryd.embeddings.base import EmbeddingProvider, Vectors, embed_query
from memoryd.errors import EmbeddingError
from memoryd.runtime.lazy_numpy import np
from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.embeddings")

PROBES = (
    "Meeting notes: the database migration moved to Friday.",
    "What did the user say about their sister's wedding?",
    "数据库选择：PostgreSQL。",
)
SAME_MODEL_COSINE = 0.97


class QueryFallback:
    """The fallback provider and whether it is the primary's model (thread-safe)."""

    def __init__(self, provider: EmbeddingProvider) -> None:
        self.provider = provider
        self._lock = threading.Lock()
        self.same_model: bool | None = None  # None: not compared yet
        self.reason = "not compared yet: the endpoint has not answered since start"

    def compare(self, primary: EmbeddingProvider) -> bool | None:
        """Embed the probes with both (once; again after a failed try). EmbeddingError from
        the primary leaves the question open; the fallback failing answers it no."""
        with self._lock:
            if self.same_model is not None:
                return self.same_model
            try:
                theirs = primary.embed(list(PROBES))
            except EmbeddingError as exc:
                self.reason = f"not compared yet: the endpoint failed ({exc})"
                return None
            try:
                ours = self.provider.embed(list(PROBES))
            except EmbeddingError as exc:
                self.same_model, self.reason = False, f"the fallback failed: {exc}"
                return False
            self.same_model, self.reason = _agree(theirs, ours, primary, self.provider)
        log.info(
            "embedding_fallback_compared",
            fallback=self.provider.model,
            primary=primary.model,
            same_model=self.same_model,
            reason=self.reason,
        )
        return self.same_model

    def embed_query(self, query: str) -> Vectors | None:
        """The query's vector from the fallback, or None when it may not stand in."""
        if not self.same_model:
            return None
        return embed_query(self.provider, query)

    def status(self) -> dict[str, object]:
        return {
            "provider": self.provider.name,
            "model": self.provider.model,
            "same_model": self.same_model,
            "reason": self.reason,
        }


def _agree(
    theirs: Vectors, ours: Vectors, primary: EmbeddingProvider, fallback: EmbeddingProvider
) -> tuple[bool, str]:
    if theirs.shape != ours.shape:
        return False, (
            f"{fallback.model} makes {ours.shape[1]}-dim vectors, {primary.model} "
            f"{theirs.shape[1]}: not the same model, so a failing endpoint means keyword only"
        )
    cos = float(np.min(np.sum(theirs * ours, axis=1)))  # both L2-normalised
    if cos < SAME_MODEL_COSINE:
        return False, (
            f"{fallback.model} and {primary.model} disagree (probe cosine {cos:.2f}): not "
            "the same model, so a failing endpoint means keyword only"
        )
    return True, f"{fallback.model} agrees with {primary.model} (probe cosine {cos:.3f})"
