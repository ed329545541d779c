"""recall and flush in the real daemon (flush's LLM is the fake OpenAI server), and the
transcript reader's Claude Code format."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread, RawConn, memctl
from fakes.clock import FakeClock
from fakes.openai_server import FakeOpenAIServer
from jobs_util import NOW, llm_config, llm_daemon
from memoryd.files.transcripts import parse_transcript
from memoryd_client import (
    AsyncMemoryClient,
    FlushResult,
    MemoryClient,
    RecallItem,
    RecallResult,
)

pytestmark = pytest.mark.timeout(60)

DAILY = "memory/2025-03-12.md"  # NOW's day


@pytest.fixture
def workspace(md_home: Path) -> Path:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(
        "# Memory\n\n## People\n- Dana owns the billing service.\n\n"
        "## Preferences\n- The user wants answers in British English.\n"
    )
    (ws / "memory" / "2025-03-11.md").write_text(
        "# 2025-03-11\n\n- Decided: invoices stay immutable; corrections are new invoices.\n"
    )
    return ws


@pytest.fixture
def projects(md_home: Path) -> Path:
    """Claude Code's folder of a project's transcripts, in the daemon's home."""
    folder = md_home / ".claude" / "projects" / "app"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def daemon(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer, projects: Path
) -> Iterator[DaemonThread]:
    env = {"HOME": str(md_home)}  # the daemon finds ~/.claude/projects there
    with llm_daemon(md_home, workspace, "alice", openai_server.base_url, env=env) as d:
        yield d


# ---------------------------------------------------------------- recall


def test_recall_returns_cited_snippets_within_the_budget(daemon: DaemonThread) -> None:
    with RawConn(daemon.socket_path) as conn:
        out = conn.result("recall", {"query": "who owns billing and are invoices immutable?"})
    cites = [r["citation"] for r in out["results"]]
    assert any(c.startswith("memory/2025-03-11.md#L") for c in cites)
    assert any(c.startswith("MEMORY.md#L") for c in cites)
    assert out["markdown"].startswith("<memoryd-recall>\nRelevant memory")
    assert all(f"[{c}]" in out["markdown"] for c in cites)
    assert 0 < out["tokens"] <= out["budget_tokens"] == 600


def test_recall_of_nothing_relevant_is_empty(daemon: DaemonThread) -> None:
    with RawConn(daemon.socket_path) as conn:
        out = conn.result("recall", {"query": "quantum chromodynamics lattice"})
    assert out["results"] == [] and out["markdown"] == "" and out["tokens"] == 0


def test_recall_budget_is_a_hard_limit_and_no_two_items_share_lines(
    daemon: DaemonThread, workspace: Path
) -> None:
    lines = [
        f"- billing note {i}: invoices are numbered per tenant, series {i}." for i in range(60)
    ]
    (workspace / "memory" / "2025-03-10.md").write_text("# 2025-03-10\n\n" + "\n".join(lines))
    with RawConn(daemon.socket_path) as conn:
        small = conn.result(
            "recall",
            {"query": "billing invoices tenant series", "budget_tokens": 120, "min_score": 0.0},
        )
        big = conn.result(
            "recall",
            {"query": "billing invoices tenant series", "budget_tokens": 2000, "min_score": 0.0},
        )
    assert small["tokens"] <= 120
    assert len(big["results"]) >= len(small["results"])
    seen: dict[str, list[tuple[int, int]]] = {}
    for r in big["results"]:
        for start, end in seen.get(r["path"], []):
            assert r["end_line"] < start or r["start_line"] > end, big["results"]
        seen.setdefault(r["path"], []).append((r["start_line"], r["end_line"]))


def test_recall_refuses_bad_params(daemon: DaemonThread) -> None:
    with RawConn(daemon.socket_path) as conn:
        for params in ({"query": "x", "budget_tokens": 5}, {"query": "x", "bogus": 1}, {}):
            frame = conn.call("recall", params)
            assert frame["ok"] is False and frame["error"]["code"] == "invalid_params"


def test_client_recall_is_typed_sync_and_async_alike(daemon: DaemonThread) -> None:
    query = "who owns billing and are invoices immutable?"
    with MemoryClient(daemon.socket_path) as c:
        out = c.recall(query, workspace="alice", budget_tokens=300, min_score=0.1)
        none = c.recall("quantum chromodynamics lattice", sources="memory")

    async def main() -> RecallResult:
        async with AsyncMemoryClient(daemon.socket_path) as c:
            return await c.recall(query, workspace="alice", budget_tokens=300, min_score=0.1)

    again = asyncio.run(main())
    assert isinstance(out, RecallResult) and out.results
    assert all(isinstance(item, RecallItem) for item in out.results)
    first = out.results[0]
    assert first.citation == f"{first.path}#L{first.start_line}-L{first.end_line}"
    assert first.citation in out.markdown and first.text in out.markdown
    assert 0 < out.tokens <= out.budget_tokens == 300
    assert out.raw["markdown"] == out.markdown
    assert [i.citation for i in again.results] == [i.citation for i in out.results]
    assert again.markdown == out.markdown
    assert (none.markdown, none.results, none.tokens) == ("", [], 0)


# ---------------------------------------------------------------- flush


def claude_code_transcript(
    path: Path, turns: list[tuple[str, Any]], session: str = "s-1", mode: str = "w"
) -> None:
    with path.open(mode) as f:
        for role, content in turns:
            f.write(
                json.dumps(
                    {
                        "type": role,
                        "sessionId": session,
                        "uuid": "u",
                        "timestamp": "2025-03-12T09:00:00Z",
                        "message": {"role": role, "content": content},
                    }
                )
                + "\n"
            )


def flush(daemon: DaemonThread, transcript: Path, session: str = "s-1") -> dict[str, Any]:
    """The run's record (the wire map) of a flush waited for."""
    with MemoryClient(daemon.socket_path) as c:
        out = c.flush(transcript, session, workspace="alice", wait=True)
    assert out.queued and out.workspace == "alice" and out.run is not None
    return out.run.raw


def test_flush_appends_the_notes_once_and_never_the_same_range_twice(
    daemon: DaemonThread,
    workspace: Path,
    md_home: Path,
    openai_server: FakeOpenAIServer,
    projects: Path,
) -> None:
    t = projects / "claude.jsonl"
    claude_code_transcript(
        t,
        [
            ("user", "Let's use Postgres 16 for the fleet; Dana agreed."),
            (
                "assistant",
                [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "Noted: Postgres 16."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}},
                ],
            ),
            ("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "SECRET OUTPUT"}]),
        ],
    )
    openai_server.respond_chat("- The fleet uses Postgres 16 (Dana agreed).")
    run = flush(daemon, t)
    assert run["status"] == "ok", run
    daily = workspace / DAILY
    text = daily.read_text()
    assert "## Session notes (s-1, lines 1-3)" in text
    assert "- The fleet uses Postgres 16 (Dana agreed)." in text
    prompt = openai_server.requests_to("chat")[-1].body["messages"][-1]["content"]
    assert "Postgres 16 for the fleet" in prompt and "Noted: Postgres 16." in prompt
    assert "SECRET OUTPUT" not in prompt and "hmm" not in prompt

    calls = len(openai_server.requests_to("chat"))
    again = flush(daemon, t)
    assert again["status"] == "ok" and "nothing new" in again["message"]
    assert len(openai_server.requests_to("chat")) == calls
    assert daily.read_text() == text

    claude_code_transcript(t, [("user", "Also: the deadline is 2025-04-01.")], mode="a")
    openai_server.respond_chat("- Deadline: 2025-04-01.")
    third = flush(daemon, t)
    assert third["status"] == "ok", third
    after = daily.read_text()
    assert after.startswith(text) and "## Session notes (s-1, lines 4-4)" in after
    last_prompt = openai_server.requests_to("chat")[-1].body["messages"][-1]["content"]
    assert "deadline is 2025-04-01" in last_prompt and "Postgres" not in last_prompt
    with MemoryClient(daemon.socket_path) as c:
        hits = c.search("deadline", workspace="alice").results
    assert hits and hits[0].path == DAILY


@pytest.mark.parametrize(
    ("answer", "finish"),
    [
        ("", "stop"),
        ("- half a note that was cut", "length"),
        ("Sure! Here are the notes:\n- a fact", "stop"),
        ("- a fact\n\nLet me know if you need anything else.", "stop"),
    ],
)
def test_a_bad_answer_writes_nothing_and_the_range_is_tried_again(
    daemon: DaemonThread,
    workspace: Path,
    md_home: Path,
    openai_server: FakeOpenAIServer,
    answer: str,
    finish: str,
    projects: Path,
) -> None:
    (workspace / DAILY).write_text("# 2025-03-12\n\n- morning note\n")
    before = (workspace / DAILY).read_bytes()
    t = projects / "claude.jsonl"
    claude_code_transcript(t, [("user", "Remember that the staging DB is read-only.")])
    openai_server.respond_chat(answer, finish)
    run = flush(daemon, t)
    assert run["status"] == "failed", run
    assert (workspace / DAILY).read_bytes() == before
    openai_server.respond_chat("- The staging DB is read-only.")
    retry = flush(daemon, t)
    assert retry["status"] == "ok", retry
    assert "## Session notes (s-1, lines 1-1)" in (workspace / DAILY).read_text()


def test_nothing_worth_remembering_writes_nothing_and_moves_on(
    daemon: DaemonThread,
    workspace: Path,
    md_home: Path,
    openai_server: FakeOpenAIServer,
    projects: Path,
) -> None:
    t = projects / "claude.jsonl"
    claude_code_transcript(t, [("user", "hi"), ("assistant", "Hello!")])
    openai_server.respond_chat("NOTHING")
    run = flush(daemon, t)
    assert run["status"] == "ok" and "nothing worth remembering" in run["message"]
    assert not (workspace / DAILY).exists()
    assert "nothing new" in flush(daemon, t)["message"]


def test_flush_reads_openclaw_session_jsonl_too(
    daemon: DaemonThread, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    t = workspace / "sessions" / "oc.jsonl"
    t.parent.mkdir()
    t.write_text(
        "".join(
            json.dumps(x) + "\n"
            for x in [
                {
                    "type": "session",
                    "version": 1,
                    "id": "oc-7",
                    "timestamp": "2025-03-12T08:00:00Z",
                },
                {
                    "type": "message",
                    "message": {"role": "user", "content": "Our Q2 goal is SOC 2."},
                },
                {"type": "tool_call", "name": "read", "arguments": {}},
            ]
        )
    )
    openai_server.respond_chat("- Q2 goal: SOC 2.")
    run = flush(daemon, t, "oc-7")
    assert run["status"] == "ok", run
    assert (
        "Our Q2 goal is SOC 2."
        in openai_server.requests_to("chat")[-1].body["messages"][-1]["content"]
    )
    assert "## Session notes (oc-7, lines 1-3)" in (workspace / DAILY).read_text()


def test_flush_without_an_llm_is_skipped_with_the_reason(
    md_home: Path, workspace: Path, projects: Path
) -> None:
    t = projects / "claude.jsonl"
    claude_code_transcript(t, [("user", "Remember the wifi password is in 1Password.")])
    config = {"workspaces": [{"path": str(workspace), "name": "alice"}]}
    with DaemonThread(md_home, config, {"HOME": str(md_home)}, clock=FakeClock(NOW)) as d:
        run = flush(d, t)
    assert run["status"] == "skipped" and "no LLM configured" in run["message"]


def test_a_transcript_longer_than_a_run_is_flushed_in_steps_that_keep_their_offset(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer, projects: Path
) -> None:
    """A run takes what its llm.max_calls_per_run calls can read, writes those notes and
    moves the offset there; the next flush goes on. Nothing is refused, nothing repeated."""
    t = projects / "long.jsonl"
    turns = [
        ("user", f"Fact {i:03d}: " + "the build cache lives on disk two. " * 6) for i in range(60)
    ]
    claude_code_transcript(t, turns)
    config = {
        "workspaces": [{"path": str(workspace), "name": "alice"}],
        # ~1,500 characters a call, 3 calls a run: ~20 of the 60 messages a run
        "llm": llm_config(
            openai_server.base_url, context_tokens=1024, max_output_tokens=128, max_calls_per_run=3
        ),
    }
    openai_server.respond_chat("- The build cache lives on disk two.")
    prompts: list[str] = []
    runs = []
    with DaemonThread(md_home, config, {"HOME": str(md_home)}, clock=FakeClock(NOW)) as d:
        for _ in range(10):
            run = flush(d, t)
            assert run["status"] == "ok", run
            runs.append(run)
            if "nothing new" in run["message"]:
                break
    chats = openai_server.requests_to("chat")
    prompts = [r.body["messages"][-1]["content"] for r in chats]
    assert all(r["report"].get("llm_calls", 0) <= 3 for r in runs)
    steps = [r for r in runs if "nothing new" not in r["message"]]
    assert len(steps) >= 3 and all(r["report"]["more"] for r in steps[:-1])
    assert "the next flush continues there" in steps[0]["message"]
    assert "more" not in steps[-1]["report"] and steps[-1]["report"]["to_line"] == 60
    for before, after in itertools.pairwise(steps):  # ranges follow each other
        assert after["report"]["from_line"] == before["report"]["to_line"] + 1
    for i in range(60):  # every message was read, once
        assert sum(f"Fact {i:03d}:" in p for p in prompts) == 1
    daily = (workspace / DAILY).read_text()
    assert daily.count("## Session notes (s-1, lines ") == len(steps)


def test_a_single_message_longer_than_a_run_is_read_from_its_beginning(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer, projects: Path
) -> None:
    t = projects / "huge.jsonl"
    claude_code_transcript(
        t, [("user", "START " + "x" * 200_000), ("user", "NEXT " + "y" * 200_000)]
    )
    config = {
        "workspaces": [{"path": str(workspace), "name": "alice"}],
        "llm": llm_config(
            openai_server.base_url, context_tokens=1024, max_output_tokens=128, max_calls_per_run=2
        ),
    }
    openai_server.respond_chat("NOTHING")
    with DaemonThread(md_home, config, {"HOME": str(md_home)}, clock=FakeClock(NOW)) as d:
        first = flush(d, t)
        second = flush(d, t)
    assert first["status"] == "ok" and first["report"]["cut_line"] == 1
    assert first["report"]["to_line"] == 1 and first["report"]["llm_calls"] <= 2
    assert first["report"]["more"] is True
    assert second["status"] == "ok" and second["report"]["cut_line"] == 2
    assert second["report"]["to_line"] == 2 and second["report"]["llm_calls"] <= 2
    prompts = [r.body["messages"][-1]["content"] for r in openai_server.requests_to("chat")]
    assert "START" in prompts[0] and "NEXT" in prompts[-2]


def test_flush_refuses_a_relative_or_missing_transcript(
    daemon: DaemonThread, projects: Path
) -> None:
    with RawConn(daemon.socket_path) as conn:
        for path in ("relative.jsonl", str(projects / "missing.jsonl")):
            frame = conn.call("flush", {"transcript": path, "session_id": "s"})
            assert frame["error"]["code"] == "invalid_params"
            assert frame["error"]["data"]["param"] == "transcript"


def test_flush_reads_only_the_agents_transcript_folders(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer, projects: Path
) -> None:
    """Bob's transcript named with workspace alice is refused, however it is reached; a
    folder the configuration adds is read."""
    bob = md_home / "bob" / "sessions"
    bob.mkdir(parents=True)
    secret = bob / "b1.jsonl"
    claude_code_transcript(secret, [("user", "Bob's salary is 90k.")], session="b1")
    (projects / "link.jsonl").symlink_to(secret)  # a link from an allowed folder
    extra = md_home / "exports"
    extra.mkdir()
    claude_code_transcript(extra / "e1.jsonl", [("user", "Exports run nightly.")], session="e1")
    config = {
        "workspaces": [{"path": str(workspace), "name": "alice"}],
        "llm": llm_config(openai_server.base_url),
        "agents": {"transcript_folders": [str(extra)]},
    }
    env = {"HOME": str(md_home)}
    openai_server.respond_chat("- Exports run nightly.")
    with DaemonThread(md_home, config, env, clock=FakeClock(NOW)) as d:
        with RawConn(d.socket_path) as conn:
            for path in (secret, projects / "link.jsonl", projects / ".." / ".." / "x.jsonl"):
                frame = conn.call(
                    "flush", {"transcript": str(path), "session_id": "b1", "workspace": "alice"}
                )
                assert frame["error"]["code"] == "forbidden_path", frame
                message = frame["error"]["message"]
                assert "not in an agent's transcript folder" in message
                assert "agents.transcript_folders" in message
        assert flush(d, extra / "e1.jsonl", "e1")["status"] == "ok"
    assert not any(
        "salary" in r.body["messages"][-1]["content"] for r in openai_server.requests_to("chat")
    )
    assert "Exports run nightly." in (workspace / DAILY).read_text()


def test_client_flush_is_typed_queued_or_waited_for_and_takes_a_relative_path(
    daemon: DaemonThread,
    workspace: Path,
    md_home: Path,
    openai_server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    projects: Path,
) -> None:
    claude_code_transcript(projects / "claude.jsonl", [("user", "Ship on Fridays, never Mondays.")])
    monkeypatch.chdir(projects)  # the daemon wants an absolute path: the client makes it so
    openai_server.respond_chat("- Releases ship on Fridays.")

    async def main() -> FlushResult:
        async with AsyncMemoryClient(daemon.socket_path) as c:
            return await c.flush("claude.jsonl", "s-9", workspace="alice", wait=True)

    waited = asyncio.run(main())
    assert waited.queued and waited.run is not None
    assert (waited.run.status, waited.run.workspace) == ("ok", "alice")
    assert "- Releases ship on Fridays." in (workspace / DAILY).read_text()
    claude_code_transcript(projects / "claude.jsonl", [("user", "Q3: hire two.")], mode="a")
    openai_server.respond_chat("- Q3 plan: hire two.")
    with MemoryClient(daemon.socket_path) as c:
        queued = c.flush("claude.jsonl", "s-9", workspace="alice")
        assert (queued.queued, queued.workspace, queued.run) == (True, "alice", None)
        for _ in range(200):  # the queued run ends by itself
            if "hire two" in (workspace / DAILY).read_text():
                break
            asyncio.run(asyncio.sleep(0.05))
    assert "## Session notes (s-9, lines 2-2)" in (workspace / DAILY).read_text()


def test_memctl_flush_waits_prints_the_run_and_exits_1_when_it_failed(
    daemon: DaemonThread,
    workspace: Path,
    md_home: Path,
    openai_server: FakeOpenAIServer,
    projects: Path,
) -> None:
    t = projects / "2f1c-session.jsonl"
    claude_code_transcript(t, [("user", "The on-call rota starts with Priya.")])
    # Queued, not waited for: it runs first (one flush at a time per workspace, in order).
    openai_server.respond_chat("NOTHING")
    code, out, _ = memctl(daemon, "flush", str(t), "--session-id", "other", "-w", "alice")
    assert code == 0 and out == f"flush of {t} queued for workspace alice\n"

    openai_server.respond_chat("- The on-call rota starts with Priya.")
    code, out, err = memctl(daemon, "flush", str(t), "--wait", "-w", "alice")
    assert (code, err) == (0, "")
    assert "flush (alice): ok" in out
    # The session id defaults to the file's name without .jsonl (Claude Code's session id).
    assert "## Session notes (2f1c-session, lines 1-1)" in (workspace / DAILY).read_text()

    claude_code_transcript(t, [("user", "And Sam after her.")], mode="a")
    openai_server.respond_chat("- a note that was cut", "length")
    before = (workspace / DAILY).read_bytes()
    code, out, _ = memctl(daemon, "flush", str(t), "--wait", "--json", "-w", "alice")
    assert code == 1
    answer = json.loads(out)
    assert answer["queued"] is True and answer["run"]["status"] == "failed"
    assert (workspace / DAILY).read_bytes() == before
    code, _, err = memctl(daemon, "flush", os.fspath(projects / "nope.jsonl"), "-w", "alice")
    assert code == 1 and "is not a file" in err


def test_jobs_list_history_shows_flush_runs_by_hook_and_by_hand(
    daemon: DaemonThread, md_home: Path, openai_server: FakeOpenAIServer, projects: Path
) -> None:
    t = projects / "s-h.jsonl"
    claude_code_transcript(t, [("user", "The release train leaves on Thursdays.")])
    openai_server.respond_chat("- Release train: Thursdays.")
    assert flush(daemon, t)["trigger"] == "hook"  # the client library's default: a hook
    claude_code_transcript(t, [("user", "And the freeze starts Tuesday.")], mode="a")
    openai_server.respond_chat("- Freeze: Tuesdays.")
    code, _, err = memctl(daemon, "flush", str(t), "--session-id", "s-1", "--wait", "-w", "alice")
    assert (code, err) == (0, "")

    code, out, _ = memctl(daemon, "jobs", "list", "--history", "5", "--json", "-w", "alice")
    assert code == 0
    entry = next(j for j in json.loads(out)["jobs"] if j["name"] == "flush")
    assert (entry["schedule"], entry["next_run"], entry["uses_llm"]) == ("", None, True)
    assert [r["trigger"] for r in entry["history"]] == ["manual", "hook"]
    assert entry["last_run"]["trigger"] == "manual"
    code, text, _ = memctl(daemon, "jobs", "list", "--history", "5", "-w", "alice")
    assert code == 0 and "flush" in text and "on request" in text
    assert "manual   ok: lines 2-2" in text and "hook     ok: lines 1-1" in text


# ---------------------------------------------------------------- transcript reader


def test_claude_code_lines_keep_user_and_assistant_text_only() -> None:
    lines = [
        {"type": "user", "sessionId": "cc-1", "message": {"role": "user", "content": "plain"}},
        {
            "type": "assistant",
            "sessionId": "cc-1",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "answer"},
                    {"type": "tool_use", "name": "Bash"},
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "content": "tool output"}],
            },
        },
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "injected"}},
        {"type": "user", "isCompactSummary": True, "message": {"content": "summary"}},
        {"type": "file-history-snapshot", "snapshot": {}},
        {"type": "system", "subtype": "stop_hook_summary"},
    ]
    parsed = parse_transcript("".join(json.dumps(x) + "\n" for x in lines).encode())
    assert parsed.messages == [(1, "user: plain"), (2, "assistant: answer")]
    assert parsed.session_id == "cc-1"
    assert parsed.skipped == 5 and parsed.malformed == 0


def test_recall_asks_search_for_about_one_hit_per_50_tokens_of_budget() -> None:
    # Each hit costs the search a snippet and a hook recalls before every prompt: the
    # default budget (600) asks for 12, not 20; a large budget for more.
    from memoryd.index.search.recall import candidates

    assert [candidates(b) for b in (50, 600, 1000, 8000)] == [8, 12, 20, 40]


# ---------------------------------------------------------------- flush and provenance


def _search_origin(daemon: DaemonThread, query: str) -> dict[str, str]:
    with MemoryClient(daemon.socket_path) as c:
        c.reindex(workspace="alice")
        hits = c.search(query, workspace="alice", min_score=0.0).results
    return {h.snippet: h.origin or "owner" for h in hits}


def test_flush_makes_what_follows_a_web_fetch_untrusted_for_the_rest_of_that_turn(
    daemon: DaemonThread,
    workspace: Path,
    openai_server: FakeOpenAIServer,
    projects: Path,
) -> None:
    t = projects / "web.jsonl"
    claude_code_transcript(
        t,
        [
            ("user", "Remember: our staging host is stage.internal."),
            ("assistant", "Noted: staging is stage.internal."),
            ("user", "Look up the vendor's rate limits."),
            (
                "assistant",
                [
                    {"type": "text", "text": "Fetching the vendor docs."},
                    {"type": "tool_use", "id": "w1", "name": "WebFetch", "input": {}},
                ],
            ),
            ("user", [{"type": "tool_result", "tool_use_id": "w1", "content": "page text"}]),
            ("assistant", "The vendor allows 100 requests a minute."),
        ],
    )
    openai_server.respond_chat("- Staging host is stage.internal.")
    openai_server.respond_chat("- Vendor rate limit: 100 requests a minute.")
    run = flush(daemon, t)
    assert run["status"] == "ok", run
    prompts = [r.body["messages"][-1]["content"] for r in openai_server.requests_to("chat")]
    trusted, untrusted = prompts[-2], prompts[-1]
    assert "stage.internal" in trusted and "Fetching the vendor docs." in trusted
    assert "100 requests" not in trusted
    assert "100 requests" in untrusted and "stage.internal" not in untrusted
    found = _search_origin(daemon, "staging host vendor rate limit")
    joined = " ".join(found)
    assert "stage.internal" in joined
    (origin,) = {o for s, o in found.items() if "rate limit" in s.lower()}
    assert origin == "untrusted"


@pytest.mark.parametrize("kind", ["cron", "heartbeat", "subagent"])
def test_flush_of_a_scheduled_or_delegated_session_writes_nothing_and_says_why(
    daemon: DaemonThread,
    workspace: Path,
    openai_server: FakeOpenAIServer,
    projects: Path,
    kind: str,
) -> None:
    t = projects / f"{kind}.jsonl"
    claude_code_transcript(t, [("user", "heartbeat: all systems nominal")])
    calls = len(openai_server.requests_to("chat"))
    with MemoryClient(daemon.socket_path) as c:
        out = c.flush(t, "s-9", workspace="alice", wait=True, session_kind=kind)
    assert out.run is not None and out.run.raw["status"] == "skipped"
    assert kind in out.run.raw["message"]
    assert len(openai_server.requests_to("chat")) == calls
    assert not (workspace / DAILY).exists()


def test_flush_drops_blocks_memoryd_injected_before_summarising(
    daemon: DaemonThread,
    workspace: Path,
    openai_server: FakeOpenAIServer,
    projects: Path,
) -> None:
    t = projects / "loop.jsonl"
    injected = (
        "<memoryd-recall>\nRelevant memory (memoryd recall; cite as path#Lstart-Lend):\n\n"
        "[MEMORY.md#L4-L4]\n- Dana owns the billing service.\n</memoryd-recall>"
    )
    claude_code_transcript(
        t, [("user", f"{injected}\nWhat should the invoice footer say?"), ("assistant", "Thanks.")]
    )
    openai_server.respond_chat("NOTHING")
    run = flush(daemon, t)
    assert run["status"] == "ok", run
    prompt = openai_server.requests_to("chat")[-1].body["messages"][-1]["content"]
    assert "invoice footer" in prompt and "Dana owns" not in prompt
