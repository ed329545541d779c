"""Searches share one reader thread (config: server.reader_threads); embedding a new query
runs elsewhere, so a slow model never holds up everyone else's searches."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

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
        assert wait_for(lambda: any(
            "where do we deploy" in json.dumps(r.body)
            for r in openai_server.requests_to("embeddings")[asked:]
        ))
        with RawConn(d.socket_path) as c3:
            fast = c3.result("search", {"query": "nomad", "mode": "keyword"})
        assert [r["path"] for r in fast["results"]] == ["MEMORY.md"]
        assert t.is_alive()  # answered while the other query was still being embedded
        t.join(10)
        assert slow["result"]["mode_used"] == "hybrid" and slow["result"]["results"]
