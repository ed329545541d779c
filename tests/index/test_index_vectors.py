"""The vector side of the index against a real OpenAI-compatible HTTP server (the fake)."""

from __future__ import annotations

import time

import apsw

from daemon_util import wait_for
from engine_util import IndexFactory, paths, search
from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.index import schema

NOTES = {
    "memory/2024-05-01.md": "# 2024-05-01\n\n- Bought a blue bicycle for commuting to work.\n",
    "memory/2024-05-02.md": "# 2024-05-02\n\n- The dentist moved the appointment to Friday.\n",
}
FAST = {"embedding": {"retry_after_seconds": 0.2}}


def provider(server: FakeOpenAIServer) -> OpenAIProvider:
    return OpenAIProvider(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=2)


def cache_rows(ix_db: str) -> int:
    conn = apsw.Connection(ix_db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT count(*) FROM embedding_cache").fetchall()[0][0])
    finally:
        conn.close()


def embedded_texts(server: FakeOpenAIServer) -> list[str]:
    out: list[str] = []
    for req in server.requests_to("embeddings"):
        inp = req.body["input"]
        out += [inp] if isinstance(inp, str) else list(inp)
    return out


def test_hybrid_search_uses_vectors_once_embedded(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    ix = make_index(FAST, provider(openai_server))
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    resp = search(ix, "bicycle commuting")
    assert resp.mode_used == "hybrid" and resp.degraded is None
    assert resp.provider == "openai" and resp.model
    top = resp.results[0]
    assert top.path == "memory/2024-05-01.md"
    assert top.vector_score is not None and top.vector_score > 0
    assert ix.status()["vector_ready"] is True


def test_vector_mode_finds_by_vector_alone(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    ix = make_index(FAST, provider(openai_server))
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    resp = search(ix, "dentist appointment", mode="vector", min_score=0.0)
    assert resp.mode_used == "vector"
    assert paths(resp)[0] == "memory/2024-05-02.md"
    assert all(h.text_score is None for h in resp.results)


def test_endpoint_down_degrades_to_keyword_and_recovers(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    openai_server.stop()
    ix = make_index(FAST, provider(openai_server))
    ix.sync()
    assert ix.wait_embedded(timeout=10) is False  # failing provider: no hang
    resp = search(ix, "bicycle")
    assert resp.mode_used == "keyword"
    assert paths(resp) == ["memory/2024-05-01.md"]
    assert resp.degraded and "keyword" in resp.degraded
    assert any("failing" in d for d in ix.status()["degraded"])
    openai_server.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not ix.wait_embedded(timeout=1):
        time.sleep(0.2)  # the back-off timer retries by itself
    assert ix.status()["pending_vectors"] == 0
    # The query back-off lapses too.
    assert wait_for(lambda: search(ix, "bicycle").mode_used == "hybrid", 10)


def test_garbage_answers_never_fail_a_search(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write("memory/a.md", "- kayak trip\n")
    ix = make_index(FAST, provider(openai_server))
    openai_server.respond_garbage("nan")
    ix.sync()
    ix.wait_embedded(timeout=5)
    openai_server.respond_garbage("not_json")
    resp = search(ix, "kayak unique-query-1")
    assert paths(resp) == ["memory/a.md"]


def test_touching_one_file_reembeds_only_its_changed_windows(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    body = "\n".join(f"- Entry {i}: notes about topic {i} and its details." for i in range(60))
    make_index.write("memory/2024-05-01.md", "# Day\n\n" + body + "\n")
    make_index.write("memory/2024-05-02.md", "# Other\n\n- Unrelated file.\n")
    ix = make_index(FAST, provider(openai_server))
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    before = len(embedded_texts(openai_server))
    with open(make_index.ws / "memory/2024-05-01.md", "a", encoding="utf-8") as f:
        f.write("- Entry 60: a brand new line about zeppelins.\n")
    make_index.bump_mtime("memory/2024-05-01.md")
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    new = embedded_texts(openai_server)[before:]
    assert new, "the changed window must be embedded"
    assert all("zeppelins" in t or "Entry 5" in t for t in new)  # only the tail windows
    assert "memory/2024-05-01.md" in paths(search(ix, "zeppelins"))


def test_embedding_cache_is_bounded(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    for i in range(12):
        make_index.write(f"memory/2024-05-{i + 1:02d}.md", f"- note number {i} about item{i}\n")
    ix = make_index(
        {"embedding": {"cache_max_entries": 5, "retry_after_seconds": 0.2}}, provider(openai_server)
    )
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    assert cache_rows(str(make_index.db)) == 5
    assert ix.status()["pending_vectors"] == 0


def test_provider_change_reembeds_in_background_while_keyword_works(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    ix = make_index(FAST)  # keyword only first
    ix.sync()
    ix.close()
    make_index.made.remove(ix)
    again = make_index(FAST, provider(openai_server))
    assert paths(search(again, "bicycle")) == ["memory/2024-05-01.md"]  # before any vector
    assert again.wait_embedded(timeout=30)
    assert search(again, "bicycle").mode_used == "hybrid"
    assert again.status()["vector_ready"]


def test_vectors_follow_deleted_files(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    p = make_index.write("memory/a.md", "- a note about zeppelins\n")
    ix = make_index(FAST, provider(openai_server))
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    p.unlink()
    ix.sync()
    conn = schema.connect(make_index.db, readonly=True)  # with sqlite-vec loaded
    try:
        assert conn.execute("SELECT count(*) FROM window_vectors").fetchall()[0][0] == 0
        assert conn.execute("SELECT count(*) FROM chunks_vec").fetchall()[0][0] == 0
    finally:
        conn.close()
    assert search(ix, "zeppelins", mode="vector", min_score=0.0).results == []


def test_endpoint_changing_its_vector_width_degrades_then_rebuilds(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    ix = make_index(FAST, provider(openai_server))
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    ix.close()
    make_index.made.remove(ix)
    openai_server.dims = 32  # same endpoint and model, another width (e.g. a model swap)
    again = make_index(FAST, provider(openai_server))
    resp = search(again, "bicycle commuting")  # must not fail on the 64-wide table
    assert paths(resp)[0] == "memory/2024-05-01.md"
    assert resp.degraded
    deadline = time.monotonic() + 30  # the failed search scheduled the rebuild itself
    while time.monotonic() < deadline:
        again.wait_embedded(timeout=1)
        resp = search(again, "bicycle commuting unique-query-2")
        if resp.degraded is None:
            break
        time.sleep(0.1)
    assert resp.mode_used == "hybrid" and resp.degraded is None, resp.degraded


def test_path_prefix_filters_before_the_nearest_are_taken(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    # 130 closer chunks elsewhere: taking the nearest first and filtering after found none.
    for i in range(130):
        make_index.write(f"memory/2024-01-{i:03d}.md", f"- cat cat cat number {i}\n")
    make_index.write("memory/projects/notes.md", "- the tabby cat purred by the warm fireplace\n")
    ix = make_index(FAST, provider(openai_server))
    ix.sync()
    assert ix.wait_embedded(timeout=60)
    for mode in ("vector", "hybrid"):
        resp = search(ix, "cat", mode=mode, path_prefix="memory/projects/", min_score=0.0)
        assert resp.mode_used == mode and paths(resp) == ["memory/projects/notes.md"], mode
    resp = search(ix, "fireplace", mode="vector", path_prefix="memory/2024-01-00", min_score=0.0)
    assert set(paths(resp)) <= {f"memory/2024-01-00{i}.md" for i in range(10)}


def test_status_shows_the_embedding_rate_and_eta_while_chunks_wait(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    for i in range(24):
        make_index.write(f"memory/2024-06-{i + 1:02d}.md", f"# Day {i}\n\n- note number {i}\n")
    for _ in range(6):  # each request answers after 0.3 s: time to look at the status
        openai_server.delay(0.3)
    ix = make_index(
        {**FAST, "embedding": {**FAST["embedding"], "batch_size": 1}}, provider(openai_server)
    )
    ix.sync()
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 30
    while not seen and time.monotonic() < deadline:
        status = ix.status()
        if "embedding" in status:
            seen = status["embedding"]
            pending = status["pending_vectors"]
        time.sleep(0.05)
    assert seen, "no embedding rate while vectors were pending"
    assert seen["rate_per_s"] > 0
    assert seen["eta_s"] == round(pending / seen["rate_per_s"], 1)
    assert ix.wait_embedded(timeout=30)
    assert "embedding" not in ix.status()  # nothing waits: no rate to show


def test_status_shows_the_rate_early_in_a_slow_first_index(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    # The default batch (16 texts a request): one read of 64 chunks took minutes with the
    # local model, so the rate (two batches apart, within 10 s) was rarely shown. Batches
    # are now sized to take about two seconds at the measured pace.
    for i in range(90):
        make_index.write(f"memory/2024-06-{i // 3 + 1:02d}-{i % 3}.md", f"- note number {i}\n")
    for _ in range(40):  # each request answers after 0.4 s
        openai_server.delay(0.4)
    ix = make_index(FAST, provider(openai_server))
    ix.sync()
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 60
    while not seen and time.monotonic() < deadline:
        status = ix.status()
        if status["pending_vectors"] == 0:
            break
        if "embedding" in status:
            seen = status["embedding"]
        time.sleep(0.02)
    assert seen, "no embedding rate while vectors were pending"
    assert ix.wait_embedded(timeout=60)
