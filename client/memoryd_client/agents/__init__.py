"""How agents reach memoryd without writing code: the MCP server (``memctl mcp``), recall,
Claude Code hooks, ``memctl setup`` and the shell skill (SKILL.md).

Only :mod:`memoryd_client.agents.mcp_server` imports the ``mcp`` SDK (the ``mcp`` extra);
everything else here is as light as the rest of the client.
"""
