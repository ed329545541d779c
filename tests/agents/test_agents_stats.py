"""``memctl stats`` and ``MemoryClient.stats()``: what memory cost each agent, counted by a
real daemon from what really happened: recall blocks injected (and empty recalls) through
the Claude Code and Codex hooks, a session-start digest, a flush's LLM tokens (a fake LLM
that answers its usage), and recalled lines later searched again or cited in a transcript.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from daemon_util import DaemonThread, memctl
from fakes.openai_server import FakeOpenAIServer
from memoryd_client import MemoryClient
from memoryd_client.agents.hooks import run_hook


def hook(d: DaemonThread, agent: str, event: str, payload: dict[str, Any]) -> str:
    out = io.StringIO()
    code = run_hook(
        agent,
        event,
        io.StringIO(json.dumps(payload)),
        out,
        socket=str(d.socket_path),
        log=d.home / "hooks.log",
    )
    assert code == 0
    return out.getvalue()


def test_stats_count_each_agents_recall_digest_llm_and_recalled_lines_used_again(
    md_home: Path, openai_server: FakeOpenAIServer
) -> None:
    ws = md_home / "proj"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- Releases are cut on Thursdays by Priya.\n")
    (ws / "memory" / "2025-03-01.md").write_text(
        "# 2025-03-01\n\n- The billing service keeps invoices immutable.\n"
    )
    openai_server.answer_chat_with(lambda body: "- Priya cuts the releases.")
    llm = {"llm": {"base_url": openai_server.base_url, "model": "fake-chat"}}
    with DaemonThread(md_home, llm) as d:
        with MemoryClient(d.socket_path) as c:
            c.workspace_add(ws, "proj", wait=True)
        cwd = str(ws)
        said = hook(
            d,
            "claude-code",
            "user-prompt-submit",
            {"prompt": "who cuts the releases?", "cwd": cwd, "session_id": "s1"},
        )
        assert "Releases are cut on Thursdays" in said
        assert (
            hook(
                d,
                "claude-code",
                "user-prompt-submit",
                {"prompt": "zebra crossing quantum", "cwd": cwd, "session_id": "s1"},
            )
            == ""
        )
        assert "billing" in hook(
            d,
            "codex",
            "user-prompt-submit",
            {"prompt": "billing invoices immutable?", "cwd": cwd, "session_id": "s2"},
        )
        assert hook(d, "claude-code", "session-start", {"cwd": cwd, "session_id": "s1"})
        with MemoryClient(d.socket_path) as c:
            c.search("billing invoices", workspace="proj")  # codex's recalled line, again
            # a transcript whose answer cites the line recall gave claude-code
            transcript = ws / "sessions" / "s1.jsonl"
            transcript.parent.mkdir()
            lines = [
                {"type": "user", "message": {"role": "user", "content": "who cuts releases?"}},
                {
                    "type": "assistant",
                    "message": {"role": "assistant", "content": "Priya (MEMORY.md#L3)."},
                },
            ]
            transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
            run = c.flush(transcript, "s1", workspace="proj", wait=True)
            assert run.run is not None and run.run.status == "ok", run.raw
            stats = c.stats(workspace="proj")
        code, text, err = memctl(d, "stats", "-w", "proj")
        code_json, raw, _ = memctl(d, "stats", "--json", "--daily")
    totals = stats.totals()
    claude, codex = totals[("claude-code", "proj")], totals[("codex", "proj")]
    assert claude["recalls"] == 2 and claude["recall_empty"] == 1
    assert claude["recall_tokens"] == (len(said_block(said)) + 3) // 4
    assert claude["digests"] == 1 and claude["digest_tokens"] > 0
    assert claude["recalled_cited"] == 1  # MEMORY.md#L3, cited in the flushed answer
    assert codex["recalls"] == 1 and codex["recalled_searched"] == 1
    assert "recall_empty" not in codex
    flusher = next(m for (agent, _), m in totals.items() if "llm_tokens_flush" in m)
    assert flusher["llm_tokens_flush"] > 0  # the fake LLM's usage
    assert code == 0, err
    assert "claude-code" in text and "codex" in text and "recall tok" in text
    assert code_json == 0 and json.loads(raw)["rows"][0]["day"] == stats.rows[0].day


def said_block(hook_output: str) -> str:
    return json.loads(hook_output)["hookSpecificOutput"]["additionalContext"]
