"""The PreToolUse guard of memory files: a Claude Code session that read outside content
since its user's last message (docs/provenance.md) may not change MEMORY.md, USER.md or
``memory/**/*.md`` of a workspace memoryd knows with its own file tools (Write, Edit,
MultiEdit, NotebookEdit). Such a line would carry no ledger record and count as the owner's;
``memory_append`` records it with the session's origin instead. The OpenClaw plugin does
the same for OpenClaw (integrations/openclaw/src/writes.js).

Part of the hook's lean path (agents/hooks.py): no typing, no pathlib at run time.
"""

from __future__ import annotations

import json
import os

from memoryd_client._params import observe_params
from memoryd_client.errors import BadResponse, InvalidParams
from memoryd_client.memory_files import is_memory_note

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from memoryd_client._connection import Connection

EDIT_TOOLS: Final = ("Write", "Edit", "MultiEdit", "NotebookEdit")
_TARGET_KEYS: Final = ("file_path", "notebook_path")
TAINTED: Final = ("untrusted", "system")  # what the OpenClaw plugin refuses too
DENY_REASON: Final = (
    "memoryd: this session read outside content since the user's last message{why}, so it "
    "may not change the memory file {file} with a file tool. To keep a note, call the "
    "memory_append tool instead: memoryd records where it came from and keeps it for the "
    "user's review."
)


def target_of(tool_input: Any, cwd: str) -> str | None:
    """The file an edit tool's input names, absolute (None: it names none)."""
    if not isinstance(tool_input, dict):
        return None
    value = next((tool_input[k] for k in _TARGET_KEYS if isinstance(tool_input.get(k), str)), "")
    if not value.strip():
        return None
    return os.path.abspath(os.path.join(cwd, os.path.expanduser(value)))


def memory_file(target: str, roots: list[str]) -> tuple[str, str] | None:
    """(workspace root, relative name) when ``target`` is a memory note of one of ``roots``:
    as named and as it resolves (links followed, both for the file and the roots)."""
    for path in dict.fromkeys((target, os.path.realpath(target))):
        for root in roots:
            for base in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
                rel = os.path.relpath(path, base)
                parts = rel.replace(os.sep, "/").split("/")
                if not rel.startswith("..") and is_memory_note(parts):
                    return root, "/".join(parts)
    return None


def workspace_roots(conn: Connection) -> list[str]:
    listed = conn.request("workspace.list", {})
    entries = listed.get("workspaces") if isinstance(listed, dict) else None
    if not isinstance(entries, list):
        raise BadResponse(f"malformed workspace.list result from the daemon: {listed!r}")
    return [e["path"] for e in entries if isinstance(e, dict) and isinstance(e.get("path"), str)]


def session_state(
    conn: Connection, session: str, root: str, cwd: str, transcript: Any
) -> dict[str, Any]:
    """What the session read (``observe``), with its transcript caught up when the event
    names one the daemon may read (else the state the observers reported)."""
    params = observe_params(session, "read", workspace=root, cwd=cwd)
    if isinstance(transcript, str) and os.path.isfile(os.path.expanduser(transcript)):
        try:
            return _state(conn.request("observe", {**params, "transcript": _abs(transcript)}))
        except InvalidParams:
            pass  # a transcript the daemon may not read: what the observers said stands
    return _state(conn.request("observe", params))


def _abs(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def _state(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise BadResponse(f"malformed observe result from the daemon: {result!r}")
    return result


def guard(conn: Connection, event: dict[str, Any], session: str, cwd: str) -> str | None:
    """Claude Code's deny (``permissionDecision``) for an edit of a memory file by a tainted
    session; None lets the edit go (not a memory file, or the session is clean)."""
    target = target_of(event.get("tool_input"), cwd)
    if target is None:
        return None
    found = memory_file(target, workspace_roots(conn))
    if found is None:
        return None
    root, rel = found
    state = session_state(conn, session, root, cwd, event.get("transcript_path"))
    if state.get("origin") not in TAINTED and state.get("save") not in TAINTED:
        return None
    what = state.get("what")
    why = f" ({what})" if isinstance(what, str) and what else ""
    reason = DENY_REASON.format(why=why, file=rel)
    out = {"hookEventName": "PreToolUse", "permissionDecision": "deny"}
    return json.dumps(
        {"hookSpecificOutput": {**out, "permissionDecisionReason": reason}}, ensure_ascii=False
    )
