"""memoryd as Hermes Agent's memory provider (``memory.provider: memoryd``).

Hermes loads it from ``$HERMES_HOME/plugins/memoryd/`` (written by ``memctl setup hermes``,
which imports this module) and calls it around every turn:

- ``prefetch(query)`` before each model call: memoryd's ``recall`` for the user's message,
  injected by Hermes (empty when nothing is relevant; a slow or stopped daemon adds
  nothing after ``RECALL_TIMEOUT_S``);
- ``on_turn_start``: the user spoke (``observe user_message``: the turn starts clean);
- ``sync_turn(user, assistant, messages)`` after each turn: the turn goes to a transcript of
  the session in the workspace (``sessions/hermes/<session>.jsonl``, Claude Code's line
  shape, tool calls included), and each tool result is reported to the daemon (``observe
  read``) so that the session's writes take the least trusted origin it read;
- ``on_pre_compress`` and ``on_session_end``: that transcript goes to the daemon's flush
  (its LLM writes the durable facts to today's daily file; flush's origin rule marks what
  followed a web fetch untrusted; a cron or sub-agent session writes nothing).

Hermes' own MEMORY.md and USER.md stay canonical markdown: the workspace is Hermes' memory
folder (or the one setup named), which memoryd indexes as it is. Nothing here raises into
Hermes: a failure is logged and the turn goes on.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memoryd_client._connection import Connection
from memoryd_client._params import flush_params, observe_params, recall_params
from memoryd_client._socket_path import socket_file
from memoryd_client.errors import ClientError

if TYPE_CHECKING:
    _Base = object
else:
    try:  # inside Hermes
        from agent.memory_provider import MemoryProvider as _Base
    except ImportError:  # elsewhere (its tests drive it without Hermes)
        _Base = object

log = logging.getLogger("memoryd")

NAME: Final = "memoryd"
NAME_FOR_STATS: Final = "hermes"  # the agent memctl stats counts
CONFIG_FILE: Final = "memoryd.json"  # in the plugin folder: {"socket", "workspace"}
RECALL_TIMEOUT_S: Final = 1.5
TIMEOUT_S: Final = 5.0
# Hermes' agent_context -> memoryd's session kind (flush writes notes of interactive ones)
KINDS: Final = {"primary": "interactive", "subagent": "subagent", "cron": "cron"}
_SAFE: Final = re.compile(r"[^A-Za-z0-9._-]")
_SEARCH = {
    "name": "memoryd_search",
    "description": "Search the user's long-term memory (memoryd: MEMORY.md, USER.md and the "
    "daily notes) by meaning and keywords. Call it before answering anything about prior "
    "work, decisions, dates, people, preferences or todos. Returns snippets cited as "
    "path#Lstart-Lend.",
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "max_results": {"type": "integer", "description": "How many (default 6)."},
        },
        "required": ["query"],
    },
}


class MemorydProvider(_Base):
    """Hermes' MemoryProvider over the memoryd daemon."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.config = config or {}
        self.session_id = ""
        self.kind = "interactive"
        self.write = True  # Hermes' own flush context writes nothing through us
        self.workspace: str | None = self.config.get("workspace") or None
        self.root: Path | None = None  # the workspace's folder (for the transcript)
        self._conn: Connection | None = None
        self._lock = threading.Lock()  # the connection
        self._write_lock = threading.Lock()  # the transcript
        self._synced: dict[str, int] = {}  # session -> messages already in its transcript

    # ------------------------------------------------------------ Hermes' interface

    @property
    def name(self) -> str:
        return NAME

    def is_available(self) -> bool:
        """A socket is there (no connection made: Hermes asks before every session)."""
        return os.path.exists(self._socket())

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self.session_id = session_id
        context = str(kwargs.get("agent_context") or "primary")
        self.kind = KINDS.get(context, "interactive")
        self.write = context != "flush"
        if self.workspace is None and kwargs.get("hermes_home"):
            self.workspace = str(Path(str(kwargs["hermes_home"])) / "memories")
        self._guard("initialize", self._find_root)

    def system_prompt_block(self) -> str:
        return (
            "Long-term memory is memoryd: notes relevant to the user's message are put "
            "before it (a block headed 'Relevant memory (memoryd recall ...)'; cite them as "
            "given). Search it with memoryd_search before saying you do not know."
        )

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if not query.strip():
            return ""
        params = recall_params(query, workspace=self.workspace, agent=NAME_FOR_STATS)
        answer = self._guard("prefetch", lambda: self._call("recall", params, RECALL_TIMEOUT_S))
        markdown = answer.get("markdown") if isinstance(answer, dict) else None
        return markdown if isinstance(markdown, str) else ""

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        if self.session_id and self.write:
            self._guard("on_turn_start", lambda: self._observe("user_message"))

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        if not self.write:
            return
        session = session_id or self.session_id
        self._guard(
            "sync_turn", lambda: self._record(session, user_content, assistant_content, messages)
        )

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        session = self.session_id  # what is about to leave the context: kept, then flushed
        if self.write and messages:
            self._guard("on_pre_compress", lambda: self._record(session, "", "", messages))
        self._guard("on_pre_compress", lambda: self._flush(session))
        return ""

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        # the last turn may not be synced yet (Hermes syncs in the background)
        session = self.session_id
        if self.write and messages:
            self._guard("on_session_end", lambda: self._record(session, "", "", messages))
        self._guard("on_session_end", lambda: self._flush(session))

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        if kwargs.get("reset"):
            self._guard("on_session_switch", lambda: self._flush(self.session_id))
        self.session_id = new_session_id

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [_SEARCH]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if tool_name != _SEARCH["name"]:
            return json.dumps({"error": f"unknown tool {tool_name}"})
        try:
            answer = self._call(
                "search",
                {
                    "query": str(args.get("query", "")),
                    "workspace": self.workspace,
                    "max_results": int(args.get("max_results") or 6),
                },
                TIMEOUT_S,
            )
        except (ClientError, OSError, ValueError) as exc:
            return json.dumps({"error": str(exc), "unavailable": True})
        hits = [
            {
                "citation": f"{h['path']}#L{h.get('snippet_start_line') or h['start_line']}"
                f"-L{h.get('snippet_end_line') or h['end_line']}",
                "score": round(float(h["score"]), 3),
                "snippet": h["snippet"],
            }
            for h in answer.get("results", [])
        ]
        # what the model read through memoryd is judged here, by the hits' own origins (the
        # transcript leaves this tool out: a search of memory is not a fetch from outside)
        worst = {h.get("origin") for h in answer.get("results", [])} & {"untrusted", "system"}
        if worst and self.session_id:
            self._guard("observe", lambda: self._observe("read", origin="untrusted"))
        notices = answer.get("notices", [])
        return json.dumps({"results": hits, "notices": notices}, ensure_ascii=False)

    def get_config_schema(self) -> list[dict[str, Any]]:
        return []  # memctl setup hermes writes the plugin's memoryd.json

    def shutdown(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # ------------------------------------------------------------ memoryd

    def _socket(self) -> str:
        return str(socket_file(override=self.config.get("socket") or None))

    def _call(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        with self._lock:
            if self._conn is None:
                self._conn = Connection(
                    self._socket(),
                    explicit_socket=bool(self.config.get("socket")),
                    timeout=TIMEOUT_S,
                    autostart=False,
                    client_name="memoryd-hermes",
                )
            self._conn.timeout = timeout
            clean = {k: v for k, v in params.items() if v is not None}
            return self._conn.request(method, clean)

    def _guard(self, what: str, call: Any) -> Any:
        try:
            return call()
        except Exception as exc:  # never into Hermes: memory is best effort
            log.warning("memoryd: %s: %s: %s", what, type(exc).__name__, exc)
            return None

    def _find_root(self) -> None:
        listed = self._call("workspace.list", {}, TIMEOUT_S)
        for entry in listed.get("workspaces", []):
            if self.workspace in (entry.get("name"), entry.get("path")) or (
                self.workspace and Path(self.workspace).resolve() == Path(entry["path"]).resolve()
            ):
                self.root = Path(entry["path"])
                return

    def _observe(self, event: str, **fields: Any) -> None:
        params = observe_params(
            self.session_id, event, workspace=self.workspace, session_kind=self.kind, **fields
        )
        self._call("observe", params, TIMEOUT_S)

    def transcript(self, session: str) -> Path | None:
        if self.root is None or not session:
            return None
        return self.root / "sessions" / "hermes" / f"{_SAFE.sub('_', session)}.jsonl"

    def _record(
        self, session: str, user: str, assistant: str, messages: list[dict[str, Any]] | None
    ) -> None:
        """The turn's lines appended to the session's transcript (from ``messages`` when
        Hermes gives them, each message once however often it is given); its tool results
        observed."""
        path = self.transcript(session)
        if path is None:
            return
        with self._write_lock:
            if messages:
                new = self._new_messages(session, messages)
                lines = _lines(new)
            else:
                new, lines = (
                    [],
                    _lines(
                        [
                            {"role": "user", "content": user},
                            {"role": "assistant", "content": assistant},
                        ]
                    ),
                )
            for message in new:
                for tool, command in _tool_reads(message, new):
                    self._observe("read", tool=tool, command=command, what=f"{tool} result")
            if not lines:
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as f:
                if f.tell() == 0:
                    f.write(json.dumps({"type": "session", "id": session}) + "\n")
                f.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)

    def _new_messages(self, session: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        done = self._synced.get(session, 0)
        self._synced[session] = len(messages)
        return messages[done:] if done <= len(messages) else messages

    def _flush(self, session: str) -> None:
        path = self.transcript(session)
        if path is None or not path.exists() or not self.write:
            return
        params = flush_params(
            path, session, workspace=self.workspace, session_kind=self.kind, agent=NAME_FOR_STATS
        )
        params["trigger"] = "hook"
        self._call("flush", params, TIMEOUT_S)


def _lines(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style messages as transcript lines: the user's words, each tool call (for
    flush's origin rule), the assistant's text; system and tool messages left out."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role, content = message.get("role"), _content(message.get("content"))
        if role == "user" and content:
            out.append(_line("user", [{"type": "text", "text": content}]))
        if role != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            name = str(fn.get("name", ""))
            if name == _SEARCH["name"]:
                continue  # memoryd's own (what it answered is observed where it answers)
            block = {"type": "tool_use", "name": name, "input": _args(fn.get("arguments"))}
            out.append(_line("assistant", [block]))
        if content:
            out.append(_line("assistant", [{"type": "text", "text": content}]))
    return out


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):  # content parts
        return "\n".join(
            str(p.get("text", "")) for p in value if isinstance(p, dict) and p.get("type") == "text"
        ).strip()
    return ""


def _line(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": role, "message": {"role": role, "content": content}}


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool_reads(
    message: dict[str, Any], turn: list[dict[str, Any]]
) -> list[tuple[str, str | None]]:
    """(tool, shell command) of a ``tool`` result message, from the call that asked for it."""
    if message.get("role") != "tool":
        return []
    for other in turn:
        for call in other.get("tool_calls") or []:
            if call.get("id") == message.get("tool_call_id"):
                fn = call.get("function") or {}
                if fn.get("name") == _SEARCH["name"]:
                    return []
                args = _args(fn.get("arguments"))
                command = args.get("command") or args.get("cmd")
                return [(str(fn.get("name", "")), command if isinstance(command, str) else None)]
    return [(str(message.get("name") or "tool"), None)]
