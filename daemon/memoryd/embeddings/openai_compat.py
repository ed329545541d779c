"""The ``openai`` provider: any OpenAI-compatible /embeddings endpoint (OpenAI, Ollama, vLLM...).

The client, its retries and the way failures read are openai_endpoint.py's (shared with the
LLM jobs). This module checks every answer, because compatible servers differ and a bad
vector stored in the index is worse than none.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import openai

from memoryd.embeddings.base import Vectors
from memoryd.errors import EmbeddingError
from memoryd.openai_endpoint import Endpoint, safe_url

DEFAULT_MODEL = "text-embedding-3-small"


class OpenAIProvider:
    name = "openai"

    def __init__(
        self,
        model: str = "",
        base_url: str = "",
        api_key: str = "",
        dimensions: int = 0,
        batch_size: int = 16,
        timeout: float = 30.0,
        max_retries: int = 4,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self.dimensions = max(0, dimensions)
        self.batch_size = max(1, batch_size)
        self._dims: int | None = None
        self._dims_lock = threading.Lock()
        self._endpoint = Endpoint(
            "embedding endpoint", base_url, api_key, timeout, max_retries, EmbeddingError
        )
        self.base_url = self._endpoint.base_url

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={safe_url(self.base_url)!r}, model={self.model!r})"

    @property
    def dims(self) -> int | None:
        return self._dims

    @property
    def provider_key(self) -> str:
        return f"{self.base_url}|{self.model}|{self.dimensions}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.empty((0, self._dims or 0), dtype=np.float32)
        parts = [
            self._embed_batch(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        # OpenAI answers 400 to an empty string; a blank embeds the same "no content".
        inputs = [t if t else " " for t in texts]
        payload = self._endpoint.call_json(
            lambda client: client.embeddings.with_raw_response.create(
                input=inputs,
                model=self.model,
                dimensions=self.dimensions if self.dimensions > 0 else openai.omit,
                # Not the client's default base64: not every compatible server speaks it.
                encoding_format="float",
            )
        )
        return self._vectors(payload, len(texts))

    def _vectors(self, payload: Any, count: int) -> Vectors:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise self._garbage("no 'data' list in the answer")
        if len(data) != count:
            raise self._garbage(f"{len(data)} vectors for {count} texts")
        if not all(isinstance(item, dict) for item in data):
            raise self._garbage("an item of 'data' is not an object")
        indices = [item.get("index") for item in data]
        if all(type(i) is int for i in indices):  # some servers omit it: then trust the order
            if sorted(indices) != list(range(count)):
                raise self._garbage(f"indices are not 0..{count - 1}")
            data = sorted(data, key=lambda item: int(item["index"]))
        rows = [item.get("embedding") for item in data]
        for row in rows:
            if not isinstance(row, list) or not row:
                raise self._garbage("a vector is missing or empty")
            if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in row):
                raise self._garbage("a vector holds something other than numbers")
        width = len(rows[0])
        if any(len(row) != width for row in rows):
            raise self._garbage("vectors of different lengths in one answer")
        matrix: npt.NDArray[np.float64] = np.asarray(rows, dtype=np.float64)
        if not np.isfinite(matrix).all():
            raise self._garbage("a vector holds NaN or infinity")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (norms == 0).any():
            raise self._garbage("a vector is all zeros")
        with self._dims_lock:
            if self._dims is None:
                self._dims = width
            elif width != self._dims:
                raise self._garbage(f"{width} dimensions, earlier answers had {self._dims}")
        out: Vectors = (matrix / norms).astype(np.float32)
        return out

    def _garbage(self, reason: str) -> EmbeddingError:
        return EmbeddingError(self._endpoint.garbage(reason).message)

    def close(self) -> None:
        self._endpoint.close()
