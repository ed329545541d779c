"""``memctl setup hermes``: memoryd as Hermes Agent's memory provider.

1. Hermes' memory folder (``$HERMES_HOME/memories``: its MEMORY.md and USER.md, which stay
   Hermes' canonical markdown) is registered with memoryd as workspace ``hermes``, unless
   ``-w`` names another workspace (then Hermes shares that one);
2. the provider plugin is written to ``$HERMES_HOME/plugins/memoryd/``: ``__init__.py``
   (it imports :mod:`memoryd_client.agents.hermes_provider` from this client's install, so
   Hermes' own environment needs nothing more), ``plugin.yaml`` and ``memoryd.json`` (the
   socket and the workspace);
3. ``hermes memory setup memoryd`` makes it the active provider (``memory.provider``).

``--undo``: ``hermes memory off`` and the plugin folder removed; memoryd keeps the
workspace (the notes are the markdown).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import memoryd_client
from memoryd_client.agents.openclaw_install import run
from memoryd_client.agents.setup import Change, SetupError, write

WORKSPACE_NAME: Final = "hermes"
PLUGIN: Final = "memoryd"

INIT: Final = '''"""memoryd, Hermes Agent's memory provider (a MemoryProvider), as
`memctl setup hermes` wrote it: the provider is memoryd_client.agents.hermes_provider,
from memoryd-client's install below when Hermes' own environment does not have it."""

import json
import sys
from pathlib import Path

CLIENT = {client!r}  # memoryd-client, msgpack and platformdirs
try:
    from memoryd_client.agents.hermes_provider import MemorydProvider
except ImportError:
    sys.path.extend(p for p in CLIENT if p not in sys.path)  # after Hermes' own: those win
    from memoryd_client.agents.hermes_provider import MemorydProvider


def register(ctx):
    config = json.loads((Path(__file__).parent / "memoryd.json").read_text(encoding="utf-8"))
    ctx.register_memory_provider(MemorydProvider(config))
'''
YAML: Final = (
    "name: memoryd\n"
    "version: {version}\n"
    'description: "memoryd: recall before every turn, turns flushed to daily notes, one '
    'memory shared with the other agents on this machine"\n'
)


def hermes_home(env: dict[str, str]) -> Path:
    explicit = env.get("HERMES_HOME", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return Path(env.get("HOME", "~")).expanduser() / ".hermes"


@dataclass
class Plan:
    home: Path
    workspace: str  # a name or a path, as memoryd resolves it
    register: Path | None  # Hermes' memory folder, to register as workspace "hermes"
    files: list[Change]
    activate: list[str] | None  # the hermes command (None: no hermes found, or --undo)

    def describe(self, undo: bool) -> str:
        steps = []
        if self.register is not None:
            steps.append(f"register {self.register} with memoryd as workspace {WORKSPACE_NAME!r}")
        verb = "remove" if undo else "write"
        steps += [f"{verb} {c.path}" for c in self.files if c.changed]
        if self.activate:
            steps.append("run: " + " ".join(self.activate))
        return "".join(f"- {s}\n" for s in steps)


def plan(
    *,
    env: dict[str, str],
    socket: Path,
    workspace: str | None,
    hermes_bin: str | None,
    undo: bool,
) -> Plan:
    home = hermes_home(env)
    memories = home / "memories"
    folder = home / "plugins" / PLUGIN
    client = _import_roots()
    wanted = {
        "__init__.py": INIT.format(client=client),
        "plugin.yaml": YAML.format(version=memoryd_client.__version__),
        "memoryd.json": json.dumps(
            {"socket": str(socket), "workspace": workspace or str(memories)}, indent=2
        )
        + "\n",
    }
    files = [_change(folder / name, "" if undo else text) for name, text in wanted.items()]
    command = hermes_bin or shutil.which("hermes", path=env.get("PATH"))
    if command is None and not undo:
        raise SetupError(
            "hermes is not on the PATH: install Hermes Agent first, or pass --hermes-bin"
        )
    activate = None
    if command is not None:
        activate = [command, "memory", "off"] if undo else [command, "memory", "setup", PLUGIN]
    register = None if (undo or workspace) else memories
    return Plan(home, workspace or str(memories), register, files, activate)


def _import_roots() -> list[str]:
    """The folders memoryd-client and its two dependencies import from (one site-packages
    for an installed client; the source tree and a venv's for an editable one)."""
    import msgpack
    import platformdirs

    roots = []
    for module in (memoryd_client, msgpack, platformdirs):
        root = str(Path(str(module.__file__)).resolve().parent.parent)
        if root not in roots:
            roots.append(root)
    return roots


def _change(path: Path, after: str) -> Change:
    try:
        before = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = ""
    return Change(path, before, after)


def print_snippet(p: Plan) -> str:
    out = [p.describe(undo=False)]
    for change in p.files:
        out.append(f"# {change.path}\n{change.after}")
    return "\n".join(out)


def apply(p: Plan, env: dict[str, str], undo: bool) -> list[str]:
    """Write (or remove) the plugin's files, then have Hermes (de)activate it; what was done."""
    done = []
    for change in p.files:
        if not change.changed:
            continue
        if undo:
            change.path.unlink(missing_ok=True)
        else:
            write(change)
        done.append(f"{change.path}: {'removed' if undo else 'updated'}")
    if undo:
        folder = p.home / "plugins" / PLUGIN
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    if p.activate:
        child = {**env, "HERMES_HOME": str(p.home)}
        child.setdefault("TERM", "dumb")
        run(p.activate, child)
        done.append(" ".join(p.activate[1:]) + ": done")
        # `hermes memory setup NAME` exits 0 even when it cannot load the provider: ask
        status = run([p.activate[0], "memory", "status"], child)
        active = re.search(r"Provider:\s+memoryd\b", status) is not None
        if active == undo:
            raise SetupError(
                f"Hermes does not have memoryd {'off' if undo else 'active'} after "
                f"`{' '.join(p.activate[1:])}`: {' / '.join(status.strip().splitlines()[:6])}"
            )
    return done
