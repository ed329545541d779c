"""Claude Code itself, headless (``claude -p``), with the hooks ``memctl setup claude-code``
writes, against a fake Anthropic API and a real daemon: the prompt hook's recall reaches
the model's request.

Runs when Claude Code is there: ``$CLAUDE_CODE_BIN``, ``npm ci --prefix
tests/agents/agent_clis`` (what .ci/run does; the pinned native binary from the npm
registry), or ``claude`` on PATH; skipped otherwise, and failed instead when
``AGENT_CLI_TESTS=required``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread
from fakes.anthropic_server import FakeAnthropicServer, tool_results, tool_use
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(120)

BIN = Path(sys.executable).parent
LOCAL = Path(__file__).parent / "agent_clis" / "node_modules" / ".bin" / "claude"


def _claude() -> str | None:
    given = os.environ.get("CLAUDE_CODE_BIN")
    if given:
        return given
    return str(LOCAL) if LOCAL.exists() else shutil.which("claude")


CLAUDE = _claude()
if CLAUDE is None and os.environ.get("AGENT_CLI_TESTS") == "required":
    raise RuntimeError("AGENT_CLI_TESTS=required but Claude Code is not installed (.ci/run does)")
SEARCH = "mcp__memoryd__memory_search"


def _claude_env(md_home: Path, cc_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "MEMCTL_"))}
    env.update(
        HOME=str(cc_home),  # Claude Code's settings and transcripts: not the user's
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",  # the hooks run `memctl`
        MEMORYD_HOME=str(md_home),
        MEMCTL_NO_AUTOSTART="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
    )
    return env


def _memctl(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "memctl"), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def _claude_p(
    prompt: str, cwd: Path, env: dict[str, str], base_url: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAUDE), "-p", prompt],
        cwd=cwd,
        env={**env, "ANTHROPIC_API_KEY": "sk-ant-fake", "ANTHROPIC_BASE_URL": base_url},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.mark.skipif(CLAUDE is None, reason="Claude Code is not installed (see the docstring)")
def test_claude_code_puts_the_prompt_hooks_recall_in_its_request_to_the_model(
    md_home: Path,
) -> None:
    assert CLAUDE is not None
    project, cc_home = md_home / "proj", md_home / "cc"
    (project / "memory").mkdir(parents=True)
    (project / "MEMORY.md").write_text("# Memory\n\n- Releases are cut on Thursdays by Priya.\n")
    cc_home.mkdir()
    env = _claude_env(md_home, cc_home)
    # The daemon reads the Stop hook's transcript from Claude Code's folder in that home.
    with DaemonThread(md_home, env={"HOME": str(cc_home)}) as d, FakeAnthropicServer() as api:
        with MemoryClient(d.socket_path) as c:
            c.workspace_add(project, "proj", wait=True)
        setup = _memctl(["setup", "claude-code", "-w", "proj"], project, env)
        assert setup.returncode == 0, setup.stderr
        run = _claude_p("who cuts the releases?", project, env, api.base_url)
        assert run.returncode == 0, run.stderr
        bodies = [json.dumps(b, ensure_ascii=False) for b in api.messages()]
    asked = [b for b in bodies if "who cuts the releases?" in b]
    assert asked, bodies
    assert "UserPromptSubmit hook additional context: <memoryd-recall>" in asked[0]
    assert "[MEMORY.md#L1-L3]" in asked[0]  # the recall block's citation
    assert "Releases are cut on Thursdays by Priya." in asked[0]
    log = md_home / "state" / "hooks.log"
    assert not log.exists(), log.read_text()  # every hook (SessionStart, prompt, Stop) served


def _ask_memory_search(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The model: search memoryd once for the user's question, then answer."""
    names = [t.get("name") for t in body.get("tools", [])]
    if SEARCH not in names:
        return None  # Claude Code's side requests (titles, quota)
    if tool_results(body):
        return [{"type": "text", "text": "Priya cuts them."}]
    return [tool_use(SEARCH, {"query": "who cuts the releases"})]


@pytest.mark.skipif(CLAUDE is None, reason="Claude Code is not installed (see the docstring)")
def test_claude_p_may_call_memoryds_read_only_tools_after_setup(md_home: Path) -> None:
    """``claude -p`` asks for no permission: setup allows search, get and status (and
    approves the project's .mcp.json server), so the model's memory_search runs."""
    assert CLAUDE is not None
    project, cc_home = md_home / "proj", md_home / "cc"
    (project / "memory").mkdir(parents=True)
    (project / "MEMORY.md").write_text("# Memory\n\n- Releases are cut on Thursdays by Priya.\n")
    cc_home.mkdir()
    env = _claude_env(md_home, cc_home)
    with DaemonThread(md_home, env={"HOME": str(cc_home)}) as d:
        with MemoryClient(d.socket_path) as c:
            c.workspace_add(project, "proj", wait=True)
        with FakeAnthropicServer(_ask_memory_search) as api:
            setup = _memctl(["setup", "claude-code", "-w", "proj"], project, env)
            assert setup.returncode == 0, setup.stderr
            run = _claude_p("who cuts the releases?", project, env, api.base_url)
            assert run.returncode == 0, run.stderr
            asked = [b for b in api.messages() if SEARCH in json.dumps(b.get("tools", []))]
    assert asked, "the model never saw memoryd's tools (the project server was not approved)"
    results = [r for b in asked for r in tool_results(b)]
    assert results, [json.dumps(b)[-500:] for b in asked]
    answer = json.dumps(results[0], ensure_ascii=False)
    assert "haven't granted" not in answer and not results[0].get("is_error"), answer
    assert "Releases are cut on Thursdays by Priya." in answer
