"""The MCP tools of ``memctl mcp``: what ``tools/list`` shows and what each call does.

Searching, reading, appending and status are here; the tools that change what memory
holds as a whole (forget, export, import) are in :mod:`mcp_lifecycle_tools`. What a tool
is and how its arguments are checked: :mod:`mcp_tool`.
"""

from __future__ import annotations

from typing import Any, Final

from memoryd_client.agents import bridge as _bridge
from memoryd_client.agents.bridge import MAX_QUERY_CHARS, Bridge, ToolRefusal
from memoryd_client.agents.mcp_lifecycle_tools import LIFECYCLE_TOOLS
from memoryd_client.agents.mcp_tool import (
    DAY,
    MAX_LINE,
    OBJECT,
    WORKSPACE,
    Tool,
    check_arguments,
    out,
    schema,
)

__all__ = ["TOOLS", "Tool", "check_arguments"]

SOURCES: Final = ("memory", "sessions", "all")

# ---------------------------------------------------------------- the tools


def _source(a: dict[str, Any]) -> str | None:
    """``source``, or OpenClaw's name for it, ``corpus`` (prompts written for OpenClaw's
    memory_search pass it); its ``wiki`` corpus has no counterpart here."""
    source, corpus = a.get("source"), a.get("corpus")
    if corpus is None:
        return source
    if corpus not in SOURCES:
        raise ToolRefusal(
            f"argument corpus: {corpus!r} is not searched by memoryd; use source "
            f"({', '.join(SOURCES)})"
        )
    if source is not None and source != corpus:
        raise ToolRefusal(f"arguments source {source!r} and corpus {corpus!r} disagree: give one")
    return str(corpus)


async def _search(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.search(
        a["query"],
        max_results=a.get("maxResults"),
        min_score=a.get("minScore"),
        workspace=a.get("workspace"),
        source=_source(a),
        since=a.get("since"),
        until=a.get("until"),
        include_superseded=bool(a.get("includeSuperseded")),
    )
    return data, _bridge.search_text(data)


async def _get(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.get(
        a["path"], from_line=a.get("from"), lines=a.get("lines"), workspace=a.get("workspace")
    )
    return data, _bridge.get_text(data)


async def _append(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.append(
        a["text"],
        heading=a.get("heading"),
        date=a.get("date"),
        workspace=a.get("workspace"),
        origin=a.get("origin"),
        session_id=a.get("sessionId"),
        session_kind=a.get("sessionKind"),
    )
    return data, _bridge.append_text(data)


async def _review(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.review(a.get("workspace"))
    return data, _bridge.review_text(data)


async def _status(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.status()
    return data, _bridge.status_text(data)


_CORE: Final = {
    tool.name: tool
    for tool in (
        Tool(
            "memory_search",
            "Search memory",
            "Search the user's memory (MEMORY.md, daily notes, optionally past session "
            "transcripts) by meaning and keywords. Call it BEFORE answering anything about "
            "prior work, decisions, dates, people, preferences or todos, and before saying "
            "you do not know. Returns ranked snippets with path and line range; an empty list "
            "means nothing relevant was recorded (notices say why when the query could not "
            "be searched). Use memory_get to read around a hit.",
            schema(
                {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_QUERY_CHARS,
                        "description": "What to look for, in natural language or key words.",
                    },
                    "maxResults": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 100,
                        "description": "How many results (default 6).",
                    },
                    "minScore": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 1,
                        "description": "Drop results scoring below this (0..1).",
                    },
                    "workspace": WORKSPACE,
                    "source": {
                        "type": "string",
                        "enum": list(SOURCES),
                        "description": "memory (notes), sessions (past transcripts) or all; "
                        "default: where the daemon searches by default (its search.sources).",
                    },
                    # OpenClaw's memory_search calls it corpus (and has a wiki corpus,
                    # refused by name): no enum here, so its wiki gets a clear refusal.
                    "corpus": {
                        "type": "string",
                        "description": "OpenClaw's name for source: memory, sessions or all.",
                    },
                    "since": {"type": "string", "pattern": DAY, "description": "YYYY-MM-DD"},
                    "until": {"type": "string", "pattern": DAY, "description": "YYYY-MM-DD"},
                    "includeSuperseded": {
                        "type": "boolean",
                        "description": "Also show lines a newer line with the same "
                        "<!-- key: ... --> superseded (marked superseded); default false.",
                    },
                },
                ("query",),
            ),
            {
                "type": "object",
                "properties": {
                    "results": {"type": "array", "items": OBJECT},
                    "mode": {"type": "string"},
                    "provider": {"type": "string"},
                    "model": {"type": "string"},
                    "degraded": {"type": "array"},
                    "notices": {"type": "array"},
                },
                "required": ["results", "mode", "provider", "model"],
            },
            read_only=True,
            idempotent=True,
            run=_search,
        ),
        Tool(
            "memory_get",
            "Read a memory file",
            "Read lines of a memory file: MEMORY.md or memory/YYYY-MM-DD.md (a path from "
            "memory_search, relative to the workspace). A file that does not exist yet reads "
            "as empty text, not an error; asking past its end says how many lines it has.",
            schema(
                {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "e.g. MEMORY.md or memory/2025-01-31.md",
                    },
                    "from": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LINE,
                        "description": "First line, 1-based (default 1).",
                    },
                    "lines": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LINE,
                        "description": "How many lines (default: to the end).",
                    },
                    "workspace": WORKSPACE,
                },
                ("path",),
            ),
            out(path="string", text="string", **{"from": "integer"}, lines="integer"),
            read_only=True,
            idempotent=True,
            run=_get,
        ),
        Tool(
            "memory_append",
            "Append a note to memory",
            "Append a note to today's daily memory file (memory/YYYY-MM-DD.md). Use it for "
            "durable facts worth remembering in later sessions: decisions, preferences, "
            "todos, names, dates. Not for scratch work or whole transcripts.",
            schema(
                {
                    "text": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The note, in markdown.",
                    },
                    "heading": {
                        "type": "string",
                        "description": "Put the note under this heading.",
                    },
                    "date": {
                        "type": "string",
                        "pattern": DAY,
                        "description": "The daily file's date, YYYY-MM-DD (default today).",
                    },
                    "workspace": WORKSPACE,
                    # The daemon records it for each line (docs/provenance.md); a model is
                    # never the owner, so "owner" is not offered.
                    "origin": {
                        "type": "string",
                        "enum": ["agent", "untrusted", "system"],
                        "description": "Where the text comes from: agent (your own note, the "
                        "default), untrusted (copied from a web page, an email, tool output), "
                        "system (scheduled or scaffolding runs). Untrusted notes are "
                        "searchable but never recalled into a prompt by themselves. memoryd "
                        "also records what this session read: after a web page, the note is "
                        "untrusted whatever this says.",
                    },
                    "sessionId": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "description": "The session this note comes from (the client's "
                        "own session id wins when it gives one).",
                    },
                    "sessionKind": {
                        "type": "string",
                        "enum": ["interactive", "cron", "heartbeat", "subagent"],
                        "description": "That session's kind.",
                    },
                },
                ("text",),
            ),
            {
                **out(path="string", startLine="integer", endLine="integer"),
                "properties": {
                    "path": {"type": "string"},
                    "startLine": {"type": "integer"},
                    "endLine": {"type": "integer"},
                    "duplicate": {"type": "boolean"},  # already there: nothing written
                    # what the lines were recorded with (the session's trust applied)
                    "origin": {"type": "string"},
                },
            },
            read_only=False,
            idempotent=False,  # the same note twice is written twice
            run=_append,
        ),
        Tool(
            "memory_status",
            "Memory status",
            "memoryd's state: the workspaces (files, chunks, how fresh the index is), the "
            "embedding provider, and why search is degraded if it is. Call it when "
            "memory_search answers oddly or fails.",
            schema({}),
            out(
                version="string",
                provider="object",
                defaultWorkspace="string?",
                workspaces="array",
            ),
            read_only=True,
            idempotent=True,
            run=_status,
        ),
        Tool(
            "memory_review",
            "What waits for the owner's review",
            "The notes waiting for the user's review: untrusted writes (made after a session "
            "read a web page, an email or tool output) that ask to be kept long-term. They "
            "are searchable but never recalled until the user approves them with `memctl "
            "review approve`; only the user can approve or reject them. Read-only.",
            schema({"workspace": WORKSPACE}),
            out(workspace="string", items="array"),
            read_only=True,
            idempotent=True,
            run=_review,
        ),
    )
}

TOOLS: Final = {**_CORE, **LIFECYCLE_TOOLS}
