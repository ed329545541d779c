"""``memctl setup codex``: the MCP server and the hooks for Codex CLI.

- ``config.toml`` (``~/.codex/`` or ``$CODEX_HOME``; ``--project``: the project's
  ``.codex/``, which Codex loads only in a trusted project) gets ``[mcp_servers.memoryd]``,
  with the socket memctl found in its ``env``;
- ``hooks.json`` beside it gets ``memctl hook codex EVENT`` for the events Claude Code's
  hooks answer (Codex runs command hooks of the same shape): recall before each prompt, a
  digest at start, the flush (at compaction and exit with an LLM, else a Stop hook asking
  Codex to save its notes), and the tool events that tell the daemon what a session read.

Codex runs a new or changed command hook only once the user trusted it (``/hooks`` in the
``codex`` TUI); setup says so. ``--undo`` takes out the server and memctl's hooks only.

``config.toml`` is edited as text (the client has no TOML writer): memctl's table is
replaced or appended, every other line kept, and the result is parsed back to check it.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from memoryd_client.agents.setup import (
    HOOK_EVENTS,
    SERVER_NAME,
    Change,
    SetupError,
    edit,
    hook_events,
    set_hooks,
)

# Codex's tool names differ from Claude Code's (exec_command, apply_patch, mcp__server__tool):
# every tool's result is reported (the daemon judges it), memoryd's own calls bound.
MATCHERS: Final = {"PreToolUse": "^mcp__memoryd__"}
TRUST_NOTE: Final = (
    "Codex runs a new or changed hook only once you trust it: run `codex`, open /hooks, "
    "review memoryd's hooks (memctl hook codex ...) and trust them"
)
_HEADER: Final = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")


def codex_home(env: dict[str, str]) -> Path:
    explicit = env.get("CODEX_HOME", "").strip()
    return (
        Path(explicit).expanduser()
        if explicit
        else Path(env.get("HOME", "~")).expanduser() / ".codex"
    )


def server_table(command: str, workspace: str | None, env: dict[str, str]) -> str:
    args = ["mcp", *(["-w", workspace] if workspace else [])]
    inline = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
    return (
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"command = {json.dumps(command)}\n"
        f"args = {json.dumps(args)}\n" + (f"env = {{ {inline} }}\n" if env else "")
    )


def _without_ours(text: str) -> str:
    """``text`` without memctl's ``[mcp_servers.memoryd]`` table (and its sub-tables)."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line)
        if header:
            name = header.group(1).replace('"', "").replace(" ", "")
            skipping = name == f"mcp_servers.{SERVER_NAME}" or name.startswith(
                f"mcp_servers.{SERVER_NAME}."
            )
        if not skipping:
            out.append(line)
    return "".join(out).rstrip("\n") + ("\n" if out else "")


def merge_config(path: Path, table: str | None) -> Change:
    """config.toml with memctl's server table (None: without it)."""
    try:
        before = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = ""
    try:
        old = tomllib.loads(before)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(
            f"{path} is not valid TOML ({exc}); fix it, then run setup again"
        ) from None
    kept = _without_ours(before)
    after = kept if table is None else kept + ("\n" if kept.strip() else "") + table
    try:
        new = tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:  # a shape the line edit cannot handle
        raise SetupError(f"{path}: cannot merge the server table ({exc}); add it by hand") from None
    wanted = tomllib.loads(table)["mcp_servers"][SERVER_NAME] if table else None
    if new.get("mcp_servers", {}).get(SERVER_NAME) != wanted:
        raise SetupError(f"{path}: mcp_servers.{SERVER_NAME} is set in a way setup cannot edit")
    same = _strip(old) == _strip(new)
    return Change(path, before, before if same else after)


def _strip(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data, default=str))  # type: ignore[no-any-return]


def changes(
    *,
    home: Path,
    project: Path | None,
    command: str,
    workspace: str | None,
    flush: str,
    env: dict[str, str],
    undo: bool = False,
) -> list[Change]:
    folder = project / ".codex" if project is not None else home
    table = None if undo else server_table(command, workspace, env)
    hooks = hook_edit(command, workspace, None if undo else flush)
    return [merge_config(folder / "config.toml", table), edit(folder / "hooks.json", hooks)]


def hook_edit(
    command: str, workspace: str | None, flush: str | None
) -> Callable[[dict[str, Any], Path], None]:
    """memctl's hooks for Codex (flush None: none, ours taken out)."""
    wanted = hook_events(flush) if flush is not None else {}
    return set_hooks(command, workspace, HOOK_EVENTS, wanted, MATCHERS, agent="codex")
