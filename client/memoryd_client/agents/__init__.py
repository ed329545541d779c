"""How agents reach memoryd without writing code: the MCP server (``memctl mcp``), recall,
Claude Code hooks, ``memctl setup`` and the shell skill (SKILL.md).

Only :mod:`memoryd_client.agents.mcp_server` imports the ``mcp`` SDK (the ``mcp`` extra);
everything else here is as light as the rest of the client.
"""

CLIENTS = ("claude-code", "cursor", "codex", "claude-desktop", "openclaw", "hermes", "skill")
"""The agents ``memctl setup`` knows (setup.py); here, so memctl's parser can offer them
without importing setup."""
