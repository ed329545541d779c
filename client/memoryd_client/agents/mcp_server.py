"""``memctl mcp``: memoryd as a Model Context Protocol server, over stdio or HTTP.

The protocol itself (both eras, the tools) is :mod:`mcp_protocol` and
:mod:`mcp_tools`; this module starts a transport on it. The transport is a start-up
choice: stdio (what agents spawn, :mod:`stdio`), or streamable HTTP at ``/mcp`` on
loopback, or on any address with a bearer token. HTTP answers each POSTed message with
one JSON reply (the protocol's JSON response mode: no event stream, no session), and
needs uvicorn (the client's ``mcp`` extra); stdio needs nothing beyond the client.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable
from typing import Any, Final
from urllib.parse import urlsplit

from memoryd_client.agents.bridge import Bridge
from memoryd_client.agents.mcp_protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODERN,
    PARSE_ERROR,
    McpServer,
    error,
    parse,
)
from memoryd_client.agents.stdio import LINE_LIMIT
from memoryd_client.agents.stdio import serve_stdio as _serve_stdio

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]
PATH: Final = "/mcp"
_MODERN_STATUS: Final = {
    # 2026-07-28 over HTTP: the status says what failed (a session-era client reads 200)
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    METHOD_NOT_FOUND: 404,
}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def _respond(
    send: Send, status: int, body: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    base = [(b"content-type", b"application/json")] if body else []
    await send({"type": "http.response.start", "status": status, "headers": base + (headers or [])})
    await send({"type": "http.response.body", "body": body})


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The request body; None when it is over ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body"):
            return b"".join(parts)


def http_app(server: McpServer, *, check_origin: bool = True) -> ASGIApp:
    """The ASGI app: POST /mcp, one JSON-RPC message in, its reply out (202 for a
    notification). GET (an event stream) and DELETE (a session) are 405: there are none."""

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/") != PATH:
            await _respond(send, 404, b'{"error": "not found: the MCP endpoint is /mcp"}')
            return
        headers = dict(scope.get("headers") or [])
        origin = headers.get(b"origin", b"").decode("latin-1")
        if check_origin and origin and not is_loopback(urlsplit(origin).hostname or ""):
            # a web page elsewhere must not reach a loopback server (DNS rebinding)
            await _respond(send, 403, b'{"error": "this Origin may not call the server"}')
            return
        if scope["method"] != "POST":
            await _respond(send, 405, b"", [(b"allow", b"POST")])
            return
        body = await _body(receive, LINE_LIMIT)
        if body is None:
            reply: dict[str, Any] | None = error(None, INVALID_REQUEST, "Request too large")
            await _respond(send, 413, json.dumps(reply).encode())
            return
        message, reply = parse(body)
        if reply is None:
            reply = await server.handle(message)
        if reply is None:
            await _respond(send, 202)
            return
        status = 200
        modern = headers.get(b"mcp-protocol-version") == MODERN.encode()
        if "error" in reply and (modern or reply["error"]["code"] == PARSE_ERROR):
            status = _MODERN_STATUS.get(reply["error"]["code"], 200)
        await _respond(send, status, json.dumps(reply, ensure_ascii=False).encode())

    return app


def require_token(app: ASGIApp, token: str) -> ASGIApp:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = b'{"error": "a bearer token is required (Authorization: Bearer ...)"}'
                await _respond(send, 401, body, [(b"www-authenticate", b"Bearer")])
                return
        await app(scope, receive, send)

    return guarded


async def serve_stdio(bridge: Bridge) -> None:
    await _serve_stdio(McpServer(bridge))


async def serve_http(bridge: Bridge, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled."""
    import uvicorn  # the client's mcp extra

    app = http_app(McpServer(bridge), check_origin=not token)
    if token:
        app = require_token(app, token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    await uvicorn.Server(config).serve()
