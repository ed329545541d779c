"""``[embedding] fallback = "local"``: the local model may embed queries while the openai
endpoint fails, only once it has shown it is the endpoint's model. The "endpoint" is the
fake OpenAI server, answering either its own hashed vectors (another model) or the vectors
of the very model the local provider runs (a server running the same model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daemon_util import DaemonThread, RawConn, wait_for
from engine_util import IndexFactory, search
from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.factory import choose_provider
from memoryd.embeddings.fallback import QueryFallback
from memoryd.embeddings.local import LocalProvider
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.errors import ConfigError
from memoryd.index.workspace import WorkspaceIndex
from memoryd.runtime.config import config_from_mapping
from onnx_util import DIMS, write_model


@pytest.fixture
def local(tmp_path: Path) -> LocalProvider:
    write_model(tmp_path / "m")
    return LocalProvider(folder=tmp_path / "m")


def endpoint(server: FakeOpenAIServer) -> OpenAIProvider:
    return OpenAIProvider(base_url=server.base_url, api_key="sk-test", max_retries=0)


def test_a_fallback_running_the_endpoints_model_stands_in_for_queries(
    openai_server: FakeOpenAIServer, local: LocalProvider
) -> None:
    openai_server.answer_embeddings_with(lambda t: local.embed([t])[0].tolist())
    fallback = QueryFallback(local)
    assert fallback.embed_query("kayak") is None  # not compared yet
    assert fallback.compare(endpoint(openai_server)) is True
    assert "agrees" in fallback.reason
    np.testing.assert_allclose(
        fallback.embed_query("kayak trip"), local.embed(["kayak trip"])[0], atol=1e-6
    )
    assert fallback.status()["same_model"] is True


def test_another_model_never_stands_in(
    openai_server: FakeOpenAIServer, local: LocalProvider
) -> None:
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
    openai_server: FakeOpenAIServer, local: LocalProvider
) -> None:
    openai_server.answer_embeddings_with(lambda t: local.embed([t])[0].tolist())
    openai_server.respond_status(503)
    fallback = QueryFallback(local)
    assert fallback.compare(endpoint(openai_server)) is None
    assert "not compared yet" in fallback.reason and fallback.embed_query("x") is None
    assert fallback.compare(endpoint(openai_server)) is True


def test_config_fallback_local_comes_with_an_openai_choice(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    write_model(tmp_path / "m")
    cfg = config_from_mapping(
        {
            "embedding": {
                "provider": "openai",
                "base_url": openai_server.base_url,
                "fallback": "local",
                "model_path": str(tmp_path / "m"),
            }
        }
    )
    choice = choose_provider(cfg.embedding, env={})
    assert isinstance(choice.provider, OpenAIProvider) and choice.fallback is not None
    assert choice.fallback.provider.model == "m" and "fallback local (m)" in choice.reason
    broken = config_from_mapping(
        {
            "embedding": {
                "provider": "openai",
                "base_url": openai_server.base_url,
                "fallback": "local",
                "model_path": str(tmp_path / "missing"),
            }
        }
    )
    choice = choose_provider(broken.embedding, env={})
    assert choice.fallback is None and "fallback local unavailable" in choice.reason
    assert "missing" in choice.reason
    with pytest.raises(ConfigError, match="fallback"):
        config_from_mapping({"embedding": {"provider": "local", "fallback": "local"}})


def index_over(
    make_index: IndexFactory, server: FakeOpenAIServer, fallback: QueryFallback
) -> WorkspaceIndex:
    make_index.write("memory/a.md", "# trip\n\nkayak trip sunday\n")
    make_index.write("memory/b.md", "# tax\n\ntax return april\n")
    ix = WorkspaceIndex(
        make_index.ws, make_index.db, make_index.config(), endpoint(server), fallback=fallback
    )
    ix.open()
    make_index.made.append(ix)
    ix.sync()
    assert ix.wait_embedded(30)
    return ix


def test_while_the_endpoint_fails_the_same_model_embeds_queries_and_status_says_so(
    make_index: IndexFactory, openai_server: FakeOpenAIServer, local: LocalProvider
) -> None:
    openai_server.answer_embeddings_with(lambda t: local.embed([t])[0].tolist())
    fallback = QueryFallback(local)
    ix = index_over(make_index, openai_server, fallback)
    assert wait_for(lambda: fallback.same_model is not None, 10)  # compared after a batch
    first = search(ix, "kayak trip", mode="vector", min_score=0.0)
    assert first.mode_used == "vector" and first.degraded is None
    assert ix.status()["query_provider"] == "openai"
    openai_server.respond_status(503, times=100)
    down = search(ix, "tax return april", mode="vector", min_score=0.0)
    assert down.mode_used == "vector"
    assert down.degraded is not None and "fallback local m (the same model)" in down.degraded
    assert [h.path for h in down.results][:1] == ["memory/b.md"]
    assert ix.status()["query_provider"] == "local (fallback while openai fails)"


def test_while_the_endpoint_fails_another_model_leaves_keyword_only(
    make_index: IndexFactory, openai_server: FakeOpenAIServer, local: LocalProvider
) -> None:
    fallback = QueryFallback(local)  # the fake's hashed 64-dim vectors: another model
    ix = index_over(make_index, openai_server, fallback)
    assert wait_for(lambda: fallback.same_model is not None, 10)
    assert fallback.same_model is False
    openai_server.respond_status(503, times=100)
    down = search(ix, "tax return april", min_score=0.0)
    assert down.mode_used == "keyword" and "keyword results only" in (down.degraded or "")
    assert [h.path for h in down.results][:1] == ["memory/b.md"]
    assert ix.status()["query_provider"] == "none (keyword only while openai fails)"


def test_the_daemons_status_shows_the_fallback_and_who_embeds_queries(
    md_home: Path, openai_server: FakeOpenAIServer, local: LocalProvider, tmp_path: Path
) -> None:
    openai_server.answer_embeddings_with(lambda t: local.embed([t])[0].tolist())
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# trip\n\nkayak trip sunday\n")
    config = {
        "embedding": {
            "provider": "openai",
            "base_url": openai_server.base_url,
            "max_retries": 0,
            "fallback": "local",
            "model_path": str(tmp_path / "m"),
        },
        "workspaces": [{"path": str(ws), "name": "main"}],
    }
    env = {"MEMORYD_EMBEDDING_PROVIDER": "openai"}
    with DaemonThread(md_home, config=config, env=env) as d, RawConn(d.socket_path) as c:
        c.result("reindex")
        assert wait_for(
            lambda: c.result("status")["provider"]["fallback"]["same_model"] is True, 20
        )
        openai_server.respond_status(503, times=100)
        found = c.result("search", {"query": "kayak", "mode": "vector", "min_score": 0.0})
        assert found["mode_used"] == "vector" and "fallback" in found["degraded"]
        [w] = c.result("status")["workspaces"]
        assert w["query_provider"] == "local (fallback while openai fails)"
