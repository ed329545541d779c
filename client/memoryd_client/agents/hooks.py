"""``memctl hook claude-code EVENT``: Claude Code's hooks, answered from memoryd.

Claude Code runs the command with the event's JSON on stdin (``session_id``,
``transcript_path``, ``cwd``, ``prompt``, ``stop_hook_active`` ...):

- ``user-prompt-submit``: the recall block for the prompt, as ``additionalContext``;
- ``session-start``: a short digest of MEMORY.md and the latest daily notes;
- ``pre-compact`` / ``session-end``: the transcript goes to the daemon for a flush (an LLM
  run in the background); the hook returns at once;
- ``stop``: the flush without an LLM. When enough new conversation has accumulated since
  the last flush of the session, the hook answers ``{"decision": "block", "reason": ...}``
  and Claude takes one more turn to save the durable facts with ``memory_append``.

A hook must never break the agent: whatever fails (bad arguments, no daemon, no workspace,
bad input, a timeout) it exits 0 with nothing on stdout, and writes one line to the hook
log. Exit 2 would be worse than useless: for UserPromptSubmit Claude Code blocks the prompt.

This module is also the lean path of ``memctl hook`` (``memoryd_client._memctl``): it
imports the blocking client and nothing of memctl's parser.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO, TypeVar

from memoryd_client.agents.project import project_key
from memoryd_client.agents.workspace import default_for, looks_like_path
from memoryd_client.client import MemoryClient
from memoryd_client.errors import ClientError, DaemonNotRunning, UnknownWorkspace
from memoryd_client.paths import default_paths

EVENTS: Final = {
    "user-prompt-submit": "UserPromptSubmit",
    "session-start": "SessionStart",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
    "stop": "Stop",
}
AGENTS: Final = ("claude-code",)
TIMEOUT_S: Final = 5.0  # Claude Code waits for the hook; recall answers in milliseconds
MAX_STDIN: Final = 4 * 1024 * 1024
MAX_LOG_BYTES: Final = 1024 * 1024
LOG_NAME: Final = "hooks.log"
NO_AUTOSTART_ENV: Final = "MEMCTL_NO_AUTOSTART"
USAGE: Final = (
    "usage: memctl hook claude-code EVENT [-w WORKSPACE] [--socket PATH] [--timeout S]\n"
    f"EVENT: {', '.join(EVENTS)}; the event JSON on stdin; always exits 0\n"
)
SAVE_REASON: Final = (
    "memoryd: before stopping, save what is worth remembering from this session's recent "
    "exchanges (lines {first}-{last} of the transcript): call memory_append once with short "
    "markdown bullets of the durable facts (decisions and why, the user's preferences, "
    "todos, names, dates); skip chit-chat and code. If nothing is durable, do not call it. "
    "Then stop; do not answer this message otherwise."
)


T = TypeVar("T")


class HookInputError(Exception):
    """The arguments or the event JSON are not what Claude Code sends."""


@dataclass
class HookArgs:
    agent: str = ""
    event: str = ""
    workspace: str | None = None
    socket: str | None = None
    timeout: float = TIMEOUT_S
    problems: list[str] = field(default_factory=list)


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


def log_path(env: dict[str, str] | None = None) -> Path:
    return default_paths(env).state_dir / LOG_NAME


def note(message: str, path: Path | None = None) -> None:
    """One line in the hook log (kept under 1 MB: a full log starts over)."""
    import datetime as _dt  # only when something is logged: not on a served prompt

    target = path or log_path(dict(os.environ))
    stamp = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    line = f"{stamp} {' '.join(message.split())}\n"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = "w" if target.exists() and target.stat().st_size > MAX_LOG_BYTES else "a"
        with target.open(mode, encoding="utf-8") as f:
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


def pick_workspace(client: MemoryClient, requested: str | None, cwd: str) -> str:
    """``-w`` (a name, or a path the daemon resolves to the registered workspace holding
    it), else the workspace holding the event's cwd, else the only one."""
    if requested is not None and looks_like_path(requested):
        return os.path.abspath(os.path.expanduser(requested))
    if requested is not None:
        return requested
    found = default_for(client.workspace_list(), cwd)
    if found is None:
        raise HookInputError(
            f"no registered workspace holds {cwd} and there is not just one; "
            "name one with -w (memctl setup claude-code -w NAME)"
        )
    return found.path


def _transcript(event: dict[str, Any]) -> str | None:
    """The transcript to flush; None when it does not exist (``claude mcp list`` ends a
    session that never wrote one): a quiet no-op, not a failure."""
    path = _text_field(event, "transcript_path")
    return path if os.path.isfile(os.path.expanduser(path)) else None


def handle(
    event_name: str, event: dict[str, Any], client: MemoryClient, workspace: str | None = None
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
    if event_name == "user-prompt-submit":
        prompt = _text_field(event, "prompt")
        block = in_workspace(
            client,
            workspace,
            cwd,
            lambda ws: client.recall(prompt, workspace=ws, project=project_key(cwd)).markdown,
        )
        return _context("UserPromptSubmit", block) if block else None
    if event_name == "session-start":
        from memoryd_client.agents.digest import digest  # only this event reads the files

        block = in_workspace(client, workspace, cwd, lambda ws: digest(client, workspace=ws))
        return _context("SessionStart", block) if block else None
    assert transcript is not None
    session = _text_field(event, "session_id")
    if event_name == "stop":
        due = in_workspace(
            client,
            workspace,
            cwd,
            lambda ws: client.flush_agent(transcript, session, workspace=ws),
        )
        if not due.due:
            return None
        reason = SAVE_REASON.format(first=due.from_line, last=due.to_line)
        return json.dumps({"decision": "block", "reason": reason}, ensure_ascii=False)
    in_workspace(client, workspace, cwd, lambda ws: client.flush(transcript, session, workspace=ws))
    return None


def in_workspace(
    client: MemoryClient, requested: str | None, cwd: str, call: Callable[[str], T]
) -> T:
    """``call`` with the workspace: without ``-w``, the cwd's path first (the daemon resolves
    a path inside a registered workspace, one round trip); when no workspace holds it, the
    only registered one (:func:`pick_workspace`)."""
    if requested is None:
        try:
            return call(cwd)
        except UnknownWorkspace:
            pass
    return call(pick_workspace(client, requested, cwd))


def _connect(client: MemoryClient, log: Path | None) -> None:
    """Connect, starting the daemon when none answers (bounded by the client's autostart
    wait, 5 s), unless $MEMCTL_NO_AUTOSTART is set."""
    try:
        client.connect()
    except DaemonNotRunning:
        if os.environ.get(NO_AUTOSTART_ENV):
            raise
        note("memoryd was not running: starting it (memoryd run)", log)
        client.autostart = True
        client.connect()


def run_hook(
    agent: str,
    event_name: str,
    stdin: TextIO,
    stdout: TextIO,
    *,
    socket: str | None = None,
    timeout: float = TIMEOUT_S,
    log: Path | None = None,
    workspace: str | None = None,
) -> int:
    """Always 0: the agent goes on whatever happens here."""
    started = time.monotonic()
    try:
        if agent not in AGENTS or event_name not in EVENTS:
            raise HookInputError(f"unknown hook {agent!r} {event_name!r} ({USAGE.splitlines()[1]})")
        event = read_event(stdin)
        with MemoryClient(socket, timeout=timeout, client_name="memctl-hook") as client:
            if event_name not in ("pre-compact", "session-end", "stop") or _needs_daemon(event):
                _connect(client, log)
            out = handle(event_name, event, client, workspace)
    except (ClientError, HookInputError, OSError) as exc:
        note(f"{agent} {event_name}: {type(exc).__name__}: {exc}", log)
        return 0
    except Exception as exc:  # a bug here must not break the agent either
        note(f"{agent} {event_name}: internal error {type(exc).__name__}: {exc}", log)
        return 0
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
