"""flush of an OpenClaw session kept in OpenClaw's SQLite store (2026.9+): named by the
store's path and the session id, read from the rows after the last flush, the notes headed
with the session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread
from fakes.openai_server import FakeOpenAIServer
from fakes.openclaw_store import add_events, archive_session, create_store, message, store_path
from jobs_util import llm_daemon
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(60)

DAILY = "memory/2025-03-12.md"  # NOW's day
SESSION = "5ed66a62-6f48-41d3-b041-e75e1f1e365d"


@pytest.fixture
def workspace(md_home: Path) -> Path:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n")
    return ws


@pytest.fixture
def daemon(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> Iterator[DaemonThread]:
    env = {"HOME": str(md_home)}  # ~/.openclaw is an agent's transcript folder
    with llm_daemon(md_home, workspace, "alice", openai_server.base_url, env=env) as d:
        yield d


def flush(daemon: DaemonThread, store: Path) -> dict[str, Any]:
    with MemoryClient(daemon.socket_path) as c:
        out = c.flush(store, SESSION, workspace="alice", wait=True)
    assert out.run is not None
    return out.run.raw


def test_an_openclaw_session_in_its_store_is_flushed_once_then_only_its_new_rows(
    daemon: DaemonThread, md_home: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    store = store_path(md_home)
    oc = create_store(store)
    add_events(
        oc, SESSION, [{"type": "session", "id": SESSION}, message("user", "Deploys move to Oslo.")]
    )
    add_events(oc, SESSION, [message("assistant", "Noted: Oslo for deploys.")], zstd=True)
    add_events(oc, "other", [message("user", "NOT THIS SESSION")])
    openai_server.respond_chat("- Deploys run from Oslo.")
    run = flush(daemon, store)
    assert run["status"] == "ok", run
    text = (workspace / DAILY).read_text()
    assert f"## Session notes ({SESSION[:8]}" in text or f"## Session notes ({SESSION}" in text
    assert "lines 1-3)" in text and "- Deploys run from Oslo." in text
    prompt = openai_server.requests_to("chat")[-1].body["messages"][-1]["content"]
    assert "Deploys move to Oslo." in prompt and "Noted: Oslo for deploys." in prompt
    assert "NOT THIS SESSION" not in prompt
    assert run["report"]["store"] == "openclaw"

    again = flush(daemon, store)
    assert again["status"] == "ok" and "nothing new" in again["message"]

    add_events(oc, SESSION, [message("user", "The freeze starts 2025-04-01.")])
    openai_server.respond_chat("- Freeze from 2025-04-01.")
    third = flush(daemon, store)
    assert third["status"] == "ok", third
    assert "lines 4-4)" in (workspace / DAILY).read_text()
    last = openai_server.requests_to("chat")[-1].body["messages"][-1]["content"]
    assert "freeze starts" in last and "Oslo" not in last


def test_a_deleted_session_is_flushed_from_its_archive_after_the_rows_already_flushed(
    daemon: DaemonThread, md_home: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    store = store_path(md_home)
    oc = create_store(store)
    add_events(oc, SESSION, [{"type": "session", "id": SESSION}, message("user", "Use Oslo.")])
    openai_server.respond_chat("- Oslo it is.")
    assert flush(daemon, store)["status"] == "ok"
    # the last turn, then OpenClaw deletes the session: its rows move into an archive
    add_events(oc, SESSION, [message("user", "The pager rotation moves to Tuesdays.")])
    archive_session(oc, SESSION, reason="deleted")
    openai_server.respond_chat("- Pager rotation on Tuesdays.")
    run = flush(daemon, store)
    assert run["status"] == "ok", run
    assert run["report"]["archive"] == "deleted"
    assert "lines 3-3)" in (workspace / DAILY).read_text()
    prompt = openai_server.requests_to("chat")[-1].body["messages"][-1]["content"]
    assert "pager rotation" in prompt.lower() and "Use Oslo" not in prompt
    again = flush(daemon, store)
    assert again["status"] == "ok" and "nothing new" in again["message"]


FETCH = {
    "type": "message",
    "message": {
        "role": "assistant",
        "content": [
            {"type": "toolCall", "name": "web_fetch", "arguments": {"url": "https://e.org"}}
        ],
    },
}
RESULT = {"type": "message", "message": {"role": "toolResult", "content": "the page"}}


@pytest.mark.parametrize("archived", [False, True])
def test_a_run_that_starts_inside_a_turn_that_fetched_a_page_keeps_it_untrusted(
    daemon: DaemonThread,
    md_home: Path,
    workspace: Path,
    openai_server: FakeOpenAIServer,
    archived: bool,
) -> None:
    """The rows before the run's first are replayed for the turn it starts in (flush.py
    STORE_LOOKBACK_ROWS), from the store and from a deleted session's archive alike."""
    store = store_path(md_home)
    oc = create_store(store)
    header = {"type": "session", "id": SESSION}
    add_events(oc, SESSION, [header, message("user", "Look up the vendor's rate limits.")])
    add_events(oc, SESSION, [FETCH, RESULT])
    openai_server.respond_chat("- The user asked for the vendor's rate limits.")
    first = flush(daemon, store)
    assert first["status"] == "ok" and first["report"]["origins"] == ["owner"], first
    add_events(oc, SESSION, [message("assistant", "The vendor allows 100 requests a minute.")])
    if archived:
        archive_session(oc, SESSION, reason="deleted")
    openai_server.respond_chat("- Vendor rate limit: 100 requests a minute.")
    second = flush(daemon, store)
    assert second["status"] == "ok", second
    assert second["report"]["from_line"] == 5 and second["report"]["origins"] == ["untrusted"]


def test_memctl_flush_of_a_store_needs_the_session(tmp_path: Path) -> None:
    import io

    from memoryd_client import cli

    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["flush", str(store_path(tmp_path))], stdout=out, stderr=err)
    assert code == 2 and "name one with --session-id" in err.getvalue()
