"""``memctl setup openclaw``: memoryd becomes OpenClaw's memory.

Four steps, each shown by ``--dry-run`` / ``--print`` before anything changes:

1. the agent's OpenClaw workspace (``agents.defaults.workspace``, else
   ``$OPENCLAW_WORKSPACE_DIR``, else ``<OpenClaw home>/workspace``) is registered with
   memoryd (created when missing: OpenClaw creates it on its first run);
2. the plugin this package ships (:mod:`openclaw_install`) is installed with ``openclaw
   plugins install``, which enables it and gives it ``plugins.slots.memory``; skipped when
   the installed copy is the same;
3. ``openclaw.json`` gets what the install leaves out: the conversation-hook permission the
   recall and flush hooks need, memoryd's socket, and, when OpenClaw also has memoryd as
   an MCP server, the ``env`` that server needs to find the socket (OpenClaw hands MCP
   servers only HOME, PATH, PWD, SHELL and TERM);
4. OpenClaw is asked to load the plugin; if it cannot (or any step before failed),
   ``openclaw.json`` and the plugin folder are put back as they were.

``memory-core`` is disabled: outside the slot it still loads and registers the same tool
names, and whichever plugin loads first answers ``memory_search``.

``--undo`` gives the slot back to ``memory-core`` (enabled again) and disables the plugin's
entry; the plugin stays installed and memoryd keeps the workspace (its notes are the
markdown).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd_client.agents import openclaw_install as install
from memoryd_client.agents.setup import Change, SetupError, _load, _object, _same, dump, write

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
    after = dump(data)
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
    change: Change
    openclaw: str | None = None  # its executable (None for --undo)
    source: str | None = None  # the plugin: a folder, or an npm spec (--plugin)
    files: dict[str, bytes] | None = None  # a folder's shipped files (staged to install)
    same: bool = False  # the installed copy holds these files already: no install
    # The registered workspace that holds it (when not registered now) and OpenClaw's home:
    # memoryd copies the sessions in that home's stores into it (with index.sessions on).
    known_root: Path | None = None
    home: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def install(self) -> bool:
        return self.openclaw is not None and not self.same

    def install_command(self, source: str) -> list[str]:
        assert self.openclaw is not None
        return [self.openclaw, "plugins", "install", source, "--force", "--accept-capabilities"]

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
        if self.openclaw is not None and self.source is not None:
            if self.same:
                lines.append(f"the installed plugin is the same as {self.source}: no reinstall")
            else:
                shown = self.source if self.files is None else f"<a copy of {self.source}>"
                lines.append("run: " + " ".join(self.install_command(shown)))
            lines.append(
                f"check that OpenClaw loads it: {self.openclaw} plugins inspect "
                f"{PLUGIN_ID} --runtime --json (on failure {self.change.path} and the plugin "
                "folder are put back)"
            )
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
        return Plan(workspace, False, False, change)
    source = plugin or (str(p) if (p := install.bundled_plugin()) else None)
    if source is None:
        raise SetupError(
            "this memoryd-client has no OpenClaw plugin in it (a broken install?): "
            "reinstall it, or pass --plugin PATH or an npm package spec"
        )
    command = openclaw_bin or shutil.which("openclaw", path=env.get("PATH"))
    if command is None:
        raise SetupError(
            "openclaw is not on the PATH: install OpenClaw first, or pass --openclaw-bin"
        )
    folder = Path(source).expanduser()
    shipped = install.shipped_files(folder) if folder.is_dir() else None
    home = openclaw_home(env)
    known_root = next((k for k in known_workspaces or [] if _inside(workspace, k)), None)
    return Plan(
        workspace=workspace,
        create_workspace=not workspace.exists(),
        register=known_workspaces is None or known_root is None,
        change=change,
        openclaw=command,
        source=source,
        files=shipped,
        same=shipped is not None and install.same_as_installed(home, shipped),
        known_root=known_root,
        home=home,
    )


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def print_snippet(p: Plan) -> str:
    """--print: the steps, and the openclaw.json keys setup merges (memory-core's too: two
    memories answer when it stays enabled)."""
    after = json.loads(p.change.after) if p.change.after.strip() else {}
    plugins = after.get("plugins", {})
    entries = plugins.get("entries", {})
    fragment: dict[str, Any] = {
        "plugins": {
            "slots": plugins.get("slots", {}),
            "entries": {
                name: entries[name] for name in (PLUGIN_ID, BUILTIN_MEMORY) if name in entries
            },
        }
    }
    server = after.get("mcp", {}).get("servers", {}).get(MCP_SERVER)
    if server is not None:
        fragment["mcp"] = {"servers": {MCP_SERVER: {"env": server.get("env", {})}}}
    return p.describe() + f"# {p.change.path} (merged)\n" + dump(fragment)


def apply(p: Plan, socket: Path, env: dict[str, str], say: Callable[[str], None]) -> None:
    """Install (unless the same copy is there), merge openclaw.json, check that OpenClaw
    loads the plugin; on any failure put openclaw.json and the plugin folder back."""
    assert p.home is not None and p.openclaw is not None and p.source is not None
    snapshot = install.Snapshot.take(p.change.path, p.home)
    try:
        if p.install:
            source = p.source
            if p.files is not None:
                source = str(install.stage(p.files, snapshot.scratch / "staged"))
            install.run(p.install_command(source), env)
            say(f"openclaw: plugin {PLUGIN_ID} installed")
            # the install rewrote openclaw.json: merge into what it wrote
            p.change = merge_config(p.change.path, socket, env, undo=False)
        else:
            say(f"openclaw: plugin {PLUGIN_ID} already installed (the same files)")
        if p.change.changed:
            write(p.change)
            say(f"{p.change.path}: updated")
        else:
            say(f"{p.change.path}: already set up")
        for warning in install.check_loaded(p.openclaw, env):
            say(f"openclaw: {warning}")
        say(f"openclaw: OpenClaw loads the {PLUGIN_ID} plugin")
    except (SetupError, OSError) as exc:
        problems = snapshot.restore(p.openclaw, env)
        kept = (
            f"{p.change.path} and the plugin folder are as they were"
            if not problems
            else "could not restore everything: " + "; ".join(problems)
        )
        raise SetupError(f"{exc}; {kept}") from None
    finally:
        snapshot.discard()
