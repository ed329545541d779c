"""``memctl hook claude-code|codex EVENT``: Claude Code's hooks (and Codex's, which have
the same shape), answered from memoryd.

Claude Code runs the command with the event's JSON on stdin (``session_id``,
``transcript_path``, ``cwd``, ``prompt``, ``stop_hook_active`` ...):

- ``user-prompt-submit``: the recall block for the prompt, as ``additionalContext``;
- ``session-start``: a short digest of MEMORY.md and the latest daily notes;
- ``pre-compact`` / ``session-end``: the transcript goes to the daemon for a flush (an LLM
  run in the background); the hook returns at once;
- ``stop``: the flush without an LLM. When enough new conversation has accumulated since
  the last flush of the session, the hook answers ``{"decision": "block", "reason": ...}``
  and Claude takes one more turn to save the durable facts with ``memory_append``;
- ``post-tool-use``: what the tool brought into the session (a web page, a shell command's
  download, a file from outside the project) goes to the daemon's ``observe``: the
  session's writes then take the least trusted origin it read (docs/provenance.md);
- ``pre-tool-use`` (memoryd's ``memory_append``): binds the call's tool-use id to the
  session, so the MCP server's append is the session's, and reads the transcript's turn;
  (Write, Edit, MultiEdit, NotebookEdit): a session that read outside content since the
  user's last message may not change a memory file: Claude Code's ``deny``, telling the
  model to use ``memory_append`` (agents/memory_guard.py). No daemon: the edit goes ahead.

``user-prompt-submit`` also tells the daemon the user spoke: the session's turn starts clean.

A hook must never break the agent: whatever fails (bad arguments, no daemon, no workspace,
bad input, a timeout) it exits 0 with nothing on stdout, and writes one line to the hook
log. Exit 2 would be worse than useless: for UserPromptSubmit Claude Code blocks the prompt.

This module is also the lean path of ``memctl hook`` (``memoryd_client._memctl``): it
speaks to the daemon through a plain-map connection (``memoryd_client._connection``) and
imports neither memctl's parser, the result types, dataclasses, pathlib nor typing.
"""

from __future__ import annotations

import json
import os
import sys
import time

from memoryd_client._connection import Connection
from memoryd_client._params import flush_params, observe_params, recall_params
from memoryd_client._socket_path import socket_file
from memoryd_client.agents.memory_guard import EDIT_TOOLS, guard
from memoryd_client.agents.project import project_key
from memoryd_client.errors import BadResponse, ClientError, DaemonNotRunning, UnknownWorkspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: a hook runs before every prompt (~3 ms for typing)
    from collections.abc import Callable
    from typing import Any, Final, TextIO, TypeVar

    T = TypeVar("T")
    LogPath = str | os.PathLike[str]

EVENTS: Final = {
    "user-prompt-submit": "UserPromptSubmit",
    "session-start": "SessionStart",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
    "stop": "Stop",
    "post-tool-use": "PostToolUse",
    "pre-tool-use": "PreToolUse",
}
_PATH_KEYS: Final = ("file_path", "path", "notebook_path")
AGENTS: Final = ("claude-code", "codex")  # Codex runs hooks of Claude Code's shape
TIMEOUT_S: Final = 5.0  # Claude Code waits for the hook; recall answers in milliseconds
MAX_STDIN: Final = 4 * 1024 * 1024
MAX_LOG_BYTES: Final = 1024 * 1024
LOG_NAME: Final = "hooks.log"
NO_AUTOSTART_ENV: Final = "MEMCTL_NO_AUTOSTART"
USAGE: Final = (
    "usage: memctl hook claude-code|codex EVENT [-w WORKSPACE] [--socket PATH] [--timeout S]\n"
    f"EVENT: {', '.join(EVENTS)}; the event JSON on stdin; always exits 0\n"
)
SAVE_REASON: Final = (
    "memoryd: before stopping, save what is worth remembering from this session's recent "
    "exchanges (lines {first}-{last} of the transcript): call memory_append once with short "
    "markdown bullets of the durable facts (decisions and why, the user's preferences, "
    "todos, names, dates); skip chit-chat and code. If nothing is durable, do not call it. "
    "Then stop; do not answer this message otherwise."
)


class HookInputError(Exception):
    """The arguments or the event JSON are not what Claude Code sends."""


class HookArgs:
    """``memctl hook``'s arguments; ``problems``: what was wrong with them (logged)."""

    def __init__(self) -> None:
        self.agent = ""
        self.event = ""
        self.workspace: str | None = None
        self.socket: str | None = None
        self.timeout = TIMEOUT_S
        self.problems: list[str] = []


class _Registered:
    """A registered workspace from ``workspace.list``'s map (what workspace.py reads)."""

    def __init__(self, entry: Any) -> None:
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) for k in ("name", "path")
        ):
            raise BadResponse(f"malformed workspace entry from the daemon: {entry!r}")
        self.name: str = entry["name"]
        self.path: str = entry["path"]


def parse_args(argv: list[str]) -> HookArgs:
    """``AGENT EVENT`` and the options; anything else is a problem to log, never an exit 2."""
    args = HookArgs()
    positional: list[str] = []
    it = iter(argv)
    for arg in it:
        name, eq, inline = arg.partition("=")
        if name in ("-w", "--workspace", "--socket", "--timeout"):
            value = inline if eq else next(it, None)
            if value is None:
                args.problems.append(f"{name} needs a value")
            elif name == "--socket":
                args.socket = value
            elif name == "--timeout":
                try:
                    args.timeout = min(max(float(value), 0.1), TIMEOUT_S)
                except ValueError:
                    args.problems.append(f"--timeout: not a number: {value!r}")
            else:
                args.workspace = value
        elif arg.startswith("-") and arg != "-":
            args.problems.append(f"unknown option {arg}")
        else:
            positional.append(arg)
    if len(positional) > 2:
        args.problems.append(f"unexpected arguments {' '.join(positional[2:])}")
    args.agent, args.event = [*positional, "", ""][:2]
    return args


def log_path(env: dict[str, str] | None = None) -> LogPath:
    from memoryd_client.paths import default_paths  # only when something is logged

    return default_paths(env).state_dir / LOG_NAME


def note(message: str, path: LogPath | None = None) -> None:
    """One line in the hook log (kept under 1 MB: a full log starts over)."""
    import datetime as _dt  # only when something is logged: not on a served prompt

    stamp = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    line = f"{stamp} {' '.join(message.split())}\n"
    try:
        target = path or log_path(dict(os.environ))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        full = os.path.exists(target) and os.path.getsize(target) > MAX_LOG_BYTES
        with open(target, "w" if full else "a", encoding="utf-8") as f:
            f.write(line)
    except OSError:
        pass  # nowhere to write: still never break the agent


def read_event(stdin: TextIO) -> dict[str, Any]:
    text = stdin.read(MAX_STDIN + 1)
    if len(text) > MAX_STDIN:
        raise HookInputError(f"the event JSON is larger than {MAX_STDIN} bytes")
    try:
        event = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise HookInputError(f"the event is not JSON ({exc})") from None
    if not isinstance(event, dict):
        raise HookInputError("the event JSON is not an object")
    return event


def _text_field(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    if not isinstance(value, str) or not value.strip():
        raise HookInputError(f"the event has no {key!r}")
    return value


def _context(name: str, text: str) -> str:
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}},
        ensure_ascii=False,
    )


def pick_workspace(conn: Connection, requested: str | None, cwd: str) -> str:
    """``-w`` (a name, or a path the daemon resolves to the registered workspace holding
    it), else the workspace holding the event's cwd, else the only one."""
    from memoryd_client.agents.workspace import default_for, looks_like_path

    if requested is not None and looks_like_path(requested):
        return os.path.abspath(os.path.expanduser(requested))
    if requested is not None:
        return requested
    listed = conn.request("workspace.list", {})
    entries = listed.get("workspaces") if isinstance(listed, dict) else None
    if not isinstance(entries, list):
        raise BadResponse(f"malformed workspace.list result from the daemon: {listed!r}")
    found = default_for([_Registered(entry) for entry in entries], cwd)
    if found is None:
        raise HookInputError(
            f"no registered workspace holds {cwd} and there is not just one; "
            "name one with -w (memctl setup claude-code -w NAME)"
        )
    return found.path


def _transcript(event: dict[str, Any]) -> str | None:
    """The transcript to flush, absolute (the daemon reads it); None when it does not exist
    (``claude mcp list`` ends a session that never wrote one): a quiet no-op."""
    path = os.path.expanduser(_text_field(event, "transcript_path"))
    return os.path.abspath(path) if os.path.isfile(path) else None


def _map(result: Any, method: str) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise BadResponse(f"malformed {method} result from the daemon: {result!r}")
    return result


def _recall(conn: Connection, prompt: str, workspace: str, cwd: str, agent: str) -> str:
    """The recall block for the prompt ('' when nothing was worth adding)."""
    params = recall_params(prompt, workspace=workspace, project=project_key(cwd), agent=agent)
    markdown = _map(conn.request("recall", params), "recall").get("markdown", "")
    if not isinstance(markdown, str):
        raise BadResponse(f"malformed recall result from the daemon: markdown {markdown!r}")
    return markdown


def _flush(
    conn: Connection, method: str, transcript: str, session: str, ws: str, agent: str = ""
) -> Any:
    """``flush`` or ``flush.agent``; never resent on a fresh connection (the run may be
    queued, the offset may have moved)."""
    params = flush_params(transcript, session, workspace=ws)
    if method == "flush" and agent:
        params["agent"] = agent  # whose LLM tokens (memctl stats)
    return _map(conn.request(method, params), method)


def _session(event: dict[str, Any]) -> str | None:
    value = event.get("session_id")
    return value if isinstance(value, str) and value.strip() else None


def _observe(conn: Connection, params: dict[str, Any]) -> None:
    _map(conn.request("observe", params), "observe")


def _tool_event(
    event_name: str, event: dict[str, Any], conn: Connection, workspace: str | None, cwd: str
) -> str | None:
    """PostToolUse: what the tool read; PreToolUse of memoryd's append: the call's id; of a
    file tool: the deny of a memory file's edit by a tainted session (agents/memory_guard)."""
    session = _text_field(event, "session_id")
    tool = _text_field(event, "tool_name")
    args = event.get("tool_input")
    args = args if isinstance(args, dict) else {}
    if event_name == "pre-tool-use" and _is_edit(event):
        return guard(conn, event, session, cwd)
    if event_name == "pre-tool-use":
        call = _text_field(event, "tool_use_id")
        transcript = event.get("transcript_path")
        params = observe_params(session, "call", call_id=call, tool=tool, cwd=cwd)
        if isinstance(transcript, str) and os.path.isfile(os.path.expanduser(transcript)):
            params["transcript"] = os.path.abspath(os.path.expanduser(transcript))
    else:
        if tool.startswith("mcp__memoryd__"):
            return None  # our own: the MCP server says what its answers held
        command, path = (
            _command(args),
            next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)), None),
        )
        what = args.get("url") or args.get("query")
        params = observe_params(
            session,
            "read",
            tool=tool,
            command=command[:2000] if command else None,
            path=path,
            cwd=cwd,
            what=f"{tool} {what}"[:200] if isinstance(what, str) else None,
        )
    in_workspace(conn, workspace, cwd, lambda ws: _observe(conn, {**params, "workspace": ws}))
    return None


def _is_edit(event: dict[str, Any]) -> bool:
    """A file tool's call (Write, Edit, ...): guarded, and never a reason to start a daemon."""
    return event.get("tool_name") in EDIT_TOOLS


def _command(args: dict[str, Any]) -> str | None:
    """A shell tool's command: Claude Code's ``command``, Codex's ``cmd`` (or an argv)."""
    value = args.get("command") or args.get("cmd")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value)
    return value if isinstance(value, str) else None


def handle(
    event_name: str,
    event: dict[str, Any],
    conn: Connection,
    workspace: str | None = None,
    agent: str = "claude-code",
) -> str | None:
    """What to print for the event (None: nothing). Raises on any failure."""
    if event_name in ("pre-compact", "session-end", "stop"):
        if event_name == "stop" and event.get("stop_hook_active") is True:
            return None  # Claude is already continuing because of a Stop hook: never loop
        transcript = _transcript(event)
        if transcript is None:
            return None
    cwd = event.get("cwd")
    cwd = os.path.abspath(cwd) if isinstance(cwd, str) and cwd.strip() else os.getcwd()
    if event_name in ("post-tool-use", "pre-tool-use"):
        return _tool_event(event_name, event, conn, workspace, cwd)
    if event_name == "user-prompt-submit":
        prompt = _text_field(event, "prompt")
        session = _session(event)
        if session is not None:  # the user spoke: the session's turn starts clean
            _observe(conn, observe_params(session, "user_message"))
        block = in_workspace(conn, workspace, cwd, lambda ws: _recall(conn, prompt, ws, cwd, agent))
        return _context("UserPromptSubmit", block) if block else None
    if event_name == "session-start":
        from memoryd_client.agents.digest import digest  # only this event reads the files

        block = in_workspace(
            conn, workspace, cwd, lambda ws: _digest(conn, ws, agent, digest(conn, workspace=ws))
        )
        return _context("SessionStart", block) if block else None
    assert transcript is not None
    session = _text_field(event, "session_id")
    if event_name == "stop":
        due = in_workspace(
            conn, workspace, cwd, lambda ws: _flush(conn, "flush.agent", transcript, session, ws)
        )
        if not due.get("due"):
            return None
        reason = SAVE_REASON.format(first=due.get("from_line", 0), last=due.get("to_line", 0))
        return json.dumps({"decision": "block", "reason": reason}, ensure_ascii=False)
    in_workspace(
        conn, workspace, cwd, lambda ws: _flush(conn, "flush", transcript, session, ws, agent)
    )
    return None


def _digest(conn: Connection, workspace: str, agent: str, block: str) -> str:
    """The digest, counted for ``memctl stats`` (only the hook knows what it injected)."""
    if block:
        tokens = (len(block) + 3) // 4
        try:  # a count, never worth the digest itself
            for metric, value in (("digests", 1), ("digest_tokens", tokens)):
                params = {"metric": metric, "value": value, "workspace": workspace}
                conn.request("stats.record", {**params, "agent": agent})
        except ClientError as exc:
            note(f"{agent} session-start: the digest was not counted ({exc})")
    return block


def in_workspace(conn: Connection, requested: str | None, cwd: str, call: Callable[[str], T]) -> T:
    """``call`` with the workspace: without ``-w``, the cwd's path first (the daemon resolves
    a path inside a registered workspace, one round trip); when no workspace holds it, the
    only registered one (:func:`pick_workspace`)."""
    if requested is None:
        try:
            return call(cwd)
        except UnknownWorkspace:
            pass
    return call(pick_workspace(conn, requested, cwd))


def _connect(conn: Connection, log: LogPath | None) -> None:
    """Connect, starting the daemon when none answers (bounded by the client's autostart
    wait, 5 s), unless $MEMCTL_NO_AUTOSTART is set."""
    try:
        conn.open()
    except DaemonNotRunning:
        if os.environ.get(NO_AUTOSTART_ENV):
            raise
        note("memoryd was not running: starting it (memoryd run)", log)
        conn.autostart = True
        conn.open()


def run_hook(
    agent: str,
    event_name: str,
    stdin: TextIO,
    stdout: TextIO,
    *,
    socket: str | None = None,
    timeout: float = TIMEOUT_S,
    log: LogPath | None = None,
    workspace: str | None = None,
) -> int:
    """Always 0: the agent goes on whatever happens here."""
    started = time.monotonic()
    conn: Connection | None = None
    try:
        if agent not in AGENTS or event_name not in EVENTS:
            raise HookInputError(f"unknown hook {agent!r} {event_name!r} ({USAGE.splitlines()[1]})")
        event = read_event(stdin)
        conn = Connection(
            socket_file(override=socket),
            explicit_socket=socket is not None,
            timeout=timeout,
            autostart=False,
            client_name="memctl-hook",
        )
        if event_name == "pre-tool-use" and _is_edit(event):
            conn.open()  # no daemon: nothing it knows to guard, and an edit must not wait
        elif event_name not in ("pre-compact", "session-end", "stop") or _needs_daemon(event):
            _connect(conn, log)
        out = handle(event_name, event, conn, workspace, agent)
        if out and event_name == "pre-tool-use":
            note(f"{agent} {event_name}: denied {event.get('tool_name')}: {_reason(out)}", log)
    except (ClientError, HookInputError, OSError) as exc:
        note(f"{agent} {event_name}: {type(exc).__name__}: {exc}", log)
        return 0
    except Exception as exc:  # a bug here must not break the agent either
        note(f"{agent} {event_name}: internal error {type(exc).__name__}: {exc}", log)
        return 0
    finally:
        if conn is not None:
            conn.close()
    if out:
        try:
            stdout.write(out + "\n")
            stdout.flush()
        except OSError:
            pass
    elapsed = time.monotonic() - started
    if elapsed > timeout:
        note(f"{agent} {event_name}: slow ({elapsed:.1f}s)", log)
    return 0


def _reason(out: str) -> str:
    return str(json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"])[:300]


def _needs_daemon(event: dict[str, Any]) -> bool:
    """A flush event whose transcript is missing (or a Stop already continuing) is a no-op
    and must not start a daemon."""
    if event.get("stop_hook_active") is True:
        return False
    path = event.get("transcript_path")
    return isinstance(path, str) and os.path.isfile(os.path.expanduser(path))


def main(argv: list[str] | None = None) -> int:
    """``memctl hook ...`` without memctl's parser: what Claude Code runs on every prompt."""
    argv = sys.argv[2:] if argv is None else argv
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    args = parse_args(argv)
    if args.problems:  # logged, and the event still served: a typo must not cost recall
        note(f"{args.agent} {args.event}: {'; '.join(args.problems)} ({USAGE.splitlines()[0]})")
    return run_hook(
        args.agent,
        args.event,
        sys.stdin,
        sys.stdout,
        socket=args.socket,
        timeout=args.timeout,
        workspace=args.workspace,
    )
