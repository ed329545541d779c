"""Installing memoryd's OpenClaw plugin so that OpenClaw keeps working.

The plugin ships in this package (``agents/openclaw_plugin``, with its msgpack codec
vendored: it has no npm dependency to install). ``openclaw plugins install <folder>``
copies a folder whole, so setup stages what the plugin's ``package.json`` ships into a
folder of its own and installs that; when the installed copy
(``<OpenClaw home>/extensions/memoryd``) already holds the same files, it skips the install
(about 30 s). After the install and the config merge, OpenClaw itself is asked to load the
plugin (``openclaw plugins inspect memoryd --runtime --json``); on any failure the previous
``openclaw.json`` and plugin folder are put back (a plugin that was not there before is
uninstalled) and the error says why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Final

from memoryd_client.agents.setup import SetupError

PLUGIN_ID: Final = "memoryd"
TIMEOUT_S: Final = 600
# What a shipped plugin folder may hold (package.json "files" names folders too).
_SHIPPED_SUFFIXES: Final = (".js", ".mjs", ".json", ".md")
_SHIPPED_NAMES: Final = ("LICENSE",)


def bundled_plugin() -> Path | None:
    """The plugin shipped in this package (a link to integrations/openclaw in a checkout)."""
    folder = Path(str(files("memoryd_client.agents").joinpath("openclaw_plugin")))
    return folder.resolve() if (folder / "openclaw.plugin.json").is_file() else None


def shipped_files(source: Path) -> dict[str, bytes]:
    """The plugin's files as its package.json ships them: relative path -> bytes."""
    try:
        manifest = json.loads((source / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SetupError(f"{source}: no readable package.json ({exc})") from None
    out: dict[str, bytes] = {"package.json": (source / "package.json").read_bytes()}
    for entry in manifest.get("files") or []:
        path = source / str(entry).rstrip("/")
        found = sorted(path.rglob("*")) if path.is_dir() else [path] if path.is_file() else []
        for item in found:
            if item.is_file() and (item.suffix in _SHIPPED_SUFFIXES or item.name in _SHIPPED_NAMES):
                out[item.relative_to(source).as_posix()] = item.read_bytes()
    if "openclaw.plugin.json" not in out:
        raise SetupError(f"{source} is not an OpenClaw plugin (no openclaw.plugin.json)")
    return out


def installed_dir(home: Path) -> Path:
    return home / "extensions" / PLUGIN_ID


def same_as_installed(home: Path, wanted: dict[str, bytes]) -> bool:
    """Whether OpenClaw's installed copy holds exactly these files (its own extras, such as
    node_modules and the lock file it writes, aside)."""
    root = installed_dir(home)
    for rel, data in wanted.items():
        try:
            if (root / rel).read_bytes() != data:
                return False
        except OSError:
            return False
    return True


def stage(wanted: dict[str, bytes], into: Path) -> Path:
    """The files written into a fresh folder ``into/memoryd``: what ``plugins install``
    copies (nothing of a checkout's tests or node_modules)."""
    folder = into / PLUGIN_ID
    for rel, data in wanted.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder


def run(command: list[str], env: dict[str, str]) -> str:
    """Run an openclaw command; its stdout, or SetupError with the last lines it said."""
    try:
        done = subprocess.run(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{' '.join(command)}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise SetupError(f"{' '.join(command)} failed ({done.returncode}): " + " / ".join(tail))
    return done.stdout


def check_loaded(openclaw: str, env: dict[str, str]) -> list[str]:
    """Ask OpenClaw to load the plugin; its warnings, or SetupError saying why it failed."""
    out = run([openclaw, "plugins", "inspect", PLUGIN_ID, "--runtime", "--json"], env)
    return loaded_report(out)


def loaded_report(out: str) -> list[str]:
    """Read ``plugins inspect --runtime --json``: the plugin must be loaded with its
    memory_search tool and no error; its warnings are returned."""
    try:
        report: Any = json.loads(out[out.index("{") :])
    except ValueError:
        raise SetupError(f"openclaw plugins inspect answered no JSON: {out[-300:]!r}") from None
    plugin = report.get("plugin") if isinstance(report, dict) else None
    if not isinstance(plugin, dict):
        raise SetupError("openclaw plugins inspect does not know the memoryd plugin")
    mine = [
        d
        for d in report.get("diagnostics") or []
        if isinstance(d, dict) and d.get("pluginId") in (PLUGIN_ID, None)
    ]
    errors = [str(d.get("message")) for d in mine if d.get("level") == "error"]
    if plugin.get("status") != "loaded" or errors:
        why = plugin.get("error") or "; ".join(errors) or f"status {plugin.get('status')}"
        raise SetupError(f"OpenClaw cannot load the memoryd plugin: {why}")
    if "memory_search" not in (plugin.get("toolNames") or []):
        raise SetupError("OpenClaw loaded the memoryd plugin but it registered no memory_search")
    return [str(d.get("message")) for d in mine if d.get("level") == "warn"]


@dataclass
class Snapshot:
    """openclaw.json and the installed plugin folder as they were before setup."""

    config: Path
    config_text: str | None  # None: there was no file
    plugin: Path
    backup: Path | None  # a copy of the plugin folder; None: there was none
    scratch: Path

    @classmethod
    def take(cls, config: Path, home: Path) -> Snapshot:
        scratch = Path(tempfile.mkdtemp(prefix="memctl-openclaw-"))
        try:
            text: str | None = config.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = None
        plugin = installed_dir(home)
        backup = None
        if plugin.is_dir():
            backup = scratch / "previous"
            shutil.copytree(plugin, backup, symlinks=True)
        return cls(config, text, plugin, backup, scratch)

    def restore(self, openclaw: str | None, env: dict[str, str]) -> list[str]:
        """Put both back; what could not be restored, said plainly."""
        problems = []
        if self.backup is None and self.plugin.exists() and openclaw is not None:
            try:  # OpenClaw also forgets the install it recorded
                run([openclaw, "plugins", "uninstall", PLUGIN_ID, "--force"], env)
            except SetupError as exc:
                problems.append(str(exc))
        try:
            if self.plugin.exists() or self.plugin.is_symlink():
                shutil.rmtree(self.plugin)
            if self.backup is not None:
                shutil.copytree(self.backup, self.plugin, symlinks=True)
        except OSError as exc:
            problems.append(f"the plugin folder {self.plugin}: {exc}")
        try:
            if self.config_text is None:
                self.config.unlink(missing_ok=True)
            else:
                self.config.write_text(self.config_text, encoding="utf-8")
        except OSError as exc:
            problems.append(f"{self.config}: {exc}")
        return problems

    def discard(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)
