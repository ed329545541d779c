"""A stdio MCP server standing in for a web-fetch tool (a `fetch` MCP server many users
add): ``fetch`` answers the page in the file ``$FAKE_WEB_PAGE`` whatever the URL, so an
agent reads a web page without a network. Run it as ``python web_mcp_server.py``."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOL = {
    "name": "fetch",
    "description": "Fetch a web page and return its text.",
    "inputSchema": {
        "type": "object",
        "properties": {"url": {"type": "string"}},
        "required": ["url"],
    },
}


def answer(msg: dict[str, Any]) -> dict[str, Any]:
    method = msg.get("method")
    if method == "initialize":
        version = (msg.get("params") or {}).get("protocolVersion", "2025-06-18")
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "web", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        with open(os.environ["FAKE_WEB_PAGE"], encoding="utf-8") as f:
            return {"content": [{"type": "text", "text": f.read()}]}
    return {}


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "id" not in msg:
            continue
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
