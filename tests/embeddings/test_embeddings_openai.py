"""The openai provider against a real (fake) OpenAI-compatible HTTP server."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fakes.openai_server import GARBAGE_KINDS, FakeOpenAIServer, GarbageKind, fake_embedding
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.openai_compat import DEFAULT_MODEL, OpenAIProvider
from memoryd.errors import EmbeddingError

KEY = "sk-test-do-not-leak-0123456789"


def make(
    server: FakeOpenAIServer,
    *,
    model: str = "",
    dimensions: int = 0,
    batch_size: int = 16,
    timeout: float = 5.0,
    max_retries: int = 2,
) -> OpenAIProvider:
    return OpenAIProvider(
        model=model,
        base_url=server.base_url,
        api_key=KEY,
        dimensions=dimensions,
        batch_size=batch_size,
        timeout=timeout,
        max_retries=max_retries,
    )


def test_embeds_normalised_rows_in_input_order(openai_server: FakeOpenAIServer) -> None:
    provider: EmbeddingProvider = make(openai_server)
    texts = ["bread baking at home", "tax law deductions", "baking sourdough bread"]
    vectors = provider.embed(texts)
    assert vectors.shape == (3, 64)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.array(fake_embedding(texts[1], 64))
    np.testing.assert_allclose(vectors[1], expected / np.linalg.norm(expected), atol=1e-6)
    assert vectors[0] @ vectors[2] > vectors[0] @ vectors[1]


def test_sends_model_key_float_format_and_no_dimensions_by_default(
    openai_server: FakeOpenAIServer,
) -> None:
    make(openai_server).embed(["hello"])
    (request,) = openai_server.requests_to("embeddings")
    assert request.body["model"] == DEFAULT_MODEL
    assert request.body["input"] == ["hello"]
    assert request.body["encoding_format"] == "float"
    assert "dimensions" not in request.body
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_requests_are_split_by_batch_size(openai_server: FakeOpenAIServer) -> None:
    texts = [f"text number {i}" for i in range(7)]
    vectors = make(openai_server, batch_size=3).embed(texts)
    sent = [r.body["input"] for r in openai_server.requests_to("embeddings")]
    assert sent == [texts[0:3], texts[3:6], texts[6:7]]
    single = make(openai_server).embed([texts[4]])
    np.testing.assert_allclose(vectors[4], single[0], atol=1e-6)


def test_dims_are_learned_from_the_first_answer_and_dimensions_is_sent(
    openai_server: FakeOpenAIServer,
) -> None:
    provider = make(openai_server, dimensions=16, model="text-embedding-3-large")
    assert provider.dims is None
    assert provider.embed(["a b c"]).shape == (1, 16)
    assert provider.dims == 16
    assert openai_server.requests[0].body["dimensions"] == 16
    assert provider.provider_key == f"{openai_server.base_url}|text-embedding-3-large|16"


def test_empty_input_makes_no_request(openai_server: FakeOpenAIServer) -> None:
    assert make(openai_server).embed([]).shape[0] == 0
    assert openai_server.requests == []


def test_empty_string_is_sent_as_a_blank(openai_server: FakeOpenAIServer) -> None:
    vectors = make(openai_server).embed(["", "word"])
    assert vectors.shape == (2, 64)
    assert openai_server.requests[0].body["input"] == [" ", "word"]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retryable_status_then_success(openai_server: FakeOpenAIServer, status: int) -> None:
    openai_server.respond_status(status)
    vectors = make(openai_server, max_retries=2).embed(["retry me"])
    assert vectors.shape == (1, 64)
    assert len(openai_server.requests) == 2


def test_persistent_500_raises_after_retries(openai_server: FakeOpenAIServer) -> None:
    openai_server.respond_status(500, times=3)
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        make(openai_server, max_retries=2).embed(["x"])
    assert len(openai_server.requests) == 3


def test_total_outage_raises_quickly(openai_server: FakeOpenAIServer) -> None:
    provider = make(openai_server, max_retries=1, timeout=1.0)
    openai_server.stop()
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="unreachable"):
        provider.embed(["anyone there?"])
    assert time.monotonic() - started < 5
    openai_server.start()  # same port: the provider recovers by itself
    assert provider.embed(["back"]).shape == (1, 64)


def test_slow_server_times_out(openai_server: FakeOpenAIServer) -> None:
    openai_server.delay(2.0)
    with pytest.raises(EmbeddingError, match="timed out"):
        make(openai_server, max_retries=0, timeout=0.3).embed(["slow"])


@pytest.mark.parametrize("kind", GARBAGE_KINDS)
def test_garbage_answers_raise(openai_server: FakeOpenAIServer, kind: GarbageKind) -> None:
    openai_server.respond_garbage(kind)
    with pytest.raises(EmbeddingError, match="garbage"):
        make(openai_server).embed(["first text", "second text"])


def test_changed_dims_are_garbage(openai_server: FakeOpenAIServer) -> None:
    provider = make(openai_server)
    provider.embed(["a"])
    openai_server.dims = 32
    with pytest.raises(EmbeddingError, match="32 dimensions, earlier answers had 64"):
        provider.embed(["a"])


def test_api_key_never_appears_in_errors(openai_server: FakeOpenAIServer) -> None:
    openai_server.respond_status(
        401, {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "auth"}}
    )
    with pytest.raises(EmbeddingError) as info:
        make(openai_server).embed(["x"])
    assert "HTTP 401" in str(info.value)
    assert KEY not in str(info.value)
    assert KEY not in repr(make(openai_server))


def test_401_is_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.respond_status(401)
    with pytest.raises(EmbeddingError):
        make(openai_server, max_retries=3).embed(["x"])
    assert len(openai_server.requests) == 1
