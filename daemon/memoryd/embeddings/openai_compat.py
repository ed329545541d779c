"""The ``openai`` provider: any OpenAI-compatible /embeddings endpoint (OpenAI, Ollama, vLLM...).

Retries (429, 5xx, timeouts, connection errors; exponential backoff honouring Retry-After) are
the official client's. This module checks every answer, because compatible servers differ and
a bad vector stored in the index is worse than none.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt
import openai

from memoryd.embeddings.base import Vectors
from memoryd.errors import EmbeddingError

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _safe_url(url: str) -> str:
    """The URL without user:password, for messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class OpenAIProvider:
    name = "openai"

    def __init__(self, model: str = "", base_url: str = "", api_key: str = "",
                 dimensions: int = 0, batch_size: int = 16, timeout: float = 30.0,
                 max_retries: int = 4) -> None:
        self.model = model or DEFAULT_MODEL
        # Explicit, so that the client does not fall back to $OPENAI_BASE_URL behind our back.
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.dimensions = max(0, dimensions)
        self.batch_size = max(1, batch_size)
        self._timeout = timeout
        self._secret = api_key  # kept only to scrub it from messages
        self._dims: int | None = None
        self._dims_lock = threading.Lock()
        try:
            self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key,
                                         timeout=timeout, max_retries=max_retries)
        except openai.OpenAIError as exc:
            raise EmbeddingError(
                f"cannot configure the embedding client: {self._scrub(exc)}") from None

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={_safe_url(self.base_url)!r}, model={self.model!r})"

    @property
    def dims(self) -> int | None:
        return self._dims

    @property
    def provider_key(self) -> str:
        return f"{self.base_url}|{self.model}|{self.dimensions}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.empty((0, self._dims or 0), dtype=np.float32)
        parts = [self._embed_batch(texts[i:i + self.batch_size])
                 for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        # OpenAI answers 400 to an empty string; a blank embeds the same "no content".
        inputs = [t if t else " " for t in texts]
        try:
            raw = self._client.embeddings.with_raw_response.create(
                input=inputs,
                model=self.model,
                dimensions=self.dimensions if self.dimensions > 0 else openai.omit,
                # Not the client's default base64: not every compatible server speaks it.
                encoding_format="float",
            )
            body = raw.http_response.content
        except openai.OpenAIError as exc:
            raise EmbeddingError(self._describe(exc)) from None
        try:
            payload = json.loads(body)
        except ValueError:
            raise self._garbage("the answer is not JSON") from None
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
        return EmbeddingError(
            f"embedding endpoint {_safe_url(self.base_url)} returned garbage: {reason}")

    def _describe(self, exc: openai.OpenAIError) -> str:
        where = f"embedding endpoint {_safe_url(self.base_url)}"
        if isinstance(exc, openai.APITimeoutError):
            return f"{where} timed out (timeout {self._timeout:g}s, retries exhausted)"
        if isinstance(exc, openai.APIConnectionError):
            return f"{where} unreachable (connection failed, retries exhausted)"
        if isinstance(exc, openai.APIStatusError):
            return f"{where} answered HTTP {exc.status_code}: {self._scrub(_error_text(exc))}"
        return f"{where} failed: {type(exc).__name__}: {self._scrub(exc)}"

    def _scrub(self, text: object) -> str:
        """Short, and never the key (servers echo it in 401 messages)."""
        out = str(text)
        if len(self._secret) >= 4:
            out = out.replace(self._secret, "***")
        return out if len(out) <= 300 else out[:297] + "..."

    def close(self) -> None:
        self._client.close()


def _error_text(exc: openai.APIStatusError) -> str:
    """The server's own message when it sent the usual {"error": {"message": ...}}."""
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return str(body) if body is not None else exc.response.reason_phrase

