"""Two agents, one memory: Codex and Hermes, set up by memctl (from the client's wheel in a
fresh venv) on one workspace, one after the other, against fake model servers and a daemon
with a fake LLM. Codex writes a decision in its session (memory_append); Hermes' next turn
has it in the recall block, with its citation. Then the reverse: Hermes' session states a
decision, its end flushes it into the notes; Codex's next prompt gets it from its hook's
recall, with the citation.

Runs where both are installed (.ci/run installs them; see test_codex_exec.py and
test_hermes_provider.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread, wait_for
from fakes.chat_server import FakeChatServer
from fakes.openai_server import FakeOpenAIServer
from fakes.responses_server import FakeResponsesServer, call, say, tool_names, tool_outputs
from memoryd_client import MemoryClient
from test_codex_exec import CODEX, _provider
from test_hermes_provider import HERMES

pytestmark = pytest.mark.timeout(400)

CODEX_DECISION = "- Decided: deploys freeze on Fridays (kestrel rule)."
HERMES_DECISION = "- Decided: the on-call rota changes on Tuesdays (osprey rota)."
CITATION = re.compile(r"\[memory/\d{4}-\d{2}-\d{2}\.md#L\d+(?:-L\d+)?\]")


def _codex_appends(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Codex's model in session 1: save the decision once, then answer."""
    if "mcp__memoryd" not in tool_names(body):
        return None
    if tool_outputs(body):
        return [say("Saved.")]
    return [call("memory_append", {"text": CODEX_DECISION}, namespace="mcp__memoryd")]


def _flush_notes(body: dict[str, Any]) -> str:
    """The daemon's LLM: the transcript's decision lines, as notes."""
    said = json.dumps(body.get("messages", []))
    return HERMES_DECISION if "osprey" in said else "NOTHING"


@pytest.mark.skipif(
    CODEX is None or HERMES is None, reason="Codex and Hermes are not both installed"
)
def test_codex_and_hermes_share_one_memory_both_ways(
    md_home: Path, client_bin: Path, openai_server: FakeOpenAIServer
) -> None:
    assert CODEX is not None and HERMES is not None
    team, home = md_home / "team", md_home / "home"
    (team / "memory").mkdir(parents=True)
    (team / "MEMORY.md").write_text("# Memory\n")
    codex_home, hermes_home = home / ".codex", home / ".hermes"
    codex_home.mkdir(parents=True)
    hermes_home.mkdir(parents=True)
    openai_server.answer_chat_with(_flush_notes)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "MEMCTL_"))}
    env.update(
        HOME=str(home),
        CODEX_HOME=str(codex_home),
        HERMES_HOME=str(hermes_home),
        PATH=f"{client_bin}{os.pathsep}{env.get('PATH', '')}",
        MEMORYD_HOME=str(md_home),
        MEMCTL_NO_AUTOSTART="1",
        FAKE_MODEL_KEY="not-a-key",
        OPENAI_API_KEY="not-a-key",
        PYTHONPATH="",
    )

    def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=200,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
        return done

    codex = [CODEX, "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust"]
    llm = {"llm": {"base_url": openai_server.base_url, "model": "fake-chat"}}
    with DaemonThread(md_home, llm) as d, FakeChatServer() as chat:
        with MemoryClient(d.socket_path) as c:
            c.workspace_add(team, "team", wait=True)
        (hermes_home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  base_url: {chat.base_url}\n  default: fake-model\n"
        )
        memctl = str(client_bin / "memctl")
        run([memctl, "setup", "hermes", "-w", "team", "--hermes-bin", HERMES], home)

        # 1. Codex, session 1: the decision, through memoryd's memory_append
        with FakeResponsesServer(_codex_appends) as api:
            (codex_home / "config.toml").write_text(_provider(api.base_url))
            run([memctl, "setup", "codex", "-w", "team"], team)
            run([*codex, "Remember: deploys freeze on Fridays."], team)
            assert any(tool_outputs(b) for b in api.bodies()), "memory_append never ran"
        # 2. Hermes' next turn: recalled, with the citation
        run([HERMES, "-z", "When do deploys freeze?"], home)
        asked = json.dumps(chat.bodies()[-1]["messages"], ensure_ascii=False)
        assert "kestrel rule" in asked and CITATION.search(asked), asked[-1500:]

        # 3. Hermes, a session stating a decision: flushed into the notes at its end
        run([HERMES, "-z", "We decided the on-call rota changes on Tuesdays (osprey rota)."], home)
        with MemoryClient(d.socket_path) as c:
            assert wait_for(lambda: bool(c.search("osprey", workspace="team").results), 30)
        # 4. Codex's next prompt: its hook's recall has it, with the citation
        with FakeResponsesServer() as api:
            (codex_home / "config.toml").write_text(_provider(api.base_url))
            run([memctl, "setup", "codex", "-w", "team"], team)
            run([*codex, "Who handles the on-call rota changes?"], team)
            given = json.dumps(api.bodies()[0]["input"], ensure_ascii=False)
    assert "osprey rota" in given and CITATION.search(given), given[-1500:]
