"""A flush that starts inside a turn: what follows a web fetch is ``untrusted`` for the rest
of that turn (flush_origin.py), also when the fetch was read by an earlier run. Runs end
where the transcript ended when they read it (an agent writes the turn's lines a moment
after making them) or where their LLM budget did, so the next run may start mid-turn; it
takes the turn's state from the lines before its offset. Real files, the fake LLM server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.openai_server import FakeOpenAIServer
from jobs_util import JobHarness, llm_config
from memoryd.jobs import agent_flush
from memoryd.jobs.history import History
from memoryd.runtime.state import StateDB

FETCH = {"type": "tool_use", "id": "w1", "name": "WebFetch", "input": {"url": "https://e.org"}}


def _lines(*messages: tuple[str, Any]) -> str:
    return "".join(
        json.dumps(
            {
                "type": role,
                "sessionId": "s-1",
                "timestamp": "2025-03-12T09:00:00Z",
                "message": {"role": role, "content": content},
            }
        )
        + "\n"
        for role, content in messages
    )


def _harness(tmp_path: Path, openai_server: FakeOpenAIServer) -> JobHarness:
    return JobHarness(
        tmp_path / "ws", tmp_path / "state.sqlite", {"llm": llm_config(openai_server.base_url)}
    )


def test_the_rest_of_a_turn_that_fetched_a_page_stays_untrusted_in_the_next_flush(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    h = _harness(tmp_path, openai_server)
    try:
        # What the transcript held when the first flush read it: the fetch and its result.
        t = h.write(
            "sessions/s-1.jsonl",
            _lines(
                ("user", "Look up the vendor's rate limits."),
                ("assistant", [{"type": "text", "text": "Fetching the vendor docs."}, FETCH]),
                ("user", [{"type": "tool_result", "tool_use_id": "w1", "content": "page"}]),
            ),
        )
        openai_server.respond_chat("- The user asked for the vendor's rate limits.")
        first = h.flush(t, "s-1")
        assert first.status == "ok" and first.report["origins"] == ["agent"], first
        with t.open("a") as f:  # the rest of the turn, written after that read
            f.write(_lines(("assistant", "The vendor allows 100 requests a minute.")))
        openai_server.respond_chat("- Vendor rate limit: 100 requests a minute.")
        second = h.flush(t, "s-1")
        assert second.status == "ok", second
        assert second.report["from_line"] == 4 and second.report["origins"] == ["untrusted"]
    finally:
        h.close()


def test_a_flush_that_starts_after_the_users_next_message_is_trusted_again(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    h = _harness(tmp_path, openai_server)
    try:
        t = h.write(
            "sessions/s-1.jsonl",
            _lines(
                ("user", "Look up the vendor's rate limits."),
                ("assistant", [FETCH]),
                ("user", [{"type": "tool_result", "tool_use_id": "w1", "content": "page"}]),
                ("assistant", "The vendor allows 100 requests a minute."),
            ),
        )
        openai_server.respond_chat("- Vendor rate limit: 100 requests a minute.")
        assert "untrusted" in h.flush(t, "s-1").report["origins"]
        with t.open("a") as f:
            f.write(
                _lines(
                    ("user", "Our deploys are on Fridays."),
                    ("assistant", "Noted: deploys on Fridays."),
                )
            )
        openai_server.respond_chat("- Deploys happen on Fridays.")
        second = h.flush(t, "s-1")
        assert second.status == "ok" and second.report["origins"] == ["agent"], second
    finally:
        h.close()


def test_a_stop_hook_save_that_starts_inside_a_fetching_turn_is_untrusted(
    tmp_path: Path,
) -> None:
    """The agent's own flush (flush.agent, the Stop hook's save): its stretch takes the
    turn it starts in."""
    history = History(StateDB(tmp_path / "state.sqlite"))
    t = tmp_path / "s-1.jsonl"
    t.write_text(
        _lines(
            ("user", "Look up the vendor's rate limits. " + "Context. " * 1200),
            ("assistant", [FETCH]),
            ("user", [{"type": "tool_result", "tool_use_id": "w1", "content": "page"}]),
        )
    )
    first = agent_flush.check(history, t, "s-1", tmp_path, 0.0)
    assert first.due and first.origin == "untrusted"
    with t.open("a") as f:  # the rest of that turn, in the next stretch
        f.write(_lines(("assistant", "The vendor allows 100 requests a minute. " * 200)))
    second = agent_flush.check(history, t, "s-1", tmp_path, 0.0)
    assert second.due and second.from_line == 4 and second.origin == "untrusted"
    with t.open("a") as f:  # the user's next message starts a clean turn
        f.write(_lines(("user", "Deploys are on Fridays. " * 400)))
    third = agent_flush.check(history, t, "s-1", tmp_path, 0.0)
    assert third.due and third.origin == "agent"
