"""An index opened before its embedding provider is chosen (the daemon opens indexes first,
so keyword search never waits for a model to load): keyword answers at once, hybrid says
why it has no vectors, and the provider given later keeps vectors that still fit."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from daemon_util import run_daemon, wait_for
from engine_util import IndexFactory, search
from fakes.openai_server import FakeOpenAIServer, fake_embedding
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.index.query_vectors import PROVIDER_LOADING
from memoryd.index.workspace import WorkspaceIndex

NOTES = {
    "memory/2024-05-01.md": "# 2024-05-01\n\n- Bought a blue bicycle for commuting to work.\n",
    "memory/2024-05-02.md": "# 2024-05-02\n\n- The dentist moved the appointment to Friday.\n",
}


def provider(server: FakeOpenAIServer, model: str = "") -> OpenAIProvider:
    return OpenAIProvider(
        base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=2, model=model
    )


def pending_index(f: IndexFactory) -> WorkspaceIndex:
    ix = WorkspaceIndex(f.ws, f.db, f.config(), None, "", provider_pending=True)
    ix.open()
    f.made.append(ix)
    return ix


def test_keyword_answers_and_hybrid_says_why_while_the_provider_loads(
    make_index: IndexFactory,
) -> None:
    make_index.write_all(NOTES)
    ix = pending_index(make_index)
    ix.sync()
    kw = search(ix, "bicycle", mode="keyword")
    assert [h.path for h in kw.results] == ["memory/2024-05-01.md"] and kw.degraded is None
    hy = search(ix, "bicycle")
    assert hy.results and hy.results[0].path == "memory/2024-05-01.md"
    assert hy.mode_used == "keyword" and hy.degraded == PROVIDER_LOADING
    st = ix.status()
    assert st["provider"]["name"] == "loading" and PROVIDER_LOADING in st["degraded"]
    assert st["pending_vectors"] == 2 and not st["vector_ready"]  # what it will embed
    assert ix.wait_embedded(timeout=0.3) is False  # not "done": nothing can embed yet


def test_the_provider_given_later_embeds_and_hybrid_uses_vectors(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    ix = pending_index(make_index)
    ix.sync()
    ix.attach_provider(provider(openai_server), "embedding.provider = openai")
    assert ix.wait_embedded(timeout=30)
    resp = search(ix, "bicycle commuting")
    assert resp.mode_used == "hybrid" and resp.degraded is None
    assert resp.results[0].vector_score is not None
    assert ix.status()["provider"]["name"] == "openai"


def test_a_restart_keeps_vectors_that_fit_and_drops_another_models(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    first = make_index(None, provider(openai_server))
    first.sync()
    assert first.wait_embedded(timeout=30)
    first.close()
    asked = len(openai_server.requests_to("embeddings"))

    same = pending_index(make_index)
    same.attach_provider(provider(openai_server), "same model")
    # Attached at once (no sync queued on the writer), vectors kept: nothing to embed.
    assert same.status()["pending_vectors"] == 0 and same.status()["vector_ready"]
    assert len(openai_server.requests_to("embeddings")) == asked
    assert search(same, "bicycle commuting").degraded is None
    same.close()
    asked = len(openai_server.requests_to("embeddings"))  # + the query's

    other = pending_index(make_index)
    other.attach_provider(provider(openai_server, "text-embedding-3-large"), "another model")
    assert other.wait_embedded(timeout=30)
    assert len(openai_server.requests_to("embeddings")) > asked  # re-embedded


def test_a_second_attach_is_ignored(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    ix = pending_index(make_index)
    ix.attach_provider(None, "embedding.provider = none")
    ix.attach_provider(provider(openai_server), "too late")
    assert ix.queries.provider is None and ix.queries.embedder is None
    assert ix.status()["provider"]["name"] == "none"


@pytest.mark.model
def test_daemon_opens_indexes_before_choosing_the_provider(md_home: Path) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2024-05-01.md").write_text("- a bicycle\n")

    async def main() -> None:
        async with run_daemon(
            md_home,
            {"workspaces": [{"path": str(ws)}]},
            env={"MEMORYD_EMBEDDING_PROVIDER": "local"},
        ) as d:
            assert d.registry.list()[0].index is not None

    with capture_logs() as logs:
        asyncio.run(main())
    events = [e["event"] for e in logs]
    assert "workspace_opened" in events and "embedding_provider" in events
    # The local model loads for a second or more: keyword search must not wait for it.
    assert events.index("workspace_opened") < events.index("embedding_provider")


def test_with_provider_none_indexes_open_knowing_it(md_home: Path) -> None:
    # Nothing to load: no search is told "still loading" in between.
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)

    async def main() -> None:
        async with run_daemon(md_home, {"workspaces": [{"path": str(ws)}]}) as d:
            index = d.registry.list()[0].index
            assert index is not None and not index.queries.pending

    with capture_logs() as logs:
        asyncio.run(main())
    opened = next(e for e in logs if e["event"] == "workspace_opened")
    assert opened["provider"] is None
    events = [e["event"] for e in logs]
    assert events.index("embedding_provider") < events.index("workspace_opened")


def test_vector_ready_waits_for_the_generation_to_count_the_vectors(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    # status's vector_ready is what a client waits for before searching the fleet's copy of
    # this index, and the fleet's "published" compares generations: a status must not see
    # the vectors' commit as ready while the generation does not count it yet (a fleet
    # search then read the copy made before the vectors: keyword, not hybrid).
    make_index.write_all(NOTES)
    ix = pending_index(make_index)
    ix.sync()
    answer = threading.Event()
    openai_server.answer_embeddings_with(
        lambda text: fake_embedding(text, openai_server.dims) if answer.wait(30) else []
    )
    ix.attach_provider(provider(openai_server), "embedding.provider = openai")
    assert wait_for(lambda: openai_server.requests_to("embeddings"), 30)  # the provider in use
    before = ix.generation
    with ix._lock:  # the writer, its vectors committed, waits here to bump the generation
        answer.set()
        assert wait_for(lambda: ix.status()["pending_vectors"] == 0, 30)
        st = ix.status()
        assert ix.generation == before and not st["vector_ready"]
    assert ix.wait_embedded(timeout=30)
    assert wait_for(lambda: ix.status()["vector_ready"], 30)
    assert ix.generation > before
