"""Which agent session an MCP call serves (docs/agents.md, "Which session").

A model's tool arguments are its own words: a ``sessionId`` argument could name any clean
session. What the client program itself hands the server is not the model's: Claude Code
starts its MCP servers with ``CLAUDE_CODE_SESSION_ID`` in their environment and sends each
``tools/call`` with ``_meta: {"claudecode/toolUseId": ...}``, the id its PreToolUse hook
announced to the daemon with the session (``observe`` event ``call``). The daemon names the
session by that id first (exact, also after ``/clear`` started a new session in the same
process), then by the environment's. A client that hands neither (Cursor, Codex, Claude
Desktop, OpenClaw's MCP client) serves an unknown session: its writes take what the model
declares, or ``mcp.append_origin``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any, Final

SESSION_ENV: Final = ("CLAUDE_CODE_SESSION_ID",)
CALL_ID_KEYS: Final = ("claudecode/toolUseId",)
MAX_ID: Final = 200

# The tool call being answered (each request runs in its own task: its own context).
CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("call_id", default=None)


def _usable(value: object) -> str | None:
    if isinstance(value, str) and value.strip() and len(value) <= MAX_ID and value.isprintable():
        return value
    return None


def client_session(env: Mapping[str, str]) -> str | None:
    """The session the client started this server for, when it says (Claude Code)."""
    for name in SESSION_ENV:
        found = _usable(env.get(name))
        if found:
            return found
    return None


def call_id_of(params: Mapping[str, Any]) -> str | None:
    """The agent's id of this tool call, from the request's ``_meta``."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    for key in CALL_ID_KEYS:
        found = _usable(meta.get(key))
        if found:
            return found
    return None
