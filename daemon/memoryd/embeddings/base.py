"""What every embedding provider offers the index (a Protocol, so providers stay independent)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    import numpy.typing as npt

# A string: numpy is imported on first use (runtime/lazy_numpy.py), not with this module.
Vectors: TypeAlias = "npt.NDArray[np.float32]"


class EmbeddingProvider(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``embed`` raises memoryd.errors.EmbeddingError when the provider cannot answer; callers
    degrade to keyword search. Implementations are thread-safe.
    """

    name: str  # "local" | "openai"
    model: str

    @property
    def dims(self) -> int | None:
        """Vector size; None until known (an openai endpoint tells on its first answer)."""

    @property
    def provider_key(self) -> str:
        """Separates embedding-cache entries of differently configured providers."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text, shape (len(texts), dims), rows L2-normalised."""

    def close(self) -> None: ...


def embed_query(provider: EmbeddingProvider, query: str) -> Vectors:
    """A search query's vector. Models trained with query and passage prefixes (e5) embed
    the two apart: a provider configured so has ``embed_query``; for others a query is
    embedded as any text."""
    own = getattr(provider, "embed_query", None)
    if own is not None:
        vec: Vectors = own(query)
        return vec
    found: Vectors = provider.embed([query])[0]
    return found


def as_query_vector(vec: Vectors) -> Vectors:
    """One query's vector as the scans take it: flat, contiguous float32."""
    return np.ascontiguousarray(vec.reshape(-1), dtype=np.float32)
