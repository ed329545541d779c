"""The five MCP tools of ``memctl mcp``: what ``tools/list`` shows and how a call is checked.

Each tool is a name, a title, a description written for the model, annotations (the hints
clients use to decide whether a call needs the user's approval), an ``inputSchema`` and a
small ``outputSchema``. The schemas are plain JSON Schema written here, and the arguments
are checked against them by :func:`check_arguments` (the few keywords they use: type,
minimum/maximum, length, pattern, enum), so a bad argument is a tool error naming it. The
output schemas stay shallow on purpose: clients such as the Python SDK's ClientSession
validate every result against them with jsonschema, and a deep schema costs them
milliseconds on every call.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from memoryd_client.agents import bridge as _bridge
from memoryd_client.agents.bridge import MAX_QUERY_CHARS, Bridge, ToolRefusal

MAX_LINE: Final = 100_000_000
"""The largest line number (``from``, ``lines``) a call may give: beyond any real file, and
far below what the daemon's wire takes."""
DAY: Final = r"^\d{4}-\d{2}-\d{2}$"
_WORKSPACE: Final = {
    "type": "string",
    "description": "A registered workspace's name or a path inside one. Omit it to use the "
    "workspace this server was started for.",
}
_OBJECT: Final = {"type": "object"}


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    read_only: bool
    idempotent: bool
    run: Callable[[Bridge, dict[str, Any]], Awaitable[tuple[dict[str, Any], str]]]
    destructive: bool = False  # only memory_forget removes anything

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                # clients ask the user before a destructive call (memory_forget)
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": False,  # the user's own memory, nothing beyond it
            },
        }


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def _out(**types: str | list[str]) -> dict[str, Any]:
    """An object of these top-level keys and types (a key that may be null: not required)."""
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in types.items()},
        "required": [name for name, kind in types.items() if "null" not in kind],
    }


# ---------------------------------------------------------------- the tools


async def _search(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.search(
        a["query"],
        max_results=a.get("maxResults"),
        min_score=a.get("minScore"),
        workspace=a.get("workspace"),
        source=a.get("source"),
        since=a.get("since"),
        until=a.get("until"),
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


async def _forget(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.forget(
        path=a.get("path"),
        lines=a.get("lines"),
        query=a.get("query"),
        session_id=a.get("sessionId"),
        max_results=a.get("maxResults"),
        workspace=a.get("workspace"),
        confirm=a.get("confirm", False),
    )
    return data, _bridge.forget_text(data)


async def _status(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.status()
    return data, _bridge.status_text(data)


TOOLS: Final = {
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
            _schema(
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
                    "workspace": _WORKSPACE,
                    "source": {
                        "type": "string",
                        "enum": ["memory", "sessions", "all"],
                        "description": "memory (notes), sessions (past transcripts) or all; "
                        "default: where the daemon searches by default (its search.sources).",
                    },
                    "since": {"type": "string", "pattern": DAY, "description": "YYYY-MM-DD"},
                    "until": {"type": "string", "pattern": DAY, "description": "YYYY-MM-DD"},
                },
                ("query",),
            ),
            {
                "type": "object",
                "properties": {
                    "results": {"type": "array", "items": _OBJECT},
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
            _schema(
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
                    "workspace": _WORKSPACE,
                },
                ("path",),
            ),
            _out(path="string", text="string", **{"from": "integer"}, lines="integer"),
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
            _schema(
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
                    "workspace": _WORKSPACE,
                    # The daemon records it for each line (docs/provenance.md); a model is
                    # never the owner, so "owner" is not offered.
                    "origin": {
                        "type": "string",
                        "enum": ["agent", "untrusted", "system"],
                        "description": "Where the text comes from: agent (your own note, the "
                        "default), untrusted (copied from a web page, an email, tool output), "
                        "system (scheduled or scaffolding runs). Untrusted notes are "
                        "searchable but never recalled into a prompt by themselves.",
                    },
                    "sessionId": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "description": "The session this note comes from.",
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
                **_out(path="string", startLine="integer", endLine="integer"),
                "properties": {
                    "path": {"type": "string"},
                    "startLine": {"type": "integer"},
                    "endLine": {"type": "integer"},
                    "duplicate": {"type": "boolean"},  # already there: nothing written
                },
            },
            read_only=False,
            idempotent=False,  # the same note twice is written twice
            run=_append,
        ),
        Tool(
            "memory_forget",
            "Forget lines of memory",
            "Remove lines from the user's memory for good: a line range of a file (path with "
            "lines), the lines matching a query, or everything of a session. Only when the "
            "USER asks to forget something. Without confirm it changes nothing and lists what "
            "would go: show that list to the user, and call again with confirm: true only "
            "after they agreed. Exactly one of path (with lines), query, sessionId.",
            _schema(
                {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "A memory file, e.g. memory/2025-01-31.md (with lines).",
                    },
                    "lines": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 40,
                        "description": "The lines of path to forget: N or A-B, 1-based.",
                    },
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_QUERY_CHARS,
                        "description": "Forget the lines of the hits of this search.",
                    },
                    "sessionId": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "description": "Forget every line recorded from this session, and its "
                        "transcript; it is never flushed or indexed again.",
                    },
                    "maxResults": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 100,
                        "description": "With query: how many hits (default 6).",
                    },
                    "confirm": {
                        "type": "boolean",
                        "description": "true: remove them (the user agreed to the list a call "
                        "without confirm showed). Default false: only list them.",
                    },
                    "workspace": _WORKSPACE,
                }
            ),
            {
                **_out(dryRun="boolean", removed="array", lines="integer", files="integer"),
            },
            read_only=False,
            idempotent=False,  # a query may match new lines on a second call
            run=_forget,
            destructive=True,
        ),
        Tool(
            "memory_status",
            "Memory status",
            "memoryd's state: the workspaces (files, chunks, how fresh the index is), the "
            "embedding provider, and why search is degraded if it is. Call it when "
            "memory_search answers oddly or fails.",
            _schema({}),
            _out(
                version="string",
                provider="object",
                defaultWorkspace=["string", "null"],
                workspaces="array",
            ),
            read_only=True,
            idempotent=True,
            run=_status,
        ),
    )
}

# ---------------------------------------------------------------- argument checks

_PYTHON_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
_ARTICLE: Final = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
}


def _check(name: str, value: Any, schema: dict[str, Any]) -> Any:
    """``value`` if it fits ``schema`` (an integral float becomes an int); else ToolRefusal
    naming the argument, without echoing a (possibly huge) value."""
    kind = schema["type"]
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    wrong_bool = isinstance(value, bool) and kind != "boolean"
    if wrong_bool or not isinstance(value, _PYTHON_TYPES[kind]):
        raise ToolRefusal(f"argument {name}: must be {_ARTICLE.get(kind, kind)}")
    return _within(name, value, schema)


def _within(name: str, value: Any, schema: dict[str, Any]) -> Any:
    if "minimum" in schema and value < schema["minimum"]:
        raise ToolRefusal(f"argument {name}: must be at least {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ToolRefusal(f"argument {name}: must be at most {schema['maximum']}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        raise ToolRefusal(f"argument {name}: must not be empty")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise ToolRefusal(
            f"argument {name}: {len(value)} characters; the limit is {schema['maxLength']}"
        )
    if "pattern" in schema and not re.match(schema["pattern"], value):
        raise ToolRefusal(f"argument {name}: must be a date, YYYY-MM-DD")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolRefusal(f"argument {name}: must be one of {', '.join(schema['enum'])}")
    return value


def check_arguments(tool: Tool, arguments: Any) -> dict[str, Any]:
    """The call's arguments, checked against the tool's inputSchema. Unknown arguments
    are dropped and null counts as not given, as the SDK-based server did."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolRefusal("arguments must be an object")
    props = tool.input_schema["properties"]
    out = {
        name: _check(name, value, props[name])
        for name, value in arguments.items()
        if name in props and value is not None
    }
    missing = [name for name in tool.input_schema["required"] if name not in out]
    if missing:
        raise ToolRefusal("; ".join(f"argument {name}: missing (required)" for name in missing))
    return out
