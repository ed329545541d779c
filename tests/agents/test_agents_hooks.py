"""``memctl hook claude-code EVENT`` and ``memctl recall`` as Claude Code runs them: a fresh
process, the event JSON on stdin (made here, in Claude Code's shape), a real daemon."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread
from fakes.openai_server import FakeOpenAIServer
from jobs_util import llm_daemon

pytestmark = pytest.mark.timeout(90)

MEMCTL = str(Path(sys.executable).parent / "memctl")
EVENTS = ("user-prompt-submit", "session-start", "pre-compact", "session-end")


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["MEMORYD_HOME"] = str(home)
    return env


def hook(
    home: Path, event: str, stdin: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMCTL, "hook", "claude-code", event],
        input=stdin,
        env=env_for(home),
        cwd=cwd or home,
        capture_output=True,
        text=True,
        timeout=60,
    )


def payload(ws: Path, name: str, **extra: Any) -> str:
    return json.dumps(
        {
            "session_id": "cc-42",
            "transcript_path": str(ws / "sessions" / "t.jsonl"),  # flush reads sessions/
            "cwd": str(ws),
            "hook_event_name": name,
            **extra,
        }
    )


@pytest.fixture
def workspace(md_home: Path) -> Path:
    ws = md_home / "proj"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- Releases are cut on Thursdays by Priya.\n")
    (ws / "memory" / "2025-03-12.md").write_text("# 2025-03-12\n\n- Migrated CI to arm64.\n")
    (ws / "memory" / "2025-03-11.md").write_text("# 2025-03-11\n\n- Chose ruff over flake8.\n")
    return ws


@pytest.fixture
def daemon(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> Iterator[DaemonThread]:
    with llm_daemon(md_home, workspace, "proj", openai_server.base_url) as d:
        yield d


def log_lines(home: Path) -> list[str]:
    path = home / "state" / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("stdin", ["", "not json {", "[1, 2]", '{"cwd": 5}'])
def test_garbage_on_stdin_and_no_daemon_exit_0_with_nothing_printed(
    md_home: Path, event: str, stdin: str
) -> None:
    proc = hook(md_home, event, stdin)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert len(log_lines(md_home)) == 1


def test_no_daemon_with_a_good_event_exits_0_and_logs_why(md_home: Path) -> None:
    proc = hook(
        md_home,
        "user-prompt-submit",
        payload(md_home, "UserPromptSubmit", prompt="when are releases cut?"),
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert "not running" in log_lines(md_home)[0]


def test_an_unknown_agent_or_event_exits_0(md_home: Path) -> None:
    for argv in (["hook", "claude-code", "post-tool-use"], ["hook", "cursor", "session-start"]):
        proc = subprocess.run(
            [MEMCTL, *argv],
            input="{}",
            env=env_for(md_home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (proc.returncode, proc.stdout) == (0, "")


def test_user_prompt_submit_adds_the_recall_block_as_additional_context(
    daemon: DaemonThread, md_home: Path, workspace: Path
) -> None:
    proc = hook(
        md_home,
        "user-prompt-submit",
        payload(workspace, "UserPromptSubmit", prompt="Who cuts releases, and when?"),
        cwd=workspace / "memory",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert "[MEMORY.md#L1-L3]" in out["additionalContext"]
    assert "Thursdays by Priya" in out["additionalContext"]


def test_user_prompt_submit_with_nothing_relevant_prints_nothing(
    daemon: DaemonThread, md_home: Path, workspace: Path
) -> None:
    proc = hook(
        md_home,
        "user-prompt-submit",
        payload(workspace, "UserPromptSubmit", prompt="explain monads to me"),
    )
    assert (proc.returncode, proc.stdout) == (0, "")
    assert log_lines(md_home) == []


def test_a_cwd_outside_every_workspace_uses_the_only_one(
    daemon: DaemonThread, md_home: Path, tmp_path: Path
) -> None:
    proc = hook(
        md_home,
        "user-prompt-submit",
        payload(tmp_path, "UserPromptSubmit", prompt="who cuts releases?"),
    )
    assert "Priya" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_session_start_prints_a_digest_of_memory_and_the_latest_notes(
    daemon: DaemonThread, md_home: Path, workspace: Path
) -> None:
    proc = hook(md_home, "session-start", payload(workspace, "SessionStart", source="startup"))
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    text = out["additionalContext"]
    assert "Thursdays by Priya" in text
    assert len(text) <= 600 * 4


@pytest.mark.parametrize(
    ("event", "name"), [("pre-compact", "PreCompact"), ("session-end", "SessionEnd")]
)
def test_pre_compact_and_session_end_hand_the_transcript_to_a_flush(
    daemon: DaemonThread,
    md_home: Path,
    workspace: Path,
    openai_server: FakeOpenAIServer,
    event: str,
    name: str,
) -> None:
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "t.jsonl").write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "cc-42",
                "message": {"role": "user", "content": "Remember: staging is read-only."},
            }
        )
        + "\n"
    )
    openai_server.respond_chat("- Staging is read-only.", delay=1.0)
    started = time.monotonic()
    proc = hook(md_home, event, payload(workspace, name, trigger="auto", reason="exit"))
    assert (proc.returncode, proc.stdout) == (0, "")
    assert time.monotonic() - started < 10  # it did not wait for the LLM's answer
    daily = workspace / "memory" / "2025-03-12.md"
    deadline = time.monotonic() + 30
    while "Staging is read-only." not in daily.read_text():
        assert time.monotonic() < deadline, "the flush did not write its notes"
        time.sleep(0.05)
    assert "## Session notes (cc-42, lines 1-1)" in daily.read_text()


# ---------------------------------------------------------------- memctl recall


def test_memctl_recall_prints_the_block_or_nothing(
    daemon: DaemonThread, md_home: Path, workspace: Path
) -> None:
    def recall(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MEMCTL, "recall", *args],
            input=stdin,
            env=env_for(md_home),
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=60,
        )

    found = recall("who", "cuts", "releases")
    assert found.returncode == 0 and "[MEMORY.md#L1-L3]" in found.stdout
    piped = recall("-", "--json", "--budget", "100", stdin="ruff or flake8?")
    data = json.loads(piped.stdout)
    assert data["results"][0]["citation"].startswith("memory/2025-03-11.md#L")
    assert data["tokens"] <= 100
    nothing = recall("explain", "monads")
    assert (nothing.returncode, nothing.stdout) == (0, "")
