"""``memctl setup``: each agent's configuration for memoryd, written (Claude Code) or printed.

Claude Code gets the MCP server and the four hooks merged into its own files, keeping
everything already there; a second run changes nothing. The other clients' snippets follow
their documented shapes and are printed to paste (``snippets``):

- Claude Code: ``.mcp.json`` (project) or ``~/.claude.json`` (user) ``mcpServers``; hooks in
  ``.claude/settings.json`` or ``~/.claude/settings.json``;
- Cursor: ``.cursor/mcp.json`` or ``~/.cursor/mcp.json`` ``mcpServers``;
- Codex CLI: ``~/.codex/config.toml`` ``[mcp_servers.NAME]``;
- Claude Desktop: ``claude_desktop_config.json`` ``mcpServers`` (an absolute command: a
  desktop app does not get the shell's PATH);
- OpenClaw: ``~/.openclaw/openclaw.json`` ``mcp.servers``.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

SERVER_NAME: Final = "memoryd"
HOOK_TIMEOUT_S: Final = 10
HOOK_EVENTS: Final = {
    "UserPromptSubmit": "user-prompt-submit",
    "SessionStart": "session-start",
    "PreCompact": "pre-compact",
    "SessionEnd": "session-end",
    "Stop": "stop",
    "PostToolUse": "post-tool-use",
    "PreToolUse": "pre-tool-use",
}
# Tool events run only for these tools (a regular expression over the tool's name): what
# can bring outside content into a session (docs/provenance.md), memoryd's own aside; and
# memoryd's tools, whose call the daemon binds to the session before the MCP server asks;
# the file tools, which a tainted session may not point at a memory file (memory_guard.py).
HOOK_MATCHERS: Final = {
    "PostToolUse": "^(?!mcp__memoryd__)(WebFetch|WebSearch|Bash|Read|NotebookRead|mcp__.*)$",
    "PreToolUse": "^(mcp__memoryd__.*|Write|Edit|MultiEdit|NotebookEdit)$",
}
FLUSH_EVENTS: Final = {
    # who writes a session's notes: the daemon's LLM at compaction and exit, or the
    # agent's own model when a Stop hook asks it to (no LLM configured)
    "daemon": ("PreCompact", "SessionEnd"),
    "agent": ("Stop",),
}
FLUSH_MODES: Final = ("auto", "agent", "daemon")
SKILL_DIR: Final = Path(".claude") / "skills" / "memoryd-memory"
# What `claude -p` may run without asking: the read-only tools (search, get, status, review).
READ_ONLY_TOOLS: Final = tuple(
    f"mcp__{SERVER_NAME}__memory_{tool}" for tool in ("search", "get", "status", "review")
)


class SetupError(Exception):
    """A settings file that cannot be merged into (not JSON, not an object)."""


def memctl_command(absolute: bool = False) -> str:
    """How agents should start memctl: by name when the shell finds this very memctl."""
    here = Path(sys.argv[0]).resolve() if Path(sys.argv[0]).name == "memctl" else None
    found = shutil.which("memctl")
    if here is None:
        here = Path(found).resolve() if found else Path(sys.executable).parent / "memctl"
    if not absolute and found and Path(found).resolve() == here:
        return "memctl"
    return str(here)


def mcp_entry(command: str, workspace: str | None = None) -> dict[str, Any]:
    return {"command": command, "args": ["mcp", *(["-w", workspace] if workspace else [])]}


def hook_entry(
    command: str, event: str, workspace: str | None = None, agent: str = "claude-code"
) -> dict[str, Any]:
    where = f" -w {shlex.quote(workspace)}" if workspace else ""
    return {
        "type": "command",
        "command": f"{shlex.quote(command)} hook {agent} {event}{where}",  # a path with spaces
        "timeout": HOOK_TIMEOUT_S,
    }


def hook_events(flush: str) -> dict[str, str]:
    """The Claude Code events setup installs for a flush mode (``agent`` or ``daemon``)."""
    left_out = {e for mode, events in FLUSH_EVENTS.items() if mode != flush for e in events}
    return {name: event for name, event in HOOK_EVENTS.items() if name not in left_out}


@dataclass
class Change:
    path: Path
    before: str  # '' when the file does not exist
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self, after: str = "after setup") -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"{self.path} (now)",
                tofile=f"{self.path} ({after})",
            )
        )


def _load(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    if not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SetupError(
            f"{path} is not valid JSON ({exc}); fix it, then run setup again"
        ) from None
    if not isinstance(data, dict):
        raise SetupError(f"{path} does not hold a JSON object; fix it, then run setup again")
    return text, data


def dump(data: dict[str, Any]) -> str:
    """A JSON file's text as setup writes it (and prints it)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _object(parent: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise SetupError(f"{path}: {key!r} is not an object; fix it, then run setup again")
    return value


def edit(path: Path, *edits: Callable[[dict[str, Any], Path], None]) -> Change:
    """The JSON file at ``path`` with ``edits`` applied (unchanged when the data is the
    same: a file formatted by hand is not rewritten for its whitespace)."""
    before, data = _load(path)
    for change in edits:
        change(data, path)
    after = dump(data)
    return Change(path, before, before if _same(before, after) else after)


def set_server(entry: dict[str, Any], *where: str) -> Callable[[dict[str, Any], Path], None]:
    """An edit putting ``entry`` at ``where...`` / ``mcpServers`` / memoryd."""

    def apply(data: dict[str, Any], path: Path) -> None:
        for key in where:
            data = _object(data, key, path)
        _object(data, "mcpServers", path)[SERVER_NAME] = entry

    return apply


def merge_mcp(path: Path, command: str, workspace: str | None = None) -> Change:
    return edit(path, set_server(mcp_entry(command, workspace)))


def claude_mcp_entry(command: str, workspace: str | None) -> dict[str, Any]:
    # alwaysLoad: the tools are in the model's list from the first turn, not behind Claude
    # Code's tool search (the model must search memory before answering about prior work)
    return {"type": "stdio", **mcp_entry(command, workspace), "alwaysLoad": True}


def allow_read_only(data: dict[str, Any], path: Path) -> None:
    """``permissions.allow`` gets memoryd's read-only tools: ``claude -p`` refuses any tool
    not allowed (``readOnlyHint`` grants nothing). Writes stay the user's choice."""
    allow = _object(data, "permissions", path).setdefault("allow", [])
    if not isinstance(allow, list):
        raise SetupError(f"{path}: permissions.allow is not a list; fix it, then run setup again")
    allow.extend(rule for rule in READ_ONLY_TOOLS if rule not in allow)


def _ours(hook: Any, agent: str, event: str) -> bool:
    """Whether ``hook`` is memctl's for ``event`` (with or without -w, by name or path)."""
    if not isinstance(hook, dict):
        return False
    try:
        words = shlex.split(str(hook.get("command", "")))
    except ValueError:  # someone else's command with unbalanced quotes
        return False
    return words[1:4] == ["hook", agent, event]


def set_hooks(
    command: str,
    workspace: str | None,
    events: dict[str, str],
    wanted: dict[str, str],
    matchers: dict[str, str],
    agent: str = "claude-code",
) -> Callable[[dict[str, Any], Path], None]:
    """An edit putting our hook for each of ``wanted``'s events (name -> our event
    argument): replaced where it is, else added as a group of its own (with the event's
    matcher, when it has one); ours for the other ``events`` are taken out (a group left
    empty goes too)."""

    def apply(data: dict[str, Any], path: Path) -> None:
        hooks = _object(data, "hooks", path)
        for name, event in events.items():
            groups = hooks.get(name, [])
            if not isinstance(groups, list):
                raise SetupError(
                    f"{path}: hooks.{name} is not a list; fix it, then run setup again"
                )
            entry = hook_entry(command, event, workspace, agent) if name in wanted else None
            placed = False
            for group in groups:
                inner = group.get("hooks") if isinstance(group, dict) else None
                if not isinstance(inner, list):
                    continue
                kept = [h for h in inner if not _ours(h, agent, event)]
                if len(kept) != len(inner) and entry is not None and not placed:
                    at = next(i for i, h in enumerate(inner) if _ours(h, agent, event))
                    kept.insert(at, entry)
                    placed = True
                    if len(kept) == 1 and matchers.get(name):  # a group of ours: its matcher now
                        group["matcher"] = matchers[name]
                inner[:] = kept
            groups = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
            if entry is not None and not placed:
                matcher = matchers.get(name)
                groups.append(
                    {"matcher": matcher, "hooks": [entry]} if matcher else {"hooks": [entry]}
                )
            if groups:
                hooks[name] = groups
            else:
                hooks.pop(name, None)

    return apply


def merge_hooks(
    path: Path, command: str, workspace: str | None = None, flush: str = "daemon"
) -> Change:
    return edit(path, set_hooks(command, workspace, HOOK_EVENTS, hook_events(flush), HOOK_MATCHERS))


def _same(before: str, after: str) -> bool:
    """Same data (a file formatted by hand is not rewritten for its whitespace)."""
    if not before.strip():
        return False
    try:
        return bool(json.loads(before) == json.loads(after))
    except ValueError:
        return False


def http_entry(url: str, token: str, *, typed: bool = True) -> dict[str, Any]:
    """An MCP server entry for ``memctl mcp --http`` at ``url``, with its bearer token
    (mcp_token.py): what Claude Code (``typed``) and Cursor read."""
    entry: dict[str, Any] = {"url": url, "headers": {"Authorization": f"Bearer {token}"}}
    return {"type": "http", **entry} if typed else entry


def claude_code_changes(
    *,
    project: Path | None,
    home: Path,
    command: str,
    workspace: str | None = None,
    flush: str = "daemon",
    shared: bool = False,
    http: dict[str, Any] | None = None,
) -> list[Change]:
    """``project`` None: every project (``~/.claude.json`` and ``~/.claude/settings.json``).
    Else this project's ``.claude/settings.json`` (hooks) and ``settings.local.json`` (the
    read-only tools allowed), and the server in ``~/.claude.json`` for
    this project only (Claude Code's "local" scope, what ``claude mcp add`` writes: private
    to this user, so nothing to approve), or, ``shared``, in its ``.mcp.json`` for everyone
    who checks it out (Claude Code has each of them approve it first). ``http``: the server
    entry for ``memctl mcp --http`` (http_entry) instead of stdio; never in a shared file
    (it carries the token)."""
    if http is not None and shared:
        raise SetupError("--http with --shared would put the token in .mcp.json (for git)")
    entry = http if http is not None else claude_mcp_entry(command, workspace)
    if project is None:
        mcp = edit(home / ".claude.json", set_server(entry))
    elif shared:
        mcp = edit(project / ".mcp.json", set_server(entry))
    else:
        mcp = edit(home / ".claude.json", set_server(entry, "projects", str(project)))
    hooks = set_hooks(command, workspace, HOOK_EVENTS, hook_events(flush), HOOK_MATCHERS)
    if project is None:
        return [mcp, edit(home / ".claude" / "settings.json", hooks, allow_read_only)]
    # A project's shared settings.json grants no permission to `claude -p`: they go in the
    # user's own settings.local.json (which Claude Code keeps out of git)
    return [
        mcp,
        edit(project / ".claude" / "settings.json", hooks),
        edit(project / ".claude" / "settings.local.json", allow_read_only),
    ]


def skill_change(*, project: Path | None, home: Path) -> Change:
    """SKILL.md where Claude Code finds skills: the project's .claude/skills or ~/.claude's."""
    path = (project if project is not None else home) / SKILL_DIR / "SKILL.md"
    try:
        before = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = ""
    return Change(path, before, skill_text())


def write(change: Change) -> None:
    """Atomically: a temp file beside it, fsync, rename; the file's mode is kept."""
    change.path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = change.path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{change.path.name}.", dir=change.path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(change.after)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, change.path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def skill_text() -> str:
    from importlib.resources import files

    return files("memoryd_client.agents").joinpath("SKILL.md").read_text(encoding="utf-8")
