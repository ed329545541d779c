"""``memctl mcp``: memoryd as a Model Context Protocol server (the official ``mcp`` SDK).

Four tools with OpenClaw's names and camelCase parameters, so prompts written for OpenClaw
carry over: ``memory_search``, ``memory_get``, ``memory_append``, ``memory_status``. Each
returns structured content (its ``outputSchema``) and a compact text rendering. Every
failure (bad arguments, daemon down or restarted, a path that may not be read) is a tool
result with ``isError`` and a sentence; the server itself keeps running.

The transport is a start-up choice: stdio (what agents spawn), or streamable HTTP on
loopback, or on any address with a bearer token. This is the only module that imports
``mcp`` (the client's ``mcp`` extra).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, ContentBlock, TextContent
from pydantic import BaseModel, Field, ValidationError

from memoryd_client.agents import bridge as _bridge
from memoryd_client.agents.bridge import MAX_QUERY_CHARS, Bridge, ToolRefusal, explain
from memoryd_client.errors import ClientError

INSTRUCTIONS = (
    "memoryd holds this user's long-term memory: MEMORY.md (curated facts) and dated daily "
    "notes (memory/YYYY-MM-DD.md), written by agents and people. Before answering anything "
    "about prior work, decisions, dates, people, preferences or todos, call memory_search; "
    "read more of a hit with memory_get; record durable facts with memory_append."
)

# ---------------------------------------------------------------- output schemas


class SearchHitOut(BaseModel):
    path: str
    startLine: int
    endLine: int
    score: float
    snippet: str
    source: str
    workspace: str


class SearchOut(BaseModel):
    results: list[SearchHitOut]
    mode: str
    provider: str
    model: str
    degraded: list[str] | None = None


class GetOut(BaseModel):
    path: str
    text: str
    from_: int = Field(alias="from")
    lines: int


class AppendOut(BaseModel):
    path: str
    startLine: int
    endLine: int
    duplicate: bool = False  # already there (path:startLine): nothing written


class ProviderOut(BaseModel):
    name: str
    model: str | None
    reason: str | None


class WorkspaceOut(BaseModel):
    name: str
    path: str
    files: int
    chunks: int
    pendingFiles: int
    pendingVectors: int
    lastSync: str | None
    vectorReady: bool
    degraded: list[str]


class StatusOut(BaseModel):
    version: str
    provider: ProviderOut
    defaultWorkspace: str | None
    workspaces: list[WorkspaceOut]


# ---------------------------------------------------------------- parameters

Workspace = Annotated[
    str | None,
    Field(
        description="A registered workspace's name or a path inside one. Omit it to use the "
        "workspace this server was started for."
    ),
]
Day = Annotated[str | None, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD")]


def _result(data: dict[str, Any], text: str) -> CallToolResult:
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    return CallToolResult(content=content, structuredContent=data)


class MemoryServer(FastMCP[None]):
    """FastMCP whose tool errors say which argument was wrong, in one line, and never
    echo the (possibly huge) value."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> Sequence[ContentBlock] | dict[str, Any]:
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"{name}: {_argument_errors(cause)}") from None
            if isinstance(cause, ToolRefusal):
                raise ToolError(f"{name}: {cause}") from None
            if isinstance(cause, ClientError):
                raise ToolError(f"{name}: {explain(cause)}") from None
            raise


def _argument_errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        message = err["msg"]
        if err["type"] == "missing":
            message = "missing (required)"
        parts.append(f"argument {where}: {message}")
    return "; ".join(parts)


def build_server(bridge: Bridge, *, host: str = "127.0.0.1", port: int = 8000) -> MemoryServer:
    """The MCP server with the four tools, forwarding to ``bridge``."""
    server = MemoryServer(
        "memoryd",
        instructions=INSTRUCTIONS,
        host=host,
        port=port,
        log_level="WARNING",
    )

    @server.tool(
        name="memory_search",
        description=(
            "Search the user's memory (MEMORY.md, daily notes, optionally past session "
            "transcripts) by meaning and keywords. Call it BEFORE answering anything about "
            "prior work, decisions, dates, people, preferences or todos, and before saying "
            "you do not know. Returns ranked snippets with path and line range; an empty list "
            "means nothing relevant was recorded. Use memory_get to read around a hit."
        ),
    )
    async def memory_search(
        query: Annotated[
            str,
            Field(
                max_length=MAX_QUERY_CHARS,
                description="What to look for, in natural language or key words.",
            ),
        ],
        maxResults: Annotated[
            int | None, Field(ge=1, le=100, description="How many results (default 6).")
        ] = None,
        minScore: Annotated[
            float | None,
            Field(ge=0.0, le=1.0, description="Drop results scoring below this (0..1)."),
        ] = None,
        workspace: Workspace = None,
        source: Annotated[
            Literal["memory", "sessions", "all"] | None,
            Field(
                description="memory (notes), sessions (past transcripts) or all; default: "
                "where the daemon searches by default (its search.sources)."
            ),
        ] = None,
        since: Day = None,
        until: Day = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        data = await bridge.search(
            query,
            max_results=maxResults,
            min_score=minScore,
            workspace=workspace,
            source=source,
            since=since,
            until=until,
        )
        return _result(data, _bridge.search_text(data))

    @server.tool(
        name="memory_get",
        description=(
            "Read lines of a memory file: MEMORY.md or memory/YYYY-MM-DD.md (a path from "
            "memory_search, relative to the workspace). A file that does not exist yet reads "
            "as empty text, not an error."
        ),
    )
    async def memory_get(
        path: Annotated[
            str, Field(min_length=1, description="e.g. MEMORY.md or memory/2025-01-31.md")
        ],
        from_: Annotated[
            int | None,
            Field(validation_alias="from", ge=1, description="First line, 1-based (default 1)."),
        ] = None,
        lines: Annotated[
            int | None, Field(ge=1, description="How many lines (default: to the end).")
        ] = None,
        workspace: Workspace = None,
    ) -> Annotated[CallToolResult, GetOut]:
        data = await bridge.get(path, from_line=from_, lines=lines, workspace=workspace)
        return _result(data, _bridge.get_text(data))

    @server.tool(
        name="memory_append",
        description=(
            "Append a note to today's daily memory file (memory/YYYY-MM-DD.md). Use it for "
            "durable facts worth remembering in later sessions: decisions, preferences, "
            "todos, names, dates. Not for scratch work or whole transcripts."
        ),
    )
    async def memory_append(
        text: Annotated[str, Field(min_length=1, description="The note, in markdown.")],
        heading: Annotated[
            str | None, Field(description="Put the note under this heading.")
        ] = None,
        date: Annotated[
            str | None,
            Field(
                pattern=r"^\d{4}-\d{2}-\d{2}$",
                description="The daily file's date, YYYY-MM-DD (default today).",
            ),
        ] = None,
        workspace: Workspace = None,
    ) -> Annotated[CallToolResult, AppendOut]:
        data = await bridge.append(text, heading=heading, date=date, workspace=workspace)
        return _result(data, _bridge.append_text(data))

    @server.tool(
        name="memory_status",
        description=(
            "memoryd's state: the workspaces (files, chunks, how fresh the index is), the "
            "embedding provider, and why search is degraded if it is. Call it when "
            "memory_search answers oddly or fails."
        ),
    )
    async def memory_status() -> Annotated[CallToolResult, StatusOut]:
        data = await bridge.status()
        return _result(data, _bridge.status_text(data))

    return server


# ---------------------------------------------------------------- transports


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


ASGIApp = Callable[
    [dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


def require_token(app: Any, token: str) -> ASGIApp:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()

    async def guarded(
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = b'{"error": "a bearer token is required (Authorization: Bearer ...)"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


async def serve_stdio(bridge: Bridge) -> None:
    from memoryd_client.agents.stdio import stdio_streams

    server = build_server(bridge)._mcp_server
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(bridge: Bridge, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled."""
    import uvicorn

    server = build_server(bridge, host=host, port=port)
    app: Any = server.streamable_http_app()
    if token:
        app = require_token(app, token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
