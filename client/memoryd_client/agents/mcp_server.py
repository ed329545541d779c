"""``memctl mcp``: memoryd as a Model Context Protocol server, over stdio or HTTP.

The protocol itself (both eras, the tools) is :mod:`mcp_protocol` and
:mod:`mcp_tools`; this module starts a transport on it. The transport is a start-up
choice: stdio (what agents spawn, :mod:`stdio`), or streamable HTTP at ``/mcp``. HTTP
answers each POSTed message with one JSON reply (the protocol's JSON response mode: no
event stream, no session), and needs uvicorn (the client's ``mcp`` extra); stdio needs
nothing beyond the client.

HTTP follows the specification's transport security (basic/transports, "Security
Warning"): every request's ``Origin`` is checked (a web page's is refused, 403), on
loopback its ``Host`` too (DNS rebinding: 421, as the SDKs answer), a POST is
``application/json`` only (a page's ``text/plain`` form post needs no CORS preflight: 415),
and a bearer token is required by default (mcp_token.py). A connection that has not sent
its request's headers within HEADER_TIMEOUT_S is closed, and past MAX_CONNECTIONS the one
idle longest makes room: half-open connections cannot lock clients out or use up the
process's file descriptors.
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

HEADER_TIMEOUT_S: Final = 10.0
MAX_CONNECTIONS: Final = 256
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})

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


def _host_name(value: str) -> str:
    """The name of a Host header (its port dropped; an IPv6 address unbracketed)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


async def _refused(
    headers: dict[bytes, bytes], scope: dict[str, Any], send: Send, *, loopback: bool
) -> bool:
    """Answer and True when the request may not reach the tools (see the module's docs)."""
    host = headers.get(b"host", b"").decode("latin-1")
    if loopback and _host_name(host) not in LOOPBACK_HOSTS:
        # A page whose name was made to point at 127.0.0.1 (DNS rebinding) sends its own.
        await _respond(send, 421, b'{"error": "Misdirected Request: this Host is not served"}')
        return True
    origin = headers.get(b"origin", b"").decode("latin-1")
    if origin and not is_loopback(urlsplit(origin).hostname or ""):
        # A web page elsewhere (a browser sends its Origin): never, token or not.
        await _respond(send, 403, b'{"error": "this Origin may not call the server"}')
        return True
    if scope["method"] != "POST":
        await _respond(send, 405, b"", [(b"allow", b"POST")])
        return True
    kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if kind != b"application/json":
        # text/plain, form posts: what a page may send cross-site without a preflight
        await _respond(send, 415, b'{"error": "the body must be Content-Type: application/json"}')
        return True
    return False


def http_app(server: McpServer, *, loopback: bool = True) -> ASGIApp:
    """The ASGI app: POST /mcp, one JSON-RPC message in, its reply out (202 for a
    notification). GET (an event stream) and DELETE (a session) are 405: there are none.
    ``loopback``: served on a loopback address (the Host header is checked)."""

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/") != PATH:
            await _respond(send, 404, b'{"error": "not found: the MCP endpoint is /mcp"}')
            return
        headers = dict(scope.get("headers") or [])
        if await _refused(headers, scope, send, loopback=loopback):
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

    from memoryd_client.agents.http_guard import guarded_protocol

    app = http_app(McpServer(bridge), loopback=is_loopback(host))
    if token:
        app = require_token(app, token)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        http=guarded_protocol(HEADER_TIMEOUT_S, MAX_CONNECTIONS),
        h11_max_incomplete_event_size=64 * 1024,  # a request's headers, at most
        # asyncio accepts up to this many at once before any is handed to the protocol: a
        # flood of 1,100 was all accepted (out of descriptors) before one could be closed.
        backlog=128,
    )
    await uvicorn.Server(config).serve()
