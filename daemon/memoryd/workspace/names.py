"""A workspace's name and its index file, and the config's workspaces checked.

Names are unique (default: the folder name, then ``name-2``...: the registry steps around
the taken ones). Each workspace has one index file, ``{name}-{sha1(realpath)[:10]}.sqlite``
in the daemon's index folder.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from memoryd.errors import ConfigError
from memoryd.runtime.config import Config

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def index_file(index_dir: Path, name: str, root: Path) -> Path:
    digest = hashlib.sha1(str(root).encode("utf-8")).hexdigest()[:10]
    return index_dir / f"{name}-{digest}.sqlite"


def default_name(root: Path) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.") or "workspace"
    return base[:64]


def config_entries(config: Config) -> list[tuple[Path, str]]:
    """The config's workspaces as (resolved root, name or ""); ConfigError when invalid."""
    out: list[tuple[Path, str]] = []
    for i, wc in enumerate(config.workspaces):
        given = Path(wc.path).expanduser()
        if not given.is_absolute():  # relative to what? the daemon's cwd is not the user's
            raise ConfigError(
                f"workspaces[{i}].path {wc.path!r} must be absolute (or start with ~/)"
            )
        root = given.resolve()
        if root == root.parent:
            raise ConfigError(
                f"workspaces[{i}].path {wc.path!r} is the file system's root: a workspace is "
                "a folder of its own (its memory/ and MEMORY.md), not the whole disk"
            )
        if any(r == root for r, _ in out):
            raise ConfigError(f"workspaces[{i}].path {wc.path} is declared twice")
        nested = next((r for r, _ in out if root.is_relative_to(r) or r.is_relative_to(root)), None)
        if nested is not None:  # the same rule as workspace.add
            raise ConfigError(
                f"workspaces[{i}].path {wc.path} is inside or around {nested}, "
                "another workspace: workspaces may not nest"
            )
        if wc.name and not NAME.match(wc.name):
            raise ConfigError(
                f"workspaces[{i}].name {wc.name!r} must be letters, digits, "
                "'.', '_' or '-' (at most 64)"
            )
        if wc.name and any(n == wc.name for _, n in out):
            raise ConfigError(f"workspaces[{i}].name {wc.name!r} is used twice")
        out.append((root, wc.name))
    return out
