"""``memctl setup CLIENT --print``: what to paste, and where, for each client that setup does
not edit itself (or when asked to print). Each client's text is built from the entries that
setup writes (``setup``, ``codex_setup``), so the printed and the written agree."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd_client.agents import CLIENTS, codex_setup
from memoryd_client.agents.setup import (
    READ_ONLY_TOOLS,
    SERVER_NAME,
    SetupError,
    claude_mcp_entry,
    dump,
    hook_entry,
    hook_events,
    http_entry,
    mcp_entry,
    memctl_command,
    skill_text,
)


def snippet(client: str, http: tuple[str, str] | None = None) -> str:
    """What to paste, and where, for ``client`` (``skill``: the SKILL.md). ``http``: (url,
    token) of ``memctl mcp --http``: the server entry for it (Claude Code, Cursor)."""
    if client == "skill":
        return skill_text()
    if http is not None:
        return _http(client, *http)
    text = _STDIO.get(client)
    if text is None:
        raise SetupError(f"unknown client {client!r} (known: {', '.join(CLIENTS)})")
    return text(memctl_command())


def _http(client: str, url: str, token: str) -> str:
    if client not in ("claude-code", "cursor"):
        raise SetupError(f"{client} is set up over stdio (--http: claude-code, cursor)")
    return (
        f"# {'~/.claude.json mcpServers' if client == 'claude-code' else '~/.cursor/mcp.json'}"
        " (private: the entry carries the token)\n"
        + dump({"mcpServers": {SERVER_NAME: http_entry(url, token, typed=client == "claude-code")}})
    )


def _claude_code(short: str) -> str:
    hooks = {
        name: [{"hooks": [hook_entry(short, event)]}]
        for name, event in hook_events("daemon").items()
    }
    return (
        "# ~/.claude.json: mcpServers (every project), or projects.<project>.mcpServers\n"
        "# (one project), or the project's .mcp.json (shared; each person approves it)\n"
        + dump({"mcpServers": {SERVER_NAME: claude_mcp_entry(short, None)}})
        + "\n# .claude/settings.json (project) or ~/.claude/settings.json (user): hooks\n"
        + dump({"hooks": hooks})
        + "\n# .claude/settings.local.json (project) or ~/.claude/settings.json (user): the\n"
        "# read-only tools claude -p may call (a project's settings.json grants none)\n"
        + dump({"permissions": {"allow": list(READ_ONLY_TOOLS)}})
        + "# without an LLM configured ([llm]) the agent saves its notes itself: a Stop hook\n"
        + "# instead of PreCompact and SessionEnd (memctl setup claude-code --flush agent)\n"
    )


def _cursor(short: str) -> str:
    return "# .cursor/mcp.json (project) or ~/.cursor/mcp.json (every project)\n" + dump(
        {"mcpServers": {SERVER_NAME: mcp_entry(short)}}
    )


def _codex(short: str) -> str:
    hooks: dict[str, Any] = {}
    codex_setup.hook_edit(short, None, "daemon")(hooks, Path("hooks.json"))
    return (
        "# ~/.codex/config.toml (memctl setup codex merges it, with the socket in env)\n"
        + codex_setup.server_table(short, None, {})
        + "\n# ~/.codex/hooks.json (then trust them in codex: /hooks)\n"
        + dump(hooks)
    )


def _claude_desktop(short: str) -> str:
    where = (
        "~/Library/Application Support/Claude/claude_desktop_config.json"
        if sys.platform == "darwin"
        else "~/.config/Claude/claude_desktop_config.json"
    )
    # Claude Desktop starts servers without the shell's PATH: memctl by its absolute path
    return f"# {where}\n# (add --workspace NAME to args when several are registered)\n" + dump(
        {"mcpServers": {SERVER_NAME: mcp_entry(memctl_command(True))}}
    )


def _openclaw(short: str) -> str:
    # OpenClaw hands an MCP server only HOME, PATH, PWD, SHELL and TERM: name the socket.
    from memoryd_client.paths import socket_path

    entry = {**mcp_entry(short), "env": {"MEMORYD_SOCKET": str(socket_path())}}
    return (
        "# ~/.openclaw/openclaw.json (or: openclaw mcp set memoryd ...); "
        "memctl setup openclaw puts memoryd in the memory slot instead\n"
        + dump({"mcp": {"servers": {SERVER_NAME: entry}}})
    )


_STDIO: dict[str, Callable[[str], str]] = {
    "claude-code": _claude_code,
    "cursor": _cursor,
    "codex": _codex,
    "claude-desktop": _claude_desktop,
    "openclaw": _openclaw,
}
