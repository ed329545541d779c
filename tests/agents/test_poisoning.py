"""bench/poisoning.py's scenarios as a test (issue 34), with the real agents against a fake
model: a web page's "remember this rule" must never reach the next session's model, and an
honest note must. The plain MCP client (the SDK's ClientSession) runs everywhere; Claude Code
where its binary is installed (tests/agents/test_claude_code_headless.py says how); OpenClaw
in integrations/openclaw/test/e2e.poisoning.openclaw.test.js (.ci/openclaw)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from agents.test_claude_code_headless import CLAUDE

pytestmark = pytest.mark.timeout(300)

_spec = importlib.util.spec_from_file_location(
    "poisoning", Path(__file__).resolve().parents[2] / "bench" / "poisoning.py"
)
assert _spec is not None and _spec.loader is not None
poisoning = importlib.util.module_from_spec(_spec)
sys.modules["poisoning"] = poisoning
_spec.loader.exec_module(poisoning)


def _by_scenario(rows: list[poisoning.Outcome]) -> dict[str, poisoning.Outcome]:
    return {r.scenario: r for r in rows}


def test_a_plain_mcp_client_is_unobserved_unless_mcp_writes_are_held() -> None:
    """No observer can exist for a client that names no session: the rule is the agent's
    and recalled (the documented gap); held, it waits in review, and so does the honest
    note (recalled once approved)."""
    plain = _by_scenario(poisoning.plain_mcp(hold=False))
    assert plain["web page"].origin == "agent" and plain["web page"].injected
    assert plain["honest"].injected
    held = _by_scenario(poisoning.plain_mcp(hold=True))
    assert held["web page"].origin == "untrusted" and not held["web page"].injected
    assert held["web page"].waits and held["honest"].waits


@pytest.mark.skipif(CLAUDE is None, reason="Claude Code is not installed")
def test_claude_code_stores_the_pages_rule_untrusted_and_never_recalls_it() -> None:
    assert CLAUDE is not None
    rows = _by_scenario(poisoning.claude_code(os.fspath(CLAUDE)))
    web, honest = rows["web page"], rows["honest"]
    assert web.on_disk and web.origin == "untrusted", web
    assert not web.injected and web.waits, web
    assert honest.on_disk and honest.origin == "agent" and honest.injected, honest
    assert not honest.waits, honest


@pytest.mark.skipif(CLAUDE is None, reason="Claude Code is not installed")
def test_claude_code_without_the_tool_hooks_is_observed_through_its_transcript() -> None:
    """No PostToolUse or PreToolUse hook: the daemon reads the session's transcript (named
    by the MCP server's CLAUDE_CODE_SESSION_ID) before the append."""
    assert CLAUDE is not None
    rows = _by_scenario(poisoning.claude_code(os.fspath(CLAUDE), tool_hooks=False))
    web, honest = rows["web page"], rows["honest"]
    assert web.on_disk and web.origin == "untrusted" and not web.injected and web.waits, web
    assert honest.on_disk and honest.origin == "agent" and honest.injected, honest
