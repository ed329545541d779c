"""Searches share one reader thread (config: server.reader_threads); embedding a new query
runs elsewhere, so a slow model never holds up everyone else's searches; and what the
in-memory copies rank is answered on the event loop itself (server.inline_searches)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread, RawConn, wait_for
from fakes.openai_server import FakeOpenAIServer


def test_a_query_being_embedded_does_not_hold_up_other_searches(
    md_home: Path, openai_server: FakeOpenAIServer
) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe deploy target is nomad.\n")
    env = {
        "MEMORYD_EMBEDDING_PROVIDER": "openai",
        "MEMORYD_EMBEDDING_BASE_URL": openai_server.base_url,
        "MEMORYD_EMBEDDING_API_KEY": "sk-test",
    }
    with DaemonThread(md_home, env=env) as d:
        with RawConn(d.socket_path) as c:
            c.result("workspace.add", {"path": str(ws)})
            assert wait_for(lambda: c.result("status")["workspaces"][0]["vector_ready"], 10)
        asked = len(openai_server.requests_to("embeddings"))
        for _ in range(3):  # the next embeddings requests (the new query's among them) stall
            openai_server.delay(3.0)
        slow: dict[str, Any] = {}

        def hybrid() -> None:
            with RawConn(d.socket_path) as c2:
                slow["result"] = c2.result("search", {"query": "where do we deploy"})

        t = threading.Thread(target=hybrid)
        t.start()
        assert wait_for(
            lambda: any(
                "where do we deploy" in json.dumps(r.body)
                for r in openai_server.requests_to("embeddings")[asked:]
            )
        )
        with RawConn(d.socket_path) as c3:
            fast = c3.result("search", {"query": "nomad", "mode": "keyword"})
        assert [r["path"] for r in fast["results"]] == ["MEMORY.md"]
        assert t.is_alive()  # answered while the other query was still being embedded
        t.join(10)
        assert slow["result"]["mode_used"] == "hybrid" and slow["result"]["results"]


@pytest.mark.parametrize("inline", [True, False])
def test_in_memory_searches_do_not_wait_for_a_busy_reader(md_home: Path, inline: bool) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe deploy target is nomad.\n")
    with DaemonThread(md_home, config={"server": {"inline_searches": inline}}) as d:
        with RawConn(d.socket_path) as c:
            c.result("workspace.add", {"path": str(ws)})
            assert wait_for(
                lambda: c.result("status")["workspaces"][0]["keyword_scan"] == "memory", 10
            )
        assert d.daemon is not None
        gate = threading.Event()
        d.daemon.readers.submit(gate.wait, 30)  # the one reader thread is taken
        answers: dict[str, Any] = {}

        def ask(name: str, params: dict[str, Any]) -> None:
            with RawConn(d.socket_path, timeout=30) as c2:
                answers[name] = c2.result("search", {"mode": "keyword", **params})

        # In memory: BM25 from the copy. A path prefix: only FTS5 can filter by it.
        memory = threading.Thread(target=ask, args=("memory", {"query": "nomad"}))
        fts5 = threading.Thread(
            target=ask, args=("fts5", {"query": "nomad", "path_prefix": "MEMORY.md"})
        )
        try:
            memory.start()
            fts5.start()
            memory.join(3 if inline else 0.5)
            time.sleep(0.2)
            assert memory.is_alive() is not inline
            assert fts5.is_alive()  # it waits for the reader either way
        finally:
            gate.set()
        memory.join(10)
        fts5.join(10)
        for name in ("memory", "fts5"):
            assert [r["path"] for r in answers[name]["results"]] == ["MEMORY.md"], name


def test_a_search_right_after_a_write_is_answered_in_memory(md_home: Path) -> None:
    # The write is synced first (read-your-writes); the copies then rank it, so the busy
    # reader is not needed either.
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe deploy target is nomad.\n")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        assert wait_for(lambda: c.result("status")["workspaces"][0]["keyword_scan"] == "memory", 10)
        assert wait_for(
            lambda: c.result("search", {"query": "nomad", "mode": "keyword"})["results"], 10
        )
        assert d.daemon is not None
        gate = threading.Event()
        d.daemon.readers.submit(gate.wait, 30)  # the one reader thread is taken
        try:
            (ws / "memory" / "2024-05-01.md").write_text("- moved the deploy to zanzibar\n")
            found = c.result("search", {"query": "zanzibar", "mode": "keyword"})
            assert [r["path"] for r in found["results"]] == ["memory/2024-05-01.md"]
            assert not gate.is_set()
        finally:
            gate.set()


def test_a_workspace_whose_file_server_hangs_holds_up_nothing_else(md_home: Path) -> None:
    # Two workspaces; one is on an NFS mount whose server stops answering (a fake statfs
    # and stat at the boundary: no network mount can be made here without root). Its
    # searches check freshness on a memoryd-stat thread, the lock given up, and answer
    # "stale" once their budget is spent; the other's searches, writes and read-your-
    # writes go on meanwhile.
    from memoryd.index.freshness import py_stat_many

    roots = {name: md_home / name for name in ("far", "near")}
    for name, root in roots.items():
        (root / "memory").mkdir(parents=True)
        (root / "MEMORY.md").write_text(f"# Memory\n\nThe deploy target of {name} is nomad.\n")
    config = {"server": {"read_your_writes_ms": 300}}
    with DaemonThread(md_home, config=config) as d, RawConn(d.socket_path, timeout=30) as c:
        for root in roots.values():
            c.result("workspace.add", {"path": str(root)})
        assert wait_for(
            lambda: all(w["keyword_scan"] == "memory" for w in c.result("status")["workspaces"]),
            10,
        )
        assert d.daemon is not None
        far = d.daemon.registry.resolve("far").usable_index().freshness
        near = d.daemon.registry.resolve("near").usable_index().freshness
        gate, calls = threading.Event(), []

        def hung_stats(paths: Any) -> list[tuple[int, int] | None]:
            calls.append(threading.current_thread().name)
            gate.wait(30)  # the server answers again when the test says so
            return py_stat_many(paths)

        far.fs_type = lambda _path: 0x6969  # NFS
        far.stat_released = hung_stats
        far.look_at_filesystems()
        assert not far.may_hold_lock() and near.may_hold_lock()

        def search(ws: str, query: str = "nomad") -> dict[str, Any]:
            params = {"query": query, "mode": "keyword", "workspace": ws}
            result: dict[str, Any] = c.result("search", params)
            return result

        try:
            first = search("far")  # its check hangs: answered without it once 300 ms are spent
            assert first.get("stale") is True
            assert [r["path"] for r in first["results"]] == ["MEMORY.md"]
            assert len(calls) == 1 and calls[0].startswith("memoryd-stat")
            assert search("far").get("stale") is True  # waits for the hung check, no other
            assert len(calls) == 1
            near_answer = search("near")
            assert "stale" not in near_answer and near_answer["results"]
            (roots["near"] / "memory" / "2024-05-01.md").write_text("- moved it to zanzibar\n")
            found = search("near", "zanzibar")  # read-your-writes, the writer, the watcher
            assert [r["path"] for r in found["results"]] == ["memory/2024-05-01.md"]
            assert len(calls) == 1 and not gate.is_set()
        finally:
            gate.set()
        assert wait_for(lambda: "stale" not in search("far"), 10)  # the server is back
        assert len(calls) >= 2


def stat_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("memoryd-stat")]


def test_the_stat_threads_end_with_the_daemon_which_waits_for_no_hung_one(
    md_home: Path,
) -> None:
    from memoryd.index.freshness import py_stat_many

    root = md_home / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nThe deploy target is nomad.\n")
    gate, hung = threading.Event(), threading.Event()

    def stats(paths: Any) -> list[tuple[int, int] | None]:
        if hung.is_set():
            gate.wait(120)  # past DaemonThread's 30 s join: a stop that waited would fail
        return py_stat_many(paths)

    before = set(stat_threads())
    config = {"server": {"read_your_writes_ms": 100}}
    try:
        with DaemonThread(md_home, config=config) as d, RawConn(d.socket_path) as c:
            c.result("workspace.add", {"path": str(root), "wait": True})
            assert d.daemon is not None
            fresh = d.daemon.registry.resolve("ws").usable_index().freshness
            fresh.fs_type = lambda _path: 0x6969  # NFS
            fresh.stat_released = stats
            fresh.look_at_filesystems()
            assert wait_for(lambda: "stale" not in c.result("search", {"query": "nomad"}), 10)
            hung.set()  # the server stops answering
            assert c.result("search", {"query": "nomad"})["stale"] is True
            assert len(set(stat_threads()) - before) >= 1
        # The daemon stopped while a check still waits for the server...
        assert [t for t in stat_threads() if t not in before]
    finally:
        gate.set()  # ...which answers: that thread ends too, as the idle ones did at once
    assert wait_for(lambda: not set(stat_threads()) - before, 10)


def test_a_zero_budget_still_checks_a_network_workspace_that_answers(md_home: Path) -> None:
    # read_your_writes_ms = 0: no wait for pending writes, but the freshness stats run, on a
    # network file system as on a local one (off the loop there): the answer is not "stale"
    # for want of a check that takes a few ms, and a write it finds is synced first.
    root = md_home / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nThe deploy target is nomad.\n")
    config = {"server": {"read_your_writes_ms": 0}}
    with DaemonThread(md_home, config=config) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(root)})
        assert wait_for(lambda: c.result("status")["workspaces"][0]["keyword_scan"] == "memory", 10)
        assert d.daemon is not None
        fresh = d.daemon.registry.resolve("ws").usable_index().freshness
        fresh.fs_type = lambda _path: 0x6969  # NFS, answering
        fresh.look_at_filesystems()
        assert not fresh.may_hold_lock()

        # A check off the loop is waited for 50 ms at least: on a loaded machine one may take
        # longer (that search answers stale), so the claim is that searches come back fresh.
        def fresh_answer() -> bool:
            answer = c.result("search", {"query": "nomad", "mode": "keyword"})
            return "stale" not in answer and bool(answer["results"])

        assert wait_for(fresh_answer, 10)
