"""``[embedding] fallback = "local"``: the local model may embed queries while the openai
endpoint fails, only once it has shown it is the endpoint's model. The "endpoint" is the
fake OpenAI server, answering either its own hashed vectors (another model) or the vectors
of the very model the local provider runs (a server running the same model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.factory import choose_provider
from memoryd.embeddings.fallback import QueryFallback
from memoryd.embeddings.local import LocalProvider
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.errors import ConfigError
from memoryd.runtime.config import config_from_mapping
from onnx_util import DIMS, write_model


@pytest.fixture
def local(tmp_path: Path) -> LocalProvider:
    write_model(tmp_path / "m")
    return LocalProvider(folder=tmp_path / "m")


def endpoint(server: FakeOpenAIServer) -> OpenAIProvider:
    return OpenAIProvider(base_url=server.base_url, api_key="sk-test", max_retries=0)


def test_a_fallback_running_the_endpoints_model_stands_in_for_queries(
        openai_server: FakeOpenAIServer, local: LocalProvider) -> None:
    openai_server.answer_embeddings_with(lambda t: local.embed([t])[0].tolist())
    fallback = QueryFallback(local)
    assert fallback.embed_query("kayak") is None  # not compared yet
    assert fallback.compare(endpoint(openai_server)) is True
    assert "agrees" in fallback.reason
    np.testing.assert_allclose(fallback.embed_query("kayak trip"),
                               local.embed(["kayak trip"])[0], atol=1e-6)
    assert fallback.status()["same_model"] is True


def test_another_model_never_stands_in(openai_server: FakeOpenAIServer,
                                       local: LocalProvider) -> None:
    server = FakeOpenAIServer(dims=DIMS).start()  # hashed words: another model, same dims
    try:
        fallback = QueryFallback(local)
        assert fallback.compare(endpoint(server)) is False
        assert "disagree" in fallback.reason and fallback.embed_query("kayak") is None
    finally:
        server.stop()
    other_dims = QueryFallback(local)  # openai_server: 64 dims
    assert other_dims.compare(endpoint(openai_server)) is False
    assert "8-dim" in other_dims.reason


def test_an_endpoint_down_at_the_comparison_leaves_it_open_until_it_answers(
        openai_server: FakeOpenAIServer, local: LocalProvider) -> None:
    openai_server.answer_embeddings_with(lambda t: local.embed([t])[0].tolist())
    openai_server.respond_status(503)
    fallback = QueryFallback(local)
    assert fallback.compare(endpoint(openai_server)) is None
    assert "not compared yet" in fallback.reason and fallback.embed_query("x") is None
    assert fallback.compare(endpoint(openai_server)) is True


def test_config_fallback_local_comes_with_an_openai_choice(
        openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    write_model(tmp_path / "m")
    cfg = config_from_mapping({"embedding": {
        "provider": "openai", "base_url": openai_server.base_url, "fallback": "local",
        "model_path": str(tmp_path / "m")}})
    choice = choose_provider(cfg.embedding, env={})
    assert isinstance(choice.provider, OpenAIProvider) and choice.fallback is not None
    assert choice.fallback.provider.model == "m" and "fallback local (m)" in choice.reason
    broken = config_from_mapping({"embedding": {
        "provider": "openai", "base_url": openai_server.base_url, "fallback": "local",
        "model_path": str(tmp_path / "missing")}})
    choice = choose_provider(broken.embedding, env={})
    assert choice.fallback is None and "fallback local unavailable" in choice.reason
    assert "missing" in choice.reason
    with pytest.raises(ConfigError, match="fallback"):
        config_from_mapping({"embedding": {"provider": "local", "fallback": "local"}})
