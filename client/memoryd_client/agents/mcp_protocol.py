"""The Model Context Protocol as ``memctl mcp`` speaks it: one JSON-RPC message in, at most
one reply out, the same for stdio and HTTP.

Both protocol eras:

- the session era (2024-11-05 to 2025-11-25): ``initialize`` negotiates a version, then
  ``tools/list`` and ``tools/call``;
- the stateless era (2026-07-28): no handshake; ``server/discover`` says what the server
  supports, every request carries its protocol version in ``params._meta``, and every
  result says ``resultType: "complete"``.

Every request gets a reply with its id: a method this server does not have is -32601, a
line that is not JSON -32700 (with the id when it can still be read from the line), a
message that is not a request -32600, bad params -32602. Tool failures (bad arguments, the
daemon down, a path that may not be read) are tool results with ``isError`` and a
sentence for the model. Nothing is written to stderr for any of them.

Written without the MCP SDK: importing it costs ~0.4-1 s (its package imports its client,
server and HTTP stacks together), which an agent waited for at every start, and the SDK's
stdio transport hands every line to a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final

from memoryd_client import __version__
from memoryd_client.agents.bridge import Bridge, ToolRefusal, explain
from memoryd_client.agents.mcp_session import CALL_ID, call_id_of
from memoryd_client.agents.mcp_tools import TOOLS, check_arguments
from memoryd_client.errors import ClientError

MODERN: Final = "2026-07-28"
SESSION_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""The session-era revisions served, newest first (the tools need nothing newer)."""
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
INSTRUCTIONS: Final = (
    "memoryd holds this user's long-term memory: MEMORY.md (curated facts) and dated daily "
    "notes (memory/YYYY-MM-DD.md), written by agents and people. Before answering anything "
    "about prior work, decisions, dates, people, preferences or todos, call memory_search; "
    "read more of a hit with memory_get; record durable facts with memory_append."
)
SERVER_INFO: Final = {"name": "memoryd", "title": "memoryd memory", "version": __version__}
CAPABILITIES: Final = {"tools": {"listChanged": False}}
_ID_AT_START = re.compile(
    # "id" after any string-valued keys ("jsonrpc": "2.0", ...) at the start of an object
    rb'^\s*\{\s*(?:"[^"]*"\s*:\s*"[^"]*"\s*,\s*)*"id"\s*:\s*("[^"]{0,200}"|-?\d{1,18})'
)

Notify = Callable[[dict[str, Any]], Awaitable[None]]


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def id_in(raw: bytes) -> Any:
    """The id of a request that cannot be parsed (too deep, too long, cut off), when it is
    among its first keys; else None."""
    found = _ID_AT_START.match(raw[:4096])
    if found is None:
        return None
    try:
        return json.loads(found.group(1))
    except ValueError:
        return None


def parse(raw: bytes) -> tuple[Any, dict[str, Any] | None]:
    """(message, None), or (None, the error reply) for a line that is not JSON."""
    try:  # bad UTF-8 is replaced, not refused (what the SDK's transports do)
        return json.loads(raw.decode("utf-8", errors="replace")), None
    except RecursionError:
        return None, error(id_in(raw), PARSE_ERROR, "Parse error: nested too deeply")
    except ValueError as exc:
        return None, error(id_in(raw), PARSE_ERROR, f"Parse error: {exc}")


def _valid_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


class McpServer:
    """The MCP methods over a :class:`Bridge` to the daemon; transports call
    :meth:`handle` with each message (and a way to send notifications, for stdio)."""

    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge

    async def handle(self, message: Any, notify: Notify | None = None) -> dict[str, Any] | None:
        """The reply to one JSON-RPC message (None for a notification or a response)."""
        if isinstance(message, list):
            return error(None, INVALID_REQUEST, "Invalid Request: batches are not supported")
        if not isinstance(message, dict):
            return error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC object")
        request_id = message.get("id")
        method = message.get("method")
        if method is None and ("result" in message or "error" in message):
            return None  # a response: this server sends no requests, so nothing waits for it
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            reply_id = request_id if _valid_id(request_id) else None
            return error(reply_id, INVALID_REQUEST, "Invalid Request: jsonrpc 2.0 with a method")
        if "id" not in message:
            return None  # notifications: initialized, cancelled (the transport's), progress
        if not _valid_id(request_id):
            return error(None, INVALID_REQUEST, "Invalid Request: id must be a string or number")
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return error(request_id, INVALID_PARAMS, "Invalid params: must be an object")
        meta = params.get("_meta")
        modern = isinstance(meta, dict) and meta.get(VERSION_KEY) == MODERN
        try:
            result = await self._dispatch(method, params, request_id, modern, notify)
        except RpcError as exc:
            return error(request_id, exc.code, exc.message)
        if modern:
            result = {**result, "resultType": "complete", "_meta": {SERVER_INFO_KEY: SERVER_INFO}}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _dispatch(
        self,
        method: str,
        params: dict[str, Any],
        request_id: Any,
        modern: bool,
        notify: Notify | None,
    ) -> dict[str, Any]:
        if method == "tools/call":
            return await self.call_tool(params)
        if method == "tools/list":
            tools = {"tools": [tool.listing() for tool in TOOLS.values()]}
            return {**tools, "ttlMs": 0, "cacheScope": "private"} if modern else tools
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in SESSION_VERSIONS else SESSION_VERSIONS[0]
            return {
                "protocolVersion": version,
                "capabilities": CAPABILITIES,
                "serverInfo": SERVER_INFO,
                "instructions": INSTRUCTIONS,
            }
        if method == "server/discover":
            return {
                "supportedVersions": [MODERN, *SESSION_VERSIONS],
                "capabilities": CAPABILITIES,
                "instructions": INSTRUCTIONS,
                "ttlMs": 0,
                "cacheScope": "private",
            }
        if method == "ping":
            return {}
        if method == "subscriptions/listen" and modern and notify is not None:
            await self._listen(params, request_id, notify)
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method[:100]}")

    async def _listen(self, params: dict[str, Any], request_id: Any, notify: Notify) -> None:
        """A 2026-07-28 subscription: acknowledged, then held open until the client goes
        (the tool list never changes, so nothing is ever sent on it)."""
        wanted = params.get("notifications")
        await notify(
            {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {
                    "_meta": {"io.modelcontextprotocol/subscriptionId": request_id},
                    "notifications": wanted if isinstance(wanted, dict) else {},
                },
            }
        )
        await asyncio.Event().wait()  # cancelled when the transport closes

    async def call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        tool = TOOLS.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {str(name)[:100]}")
        try:
            arguments = check_arguments(tool, params.get("arguments"))
            await self.bridge.ready()
            CALL_ID.set(call_id_of(params))  # this request's task only
            data, text = await tool.run(self.bridge, arguments)
        except ToolRefusal as exc:
            return _tool_error(f"{tool.name}: {exc}")
        except ClientError as exc:
            return _tool_error(f"{tool.name}: {explain(exc)}")
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": data,
            "isError": False,
        }


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}
