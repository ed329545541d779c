"""What an MCP tool of ``memctl mcp`` is, and how a call's arguments are checked.

Each tool is a name, a title, a description written for the model, annotations (the hints
clients use to decide whether a call needs the user's approval), an ``inputSchema`` and a
small ``outputSchema``. The schemas are plain JSON Schema, and the arguments are checked
against them by :func:`check_arguments` (the few keywords they use: type, minimum/maximum,
length, pattern, enum), so a bad argument is a tool error naming it. The output schemas
stay shallow on purpose: clients such as the Python SDK's ClientSession validate every
result against them with jsonschema, and a deep schema costs them milliseconds on every
call.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from memoryd_client.agents.bridge import Bridge, ToolRefusal

MAX_LINE: Final = 100_000_000
"""The largest line number (``from``, ``lines``) a call may give: beyond any real file, and
far below what the daemon's wire takes."""
DAY: Final = r"^\d{4}-\d{2}-\d{2}$"
WORKSPACE: Final = {
    "type": "string",
    "description": "A registered workspace's name or a path inside one. Omit it to use the "
    "workspace this server was started for.",
}
OBJECT: Final = {"type": "object"}


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


def schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def out(**types: str) -> dict[str, Any]:
    """An object of these top-level keys and types; ``"string?"``: a key left out when it
    has no value (one type per key: clients that map schemas to one-type dialects, Gemini's,
    reject ``["string", "null"]``)."""
    return {
        "type": "object",
        "properties": {name: {"type": kind.rstrip("?")} for name, kind in types.items()},
        "required": [name for name, kind in types.items() if not kind.endswith("?")],
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
    _unicode(name, value)
    return _within(name, value, schema)


def _unicode(name: str, value: Any) -> None:
    """JSON may carry a lone surrogate (``"\\ud800"``); no text on disk or on the wire can."""
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ToolRefusal(
                    f"argument {name}: not valid Unicode text (a lone surrogate at "
                    f"character {exc.start})"
                ) from None


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
