"""Where each part of a transcript comes from, for flush's provenance (docs/provenance.md).

The rule:
- the user's words are ``owner``; the assistant's are ``agent``;
- once a turn calls a tool that fetches outside content (web, browser, email, a URL, a
  shell command with a network client), what the assistant says after it in that turn is
  ``untrusted``: it may repeat or obey the page;
  a turn starts at the user's next words;
- cron, heartbeat and sub-agent sessions write no durable notes at all (the run is skipped
  with the reason): scaffolding is not memory;
- blocks memoryd injected (``<memoryd-recall>``) are dropped before anything is summarised.

Each written line's origin is the least trusted source that fed the LLM call producing it:
flush asks the LLM separately for the untrusted stretches, so the owner's and the agent's
notes are not tainted by a web page the agent read in another turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final

from memoryd.files.codex_rollout import as_transcript_line

SKIPPED_KINDS: Final = frozenset({"cron", "heartbeat", "subagent"})
# Tool names that bring outside content in: Claude Code's WebFetch/WebSearch, browsers
# (playwright, puppeteer, chrome), mail, and MCP tools named after any of them.
OUTSIDE_TOOL: Final = re.compile(
    r"web|fetch|brows|search|mail|url|http|curl|wget|scrap|crawl|navigat|playwright|"
    r"puppeteer|chrome|firefox|page|download|rss|gmail|outlook|slack|read_?link",
    re.I,
)
_TOOL_BLOCKS: Final = ("tool_use", "toolCall", "tool_call", "function_call")
_PATH_KEYS: Final = ("file_path", "path", "notebook_path")  # as the hooks read a tool's input
MAX_CALL_IDS: Final = 64  # the latest tool calls' ids a Turns keeps (what a write waits for)
TURN_LOOKBACK: Final = 4 << 20  # bytes before a run's offset replayed for the turn it is in
SHELL_TOOL: Final = re.compile(r"^(?:bash|shell|sh|exec|run_?command|terminal|process)$", re.I)
# A shell command that brings outside content in: a network client or a URL.
SHELL_OUTSIDE: Final = re.compile(
    r"://|\b(?:curl|wget|http|https|lynx|w3m|links|ssh|scp|sftp|rsync|ftp|nc|ncat|telnet|"
    r"aria2c|gh|git\s+(?:clone|fetch|pull))\b",
    re.I,
)


def outside_call(name: str, command: str | None) -> bool:
    """Whether a tool call brings outside content in: a tool named for the web, a browser
    or mail (memoryd's own tools aside), or a shell command with a network client or URL."""
    if OUTSIDE_TOOL.search(name) and not name.startswith("mcp__memoryd__"):
        return True
    return bool(command and SHELL_TOOL.match(name) and SHELL_OUTSIDE.search(command))


def session_kind(transcript: Path, given: str | None) -> str | None:
    """The session's kind: as given, else ``subagent`` for Claude Code's sub-agent
    transcripts (``<session>/subagents/agent-*.jsonl``)."""
    if given:
        return given
    return "subagent" if "subagents" in transcript.parts else None


def skip_reason(kind: str | None) -> str | None:
    if kind in SKIPPED_KINDS:
        return (
            f"a {kind} session writes no durable notes: scheduled and delegated runs are "
            "scaffolding, not memory (docs/provenance.md)"
        )
    return None


# Whether a tool call brought outside content in: (tool, shell command, file path, the
# session's working directory). Flush's rule judges the tool and the command only.
CallRule = Callable[[str, str | None, str | None, str | None], bool]


def _flush_rule(tool: str, command: str | None, path: str | None, cwd: str | None) -> bool:
    return outside_call(tool, command)


@dataclass
class Turns:
    """Follows the turns of a transcript, line by line, across reads."""

    tainted: bool = False  # an outside fetch happened earlier in this turn
    rule: CallRule = _flush_rule  # what counts as an outside fetch
    user_at: object = None  # the timestamp of the user's last message, as the line has it
    # the ids of the latest tool calls the assistant made (oldest first): a write that names
    # its call waits until the transcript shows it (session_trust.SessionTrust.catch_up)
    calls: dict[str, None] = field(default_factory=dict)

    def origin(self, raw: bytes) -> str | None:
        """The origin of the message on this line (None: not a user/assistant message)."""
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict):
            return None
        cwd = obj.get("cwd")  # Claude Code's lines say where the session works
        obj = as_transcript_line(obj)  # a Codex rollout line
        msg = obj.get("message")
        msg = msg if isinstance(msg, dict) else {}
        role = msg.get("role") or obj.get("type")
        content = msg.get("content")
        if role == "user":
            if obj.get("isMeta") is True or obj.get("isCompactSummary") is True:
                return None  # Claude Code's own lines (a caveat, a summary): not the person
            if _has_text(content):  # the person's words: a new turn
                self.tainted = False
                self.user_at = obj.get("timestamp") or msg.get("timestamp")
                return "owner"
            return None  # tool results come back as user lines: not a turn
        if role != "assistant":
            return None
        origin = "untrusted" if self.tainted else "agent"
        where = cwd if isinstance(cwd, str) else None
        self._called(content)
        if any(
            self.rule(name, command, path, where) for name, command, path in tool_calls(content)
        ):
            self.tainted = True  # what follows in this turn may carry the page
        return origin

    def _called(self, content: Any) -> None:
        for call in call_ids(content):
            self.calls.pop(call, None)
            self.calls[call] = None
            if len(self.calls) > MAX_CALL_IDS:
                del self.calls[next(iter(self.calls))]


def turns_before(fh: BinaryIO, offset: int) -> Turns:
    """The turns' state at ``offset`` (a line end) of a transcript: its lines before it
    replayed, the last TURN_LOOKBACK bytes of them (a line cut by that window dropped). A
    flush that starts inside a turn (the previous run read the transcript before the agent
    had written the turn's end, or its LLM budget ended there) so keeps what follows a web
    fetch of that turn untrusted. Leaves ``fh``'s position anywhere."""
    turns = Turns()
    start = max(0, offset - TURN_LOOKBACK)
    fh.seek(start)
    lines = fh.read(offset - start).split(b"\n")
    for raw in lines[1:] if start > 0 else lines:
        if raw.strip():
            turns.origin(raw)
    return turns


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        return any(
            isinstance(b, dict) and b.get("type") == "text" and str(b.get("text", "")).strip()
            for b in content
        )
    return False


def tool_calls(content: Any) -> Iterator[tuple[str, str | None, str | None]]:
    """The tool calls of an assistant message: (tool, shell command, file path), each
    read from the call's input as the hooks read it."""
    if not isinstance(content, list):
        return
    for b in content:
        if isinstance(b, dict) and b.get("type") in _TOOL_BLOCKS:
            fn = b.get("function")  # OpenAI's shape: {"function": {"name", "arguments"}}
            name = b.get("name") or (fn.get("name") if isinstance(fn, dict) else None) or ""
            args = b.get("input") or b.get("arguments") or {}
            args = args if isinstance(args, dict) else {}
            command = args.get("command") or args.get("cmd")
            path = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)), None)
            if isinstance(name, str):
                yield name, command if isinstance(command, str) else None, path


def call_ids(content: Any) -> Iterator[str]:
    """The ids of an assistant message's tool calls (Claude Code's ``tool_use`` ``id``,
    OpenAI's ``id`` or ``call_id``)."""
    if not isinstance(content, list):
        return
    for b in content:
        if isinstance(b, dict) and b.get("type") in _TOOL_BLOCKS:
            for key in ("id", "call_id"):
                if isinstance(b.get(key), str) and b[key]:
                    yield b[key]
                    break


def trust_class(origin: str) -> str:
    """Messages flush may ask about in one LLM call: owner and agent together, untrusted
    apart."""
    return "untrusted" if origin == "untrusted" else "trusted"
