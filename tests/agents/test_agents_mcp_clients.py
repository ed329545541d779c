"""``memctl mcp`` driven by MCP clients nobody on this project wrote: the MCP Inspector's CLI
(stdio and streamable HTTP, each protocol era) and the TypeScript SDK's Client, against a
real daemon. Their npm packages are installed by .ci/run (tests/agents/mcp_clients); without
them these tests skip, unless MCP_CLIENT_TESTS=required (as .ci/run sets it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_util import MEMCTL, child_env, daemon_with, make_workspace

pytestmark = pytest.mark.timeout(180)

CLIENTS = Path(__file__).parent / "mcp_clients"
INSPECTOR = (
    CLIENTS / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher"
)
INSPECTOR_BIN = INSPECTOR / "build" / "index.js"


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None or not INSPECTOR_BIN.is_file():
        if os.environ.get("MCP_CLIENT_TESTS") == "required":
            pytest.fail(f"node or the MCP clients are missing (npm ci in {CLIENTS})")
        pytest.skip(f"the MCP clients are not installed (npm ci in {CLIENTS})")
    return found


def run_node(node: str, home: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = child_env(home)
    env["HOME"] = str(home)  # the Inspector keeps a catalog under ~/.mcp-inspector
    return subprocess.run(
        [node, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def inspector(
    node: str, home: Path, cwd: Path, era: str, target: list[str], *call: str
) -> tuple[dict[str, Any], str]:
    # The Inspector gives a stdio server a few variables only (PATH, HOME, ...): the rest by -e.
    pass_env = [
        f"{k}={v}" for k, v in child_env(home).items() if k.startswith(("MEMORYD_", "MEMCTL_"))
    ]
    proc = run_node(
        node,
        home,
        cwd,
        str(INSPECTOR_BIN),
        "--cli",
        "--protocol-era",
        era,
        "--format",
        "json",
        *(arg for pair in pass_env for arg in ("-e", pair)),
        *target,
        *call,
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    out: dict[str, Any] = json.loads(proc.stdout)["result"]
    return out, proc.stderr


@pytest.mark.parametrize("era", ["auto", "modern", "legacy"])
def test_inspector_cli_over_stdio(node: str, md_home: Path, era: str) -> None:
    ws = make_workspace(md_home)
    with daemon_with(md_home, ws):
        listed, _ = inspector(node, md_home, ws, era, [MEMCTL, "mcp"], "--method", "tools/list")
        assert {t["name"] for t in listed["tools"]} == {
            "memory_search",
            "memory_get",
            "memory_append",
            "memory_forget",
            "memory_status",
            "memory_export",
            "memory_import",
            "memory_review",
        }
        found, err = inspector(
            node,
            md_home,
            ws,
            era,
            [MEMCTL, "mcp"],
            "--method",
            "tools/call",
            "--tool-name",
            "memory_search",
            "--tool-arg",
            "query=billing schema",
        )
        assert found["isError"] is False
        assert found["structuredContent"]["results"][0]["path"] == "memory/2025-03-01.md"
        assert "Failed to validate" not in err  # the server's stderr, passed through


@pytest.mark.parametrize("era", ["auto", "modern", "legacy"])
def test_inspector_cli_over_http(node: str, md_home: Path, era: str) -> None:
    from test_agents_mcp import http_server

    ws = make_workspace(md_home)
    with daemon_with(md_home, ws), http_server(md_home, ws) as url:
        token = (md_home / "state" / "mcp-token").read_text().strip()  # what setup writes
        found, _ = inspector(
            node,
            md_home,
            ws,
            era,
            [url, "--header", f"Authorization: Bearer {token}"],
            "--method",
            "tools/call",
            "--tool-name",
            "memory_get",
            "--tool-arg",
            "path=MEMORY.md",
        )
        assert "tabs over spaces" in found["structuredContent"]["text"]


def check_ts_session(out: dict[str, Any], ws: Path) -> None:
    assert out["server"]["name"] == "memoryd"
    assert set(out["capabilities"]) == {"tools"}
    assert {t["name"] for t in out["tools"]} >= {"memory_search", "memory_status"}
    assert out["search"]["structuredContent"]["results"][0]["path"] == "memory/2025-03-01.md"
    assert out["get"]["structuredContent"]["text"] == "- The user prefers tabs over spaces."
    assert out["append"]["isError"] is False
    assert "TS client was here." in (ws / "memory" / "2025-03-02.md").read_text()
    assert out["status"]["structuredContent"]["defaultWorkspace"] == "proj"
    assert out["bad"]["isError"] is True
    assert "argument maxResults" in out["bad"]["content"][0]["text"]


def test_typescript_sdk_client_over_stdio(node: str, md_home: Path) -> None:
    ws = make_workspace(md_home)
    with daemon_with(md_home, ws):
        proc = run_node(node, md_home, ws, str(CLIENTS / "ts_session.mjs"), "stdio", MEMCTL)
    assert proc.returncode == 0, proc.stderr
    check_ts_session(json.loads(proc.stdout), ws)


def test_typescript_sdk_client_over_http(node: str, md_home: Path) -> None:
    from test_agents_mcp import http_server

    ws = make_workspace(md_home)
    with daemon_with(md_home, ws), http_server(md_home, ws) as url:
        token = (md_home / "state" / "mcp-token").read_text().strip()  # what setup writes
        proc = run_node(node, md_home, ws, str(CLIENTS / "ts_session.mjs"), "http", url, token)
    assert proc.returncode == 0, proc.stderr
    check_ts_session(json.loads(proc.stdout), ws)


def test_the_readme_says_how_to_install_these_clients_as_ci_does() -> None:
    # Without them these tests skip: the README's test command alone does not install them.
    root = CLIENTS.parents[2]
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    installs = [line.split(" --loglevel")[0] for line in ci.splitlines() if "npm ci" in line]
    assert "npm ci --prefix tests/agents/mcp_clients --no-audit --no-fund" in installs
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert all(f"\n{command}\n" in readme for command in installs), installs
