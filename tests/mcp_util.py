"""Helpers for driving ``memctl mcp`` with the MCP SDK's own client against a real daemon
(tests/agents/test_agents_mcp.py and the secrets tests share them)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from daemon_util import DaemonThread
from memoryd_client import MemoryClient

MEMCTL = str(Path(sys.executable).parent / "memctl")


def make_workspace(root: Path, name: str = "proj") -> Path:
    ws = root / name
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tabs over spaces.\n")
    (ws / "memory" / "2025-03-01.md").write_text(
        "# 2025-03-01\n\nWe decided the billing schema keeps invoices immutable.\n"
    )
    return ws


@contextlib.contextmanager
def daemon_with(home: Path, *workspaces: Path) -> Iterator[DaemonThread]:
    with DaemonThread(home) as d:
        with MemoryClient(d.socket_path) as c:
            for ws in workspaces:
                c.workspace_add(ws)
            for ws in workspaces:
                c.reindex(workspace=str(ws))
        yield d


def child_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["MEMORYD_HOME"] = str(home)
    return env


@contextlib.asynccontextmanager
async def stdio_session(
    home: Path, cwd: Path, *extra: str, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """``env``: more environment for the server (what a client hands it, e.g. Claude Code's
    CLAUDE_CODE_SESSION_ID)."""
    params = StdioServerParameters(
        command=MEMCTL, args=["mcp", *extra], env={**child_env(home), **(env or {})}, cwd=str(cwd)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))
