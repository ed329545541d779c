"""``memctl hook claude-code EVENT``: Claude Code's hooks, answered from memoryd.

Claude Code runs the command with the event's JSON on stdin (``session_id``,
``transcript_path``, ``cwd``, ``prompt``, ``source``, ``trigger``, ``reason`` ...):

- ``user-prompt-submit``: the recall block for the prompt, as ``additionalContext``;
- ``session-start``: a short digest of MEMORY.md and the latest daily notes;
- ``pre-compact`` / ``session-end``: the transcript goes to the daemon for a flush (an LLM
  run in the background); the hook returns at once.

A hook must never break the agent: whatever fails (no daemon, no workspace, bad input, a
timeout) it exits 0 with nothing on stdout, and writes one line to the hook log.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import time
from pathlib import Path
from typing import Any, Final, TextIO

from memoryd_client.agents.digest import digest
from memoryd_client.agents.workspace import default_for
from memoryd_client.client import MemoryClient
from memoryd_client.errors import ClientError
from memoryd_client.paths import default_paths

EVENTS: Final = {
    "user-prompt-submit": "UserPromptSubmit",
    "session-start": "SessionStart",
    "pre-compact": "PreCompact",
    "session-end": "SessionEnd",
}
AGENTS: Final = ("claude-code",)
TIMEOUT_S: Final = 5.0  # Claude Code waits for the hook; recall answers in milliseconds
MAX_STDIN: Final = 4 * 1024 * 1024
MAX_LOG_BYTES: Final = 1024 * 1024
LOG_NAME: Final = "hooks.log"


class HookInputError(Exception):
    """The event JSON is not what Claude Code sends."""


def log_path(env: dict[str, str] | None = None) -> Path:
    return default_paths(env).state_dir / LOG_NAME


def note(message: str, path: Path | None = None) -> None:
    """One line in the hook log (kept under 1 MB: a full log starts over)."""
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
    except ValueError as exc:
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


def handle(event_name: str, event: dict[str, Any], client: MemoryClient) -> str | None:
    """What to print for the event (None: nothing). Raises on any failure."""
    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else os.getcwd()
    found = default_for(client.workspace_list(), str(cwd))
    if found is None:
        raise HookInputError(f"no registered workspace holds {cwd} (and there is not just one)")
    ws = found.path
    if event_name == "user-prompt-submit":
        block = client.recall(_text_field(event, "prompt"), workspace=ws).markdown
        return _context("UserPromptSubmit", block) if block else None
    if event_name == "session-start":
        block = digest(client, workspace=ws)
        return _context("SessionStart", block) if block else None
    transcript = _text_field(event, "transcript_path")
    session = _text_field(event, "session_id")
    client.flush(transcript, session, workspace=ws)
    return None


def run_hook(
    agent: str,
    event_name: str,
    stdin: TextIO,
    stdout: TextIO,
    *,
    socket: str | None = None,
    timeout: float = TIMEOUT_S,
    log: Path | None = None,
) -> int:
    """Always 0: the agent goes on whatever happens here."""
    started = time.monotonic()
    try:
        if agent not in AGENTS or event_name not in EVENTS:
            raise HookInputError(f"unknown hook {agent} {event_name}")
        event = read_event(stdin)
        with MemoryClient(socket, timeout=timeout, client_name="memctl-hook") as client:
            out = handle(event_name, event, client)
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
