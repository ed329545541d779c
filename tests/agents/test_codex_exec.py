"""Codex CLI itself (``codex exec``), set up by ``memctl setup codex`` run from the client's
wheel in a fresh venv, against a fake Responses API and a real daemon: the prompt hook's
recall reaches the model's request, the model's memory_search is answered by memoryd, and
Codex's session rollout reads as a transcript (flush, the origin rule, the index).

Runs when Codex is there: ``$CODEX_BIN``, or ``npm ci --prefix tests/agents/agent_clis``
(what .ci/run does); skipped otherwise, and failed instead when ``AGENT_CLI_TESTS=required``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread
from fakes.responses_server import FakeResponsesServer, call, say, tool_names, tool_outputs
from memoryd.files.transcripts import parse_transcript
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(180)

LOCAL = Path(__file__).parent / "agent_clis" / "node_modules" / ".bin" / "codex"
CODEX = os.environ.get("CODEX_BIN") or (str(LOCAL) if LOCAL.exists() else shutil.which("codex"))
if CODEX is None and os.environ.get("AGENT_CLI_TESTS") == "required":
    raise RuntimeError("AGENT_CLI_TESTS=required but Codex is not installed (.ci/run installs it)")
NOTE = "- Releases are cut on Thursdays by Priya."


def _search_once(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The model: memory_search once for the user's question, then answer."""
    if "mcp__memoryd" not in tool_names(body):
        return None
    if tool_outputs(body):
        return [say("Priya cuts them, on Thursdays.")]
    return [call("memory_search", {"query": "who cuts the releases"}, namespace="mcp__memoryd")]


def _provider(base_url: str) -> str:
    return (
        'model = "fake-model"\nmodel_provider = "fake"\n\n'
        f'[model_providers.fake]\nname = "Fake"\nbase_url = "{base_url}"\n'
        'wire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"\n'
    )


@pytest.mark.skipif(CODEX is None, reason="Codex is not installed (see the docstring)")
def test_codex_exec_gets_recall_and_memoryds_tools_after_setup(
    md_home: Path, client_bin: Path
) -> None:
    project, home = md_home / "proj", md_home / "cx"
    (project / "memory").mkdir(parents=True)
    (project / "MEMORY.md").write_text(f"# Memory\n\n{NOTE}\n")
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "MEMCTL_"))}
    env.update(
        HOME=str(home),
        CODEX_HOME=str(codex_home),
        PATH=f"{client_bin}{os.pathsep}{env.get('PATH', '')}",  # the hooks run `memctl`
        MEMORYD_HOME=str(md_home),
        MEMCTL_NO_AUTOSTART="1",
        FAKE_MODEL_KEY="not-a-key",
        PYTHONPATH="",
    )
    # The daemon reads the rollouts under that home's ~/.codex/sessions.
    with DaemonThread(md_home, env={"HOME": str(home)}) as d:
        with MemoryClient(d.socket_path) as c:
            c.workspace_add(project, "proj", wait=True)
        with FakeResponsesServer(_search_once) as api:
            (codex_home / "config.toml").write_text(_provider(api.base_url))
            setup = subprocess.run(
                [str(client_bin / "memctl"), "setup", "codex", "-w", "proj"],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert setup.returncode == 0, setup.stderr
            assert "/hooks" in setup.stdout  # the trust step is said
            # Codex runs untrusted hooks only with this flag (what /hooks trust does for good)
            run = subprocess.run(
                [
                    CODEX,
                    "exec",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-hook-trust",
                    "who cuts the releases?",
                ],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=150,
                stdin=subprocess.DEVNULL,
            )
            assert run.returncode == 0, run.stderr[-3000:]
            bodies = api.bodies()
    asked = [b for b in bodies if "mcp__memoryd" in tool_names(b)]
    assert asked, [tool_names(b) for b in bodies]
    first = json.dumps(asked[0]["input"], ensure_ascii=False)
    assert "<memoryd-recall>" in first and "[MEMORY.md#L1-L3]" in first  # the prompt hook's
    outputs = [o for b in asked for o in tool_outputs(b)]
    assert outputs and "Releases are cut on Thursdays by Priya." in json.dumps(outputs[0])
    log = md_home / "state" / "hooks.log"
    assert not log.exists(), log.read_text()  # every hook served
    # Codex's rollout of the session reads as a transcript: the person's words and the
    # answer, not the harness's context.
    [rollout] = (codex_home / "sessions").rglob("rollout-*.jsonl")
    parsed = parse_transcript(rollout.read_bytes())
    texts = [text for _, text in parsed.messages]
    assert "user: who cuts the releases?" in texts
    assert "assistant: Priya cuts them, on Thursdays." in texts
    assert not any("<environment_context>" in t for t in texts)
    assert parsed.session_id and parsed.session_id in rollout.name
