"""``memctl setup openclaw``: memoryd becomes OpenClaw's memory.

Three steps, each shown by ``--dry-run`` / ``--print`` before anything changes:

1. the agent's OpenClaw workspace (``agents.defaults.workspace``, else
   ``$OPENCLAW_WORKSPACE_DIR``, else ``<OpenClaw home>/workspace``) is registered with
   memoryd (created when missing: OpenClaw creates it on its first run);
2. the plugin (``integrations/openclaw``) is installed with ``openclaw plugins install``,
   which enables it and gives it ``plugins.slots.memory``;
3. ``openclaw.json`` gets what the install leaves out: the conversation-hook permission the
   recall and flush hooks need, memoryd's socket, and, when OpenClaw also has memoryd as
   an MCP server, the ``env`` that server needs to find the socket (OpenClaw hands MCP
   servers only HOME, PATH, PWD, SHELL and TERM).

``memory-core`` is disabled: outside the slot it still loads and registers the same tool
names, and whichever plugin loads first answers ``memory_search``.

``--undo`` gives the slot back to ``memory-core`` (enabled again) and disables the plugin's
entry; the plugin stays installed and memoryd keeps the workspace (its notes are the
markdown).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd_client.agents.setup import Change, SetupError, _dump, _load, _object, _same

PLUGIN_ID: Final = "memoryd"
BUILTIN_MEMORY: Final = "memory-core"
WORKSPACE_NAME: Final = "openclaw"
MCP_SERVER: Final = "memoryd"


def openclaw_home(env: dict[str, str]) -> Path:
    """OpenClaw's state directory: ``$OPENCLAW_STATE_DIR`` or ``~/.openclaw``."""
    state = env.get("OPENCLAW_STATE_DIR", "").strip()
    return (
        Path(state).expanduser() if state else Path(env.get("HOME", "~")).expanduser() / ".openclaw"
    )


def config_file(env: dict[str, str]) -> Path:
    explicit = env.get("OPENCLAW_CONFIG_PATH", "").strip()
    return Path(explicit).expanduser() if explicit else openclaw_home(env) / "openclaw.json"


def workspace_dir(config: dict[str, Any], env: dict[str, str]) -> Path:
    """The default agent's workspace, as OpenClaw resolves it."""
    defaults = (
        config.get("agents", {}).get("defaults", {})
        if isinstance(config.get("agents"), dict)
        else {}
    )
    configured = defaults.get("workspace") if isinstance(defaults, dict) else None
    if isinstance(configured, str) and configured.strip():
        return Path(configured.strip()).expanduser()
    explicit = env.get("OPENCLAW_WORKSPACE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser().resolve()
    return openclaw_home(env) / "workspace"


def default_plugin_source() -> Path | None:
    """The plugin beside this client in a checkout of memoryd, when there is one."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "integrations" / "openclaw"
        if (candidate / "openclaw.plugin.json").is_file():
            return candidate
    return None


def merge_config(path: Path, socket: Path, env: dict[str, str], *, undo: bool) -> Change:
    """openclaw.json with memoryd in the memory slot (or, undone, memory-core back in it)."""
    before, data = _load(path)
    plugins = _object(data, "plugins", path)
    slots = _object(plugins, "slots", path)
    entries = _object(plugins, "entries", path)
    entry = _object(entries, PLUGIN_ID, path)
    builtin = _object(entries, BUILTIN_MEMORY, path)
    if undo:
        slots["memory"] = BUILTIN_MEMORY
        entry["enabled"] = False
        builtin["enabled"] = True
    else:
        slots["memory"] = PLUGIN_ID
        entry["enabled"] = True
        # memory-core stays loadable outside the slot and registers the same tool names;
        # loaded first, its memory_search would answer instead of memoryd's.
        builtin["enabled"] = False
        _object(entry, "hooks", path)["allowConversationAccess"] = True
        _object(entry, "config", path)["socket"] = str(socket)
        servers = data.get("mcp", {}).get("servers") if isinstance(data.get("mcp"), dict) else None
        if isinstance(servers, dict) and isinstance(servers.get(MCP_SERVER), dict):
            _object(servers[MCP_SERVER], "env", path).update(mcp_env(socket, env))
    after = _dump(data)
    return Change(path, before, before if _same(before, after) else after)


def mcp_env(socket: Path, env: dict[str, str]) -> dict[str, str]:
    """What ``memctl mcp`` needs to find the daemon when OpenClaw spawns it."""
    out = {"MEMORYD_SOCKET": str(socket)}
    if env.get("MEMORYD_HOME"):
        out["MEMORYD_HOME"] = env["MEMORYD_HOME"]
    return out


@dataclass
class Plan:
    workspace: Path
    create_workspace: bool
    register: bool  # memoryd does not know the workspace yet
    install: list[str] | None  # the command, or None for --undo
    change: Change
    notes: list[str] = field(default_factory=list)
    # The registered workspace that holds it (when not registered now) and OpenClaw's home:
    # memoryd copies the sessions in that home's stores into it (with index.sessions on).
    known_root: Path | None = None
    home: Path | None = None

    def describe(self) -> str:
        lines = []
        if self.create_workspace:
            lines.append(f"create the OpenClaw workspace folder {self.workspace}")
        if self.register:
            lines.append(f"register {self.workspace} with memoryd as workspace {WORKSPACE_NAME!r}")
        if self.home is not None:
            lines.append(
                f"tell memoryd the workspace is OpenClaw's (home {self.home}): with "
                "index.sessions on, its sessions are indexed"
            )
        if self.install:
            lines.append("run: " + " ".join(self.install))
        return "".join(f"- {line}\n" for line in lines)


def plan(
    *,
    env: dict[str, str],
    socket: Path,
    known_workspaces: list[Path] | None,
    plugin: str | None,
    openclaw_bin: str | None,
    undo: bool,
) -> Plan:
    """Everything setup would do, computed without changing anything."""
    path = config_file(env)
    _, config = _load(path)
    workspace = workspace_dir(config, env)
    change = merge_config(path, socket, env, undo=undo)
    if undo:
        return Plan(workspace, False, False, None, change)
    source = plugin or (str(p) if (p := default_plugin_source()) else None)
    if source is None:
        raise SetupError(
            "no OpenClaw plugin to install: pass --plugin PATH (integrations/openclaw of a "
            "memoryd checkout, after `npm ci` there) or an npm package spec"
        )
    command = openclaw_bin or shutil.which("openclaw", path=env.get("PATH"))
    if command is None:
        raise SetupError(
            "openclaw is not on the PATH: install OpenClaw first, or pass --openclaw-bin"
        )
    known_root = next((k for k in known_workspaces or [] if _inside(workspace, k)), None)
    return Plan(
        workspace=workspace,
        create_workspace=not workspace.exists(),
        register=known_workspaces is None or known_root is None,
        install=[command, "plugins", "install", source, "--force", "--accept-capabilities"],
        change=change,
        known_root=known_root,
        home=openclaw_home(env),
    )


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def print_snippet(p: Plan) -> str:
    """--print: the steps, and the openclaw.json keys setup merges."""
    after = json.loads(p.change.after) if p.change.after.strip() else {}
    plugins = after.get("plugins", {})
    fragment: dict[str, Any] = {
        "plugins": {
            "slots": plugins.get("slots", {}),
            "entries": {PLUGIN_ID: plugins.get("entries", {}).get(PLUGIN_ID, {})},
        }
    }
    server = after.get("mcp", {}).get("servers", {}).get(MCP_SERVER)
    if server is not None:
        fragment["mcp"] = {"servers": {MCP_SERVER: {"env": server.get("env", {})}}}
    return p.describe() + f"# {p.change.path} (merged)\n" + _dump(fragment)


def run_install(command: list[str], env: dict[str, str]) -> None:
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{' '.join(command)}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise SetupError(f"{' '.join(command)} failed ({done.returncode}): " + " / ".join(tail))
