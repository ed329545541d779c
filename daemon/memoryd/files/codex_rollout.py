"""Codex CLI's session rollouts read as the transcript lines memoryd knows.

Codex keeps a session in ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``: a
``session_meta`` line (the session's id), then ``response_item`` lines whose ``payload`` is
a Responses API item: ``message`` (role user, assistant or developer, ``input_text`` /
``output_text`` blocks), ``function_call`` and its ``function_call_output``, and
``event_msg`` lines that repeat them for the UI. :func:`as_transcript_line` turns each into
the Claude Code shape the readers take (``{"type": role, "message": {role, content}}``),
so flush, its origin rule and the index read a rollout as any transcript. The harness's
own user messages (``<environment_context>``, AGENTS.md instructions) are not the
person's words and are left out.
"""

from __future__ import annotations

import json
from typing import Any, Final

_TEXT_BLOCKS: Final = ("input_text", "output_text", "text")
_HARNESS: Final = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
_SHELL_TOOLS: Final = ("exec_command", "shell", "local_shell", "container.exec")
_CALLS: Final = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_SKIP: Final = {"type": "codex"}  # a line that carries no message


def as_transcript_line(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` unchanged unless it is a Codex rollout line; then its transcript form."""
    kind = obj.get("type")
    payload = obj.get("payload")
    if kind not in ("session_meta", "response_item", "event_msg", "turn_context"):
        return obj
    if not isinstance(payload, dict):
        return _SKIP
    if kind == "session_meta":
        return {"type": "session", "id": payload.get("id"), "timestamp": payload.get("timestamp")}
    if kind != "response_item":
        return _SKIP
    item = payload.get("type")
    stamp = obj.get("timestamp")
    if item == "message":
        role = payload.get("role")
        content = payload.get("content")
        blocks = content if isinstance(content, list) else []
        texts = [
            b["text"]
            for b in blocks
            if isinstance(b, dict)
            and b.get("type") in _TEXT_BLOCKS
            and isinstance(b.get("text"), str)
        ]
        if role not in ("user", "assistant") or not texts:
            return _SKIP
        if role == "user" and texts[0].lstrip().startswith(_HARNESS):
            return _SKIP
        blocks = [{"type": "text", "text": t} for t in texts]
        return {"type": role, "timestamp": stamp, "message": {"role": role, "content": blocks}}
    if item in _CALLS:
        return _call_line(payload, stamp)
    if item in ("function_call_output", "custom_tool_call_output"):
        result = {"type": "tool_result", "content": str(payload.get("output", ""))[:1000]}
        return {
            "type": "user",
            "timestamp": stamp,
            "message": {"role": "user", "content": [result]},
        }
    return _SKIP


def _is_text(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") in _TEXT_BLOCKS
        and isinstance(block.get("text"), str)
    )


def _call_line(payload: dict[str, Any], stamp: Any) -> dict[str, Any]:
    """A tool call as a Claude Code ``tool_use`` block: its name, and a shell's command."""
    name = str(payload.get("name") or payload.get("type") or "")
    args: Any = payload.get("arguments") or payload.get("input") or payload.get("action") or {}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = {"command": args}
    args = args if isinstance(args, dict) else {}
    command = args.get("cmd") or args.get("command")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    if name in _SHELL_TOOLS or payload.get("type") == "local_shell_call":
        name = "shell"
    elif payload.get("type") == "web_search_call":
        name = "web_search"
    block = {"type": "tool_use", "name": name, "input": {"command": command} if command else {}}
    return {
        "type": "assistant",
        "timestamp": stamp,
        "message": {"role": "assistant", "content": [block]},
    }
