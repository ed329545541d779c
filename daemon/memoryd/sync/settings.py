"""Which workspaces sync where: the config's ``[[workspaces]] sync_remote``, or what
``memctl sync enable`` saved in the state folder; and each one's sync folder.

``<state>/sync/<key>/`` holds ``settings.json`` (remote, branch, which repository; written
by ``sync enable``, removed by ``sync disable``), ``status.json`` (the last sync's outcome)
and ``repo.git`` (memoryd's own repository). The key is a hash of the workspace's resolved
path: renaming a workspace keeps its sync.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from memoryd.errors import InvalidParams
from memoryd.files.fsutil import atomic_write
from memoryd.runtime.config import Config, WorkspaceConfig
from memoryd.sync.paths import Scope

__all__ = ["Settings", "check_remote", "default_host", "folder_of", "load", "remove", "save"]

SETTINGS: Final = "settings.json"
REPOS: Final = ("memoryd", "workspace")
_SCHEMES: Final = ("file", "ssh", "https", "http", "git")


@dataclass(frozen=True)
class Settings:
    remote: str
    branch: str = "main"
    repo: str = "memoryd"  # memoryd's own repository, or "workspace": the workspace's
    from_config: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_host(config: Config) -> str:
    return config.sync.host or socket.gethostname().split(".")[0] or "memoryd"


def scope_of(config: Config) -> Scope:
    return Scope(config.sync.transcripts, config.sync.transcript_max_bytes)


def folder_of(state_dir: Path, root: Path) -> Path:
    key = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
    return state_dir / "sync" / key


def check_remote(url: str) -> str:
    """``url`` if memoryd may sync to it: file://, ssh (scp-like too), http(s), git; never
    with a password in it (credentials are git's own: its credential helpers, ssh agent)."""
    url = url.strip()
    if not url or any(c in url for c in "\n\r\0") or url.startswith("-"):
        raise InvalidParams("remote must be a git URL", {"param": "remote"})
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in _SCHEMES:
            raise InvalidParams(
                f"remote: {parts.scheme}:// is not one of {', '.join(_SCHEMES)}",
                {"param": "remote"},
            )
        if parts.password:
            raise InvalidParams(
                "remote must not hold a password: memoryd never stores credentials; "
                "use git's credential helper or an ssh key (docs/sync.md)",
                {"param": "remote"},
            )
        return url
    if ":" in url.split("/")[0]:  # user@host:path
        return url
    if url.startswith("/"):
        return url
    raise InvalidParams(
        "remote must be a URL (file://, ssh://, https://), user@host:path or an absolute path",
        {"param": "remote"},
    )


def check_branch(name: str) -> str:
    bad = (" ", "~", "^", ":", "?", "*", "[", "\\", "..", "@{")
    if not name or name.startswith(("-", "/")) or name.endswith((".lock", "/")):
        raise InvalidParams(f"branch {name!r} is not a valid branch name", {"param": "branch"})
    if any(b in name for b in bad) or not name.isprintable():
        raise InvalidParams(f"branch {name!r} is not a valid branch name", {"param": "branch"})
    return name


def _configured(config: Config, root: Path) -> WorkspaceConfig | None:
    for w in config.workspaces:
        if w.sync_remote and Path(os.path.expanduser(w.path)).resolve() == root:
            return w
    return None


def load(state_dir: Path, config: Config, root: Path) -> Settings | None:
    """The workspace's sync settings, or None when it does not sync."""
    declared = _configured(config, root)
    if declared is not None:
        return Settings(declared.sync_remote, declared.sync_branch, declared.sync_repo, True)
    try:
        raw = json.loads((folder_of(state_dir, root) / SETTINGS).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("remote"), str):
        return None
    repo = raw.get("repo")
    return Settings(
        raw["remote"],
        str(raw.get("branch") or "main"),
        repo if repo in REPOS else "memoryd",
    )


def save(state_dir: Path, root: Path, settings: Settings) -> None:
    folder = folder_of(state_dir, root)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = {**settings.to_dict(), "root": str(root)}
    body.pop("from_config")
    atomic_write(folder / SETTINGS, json.dumps(body, indent=1).encode())


def remove(state_dir: Path, root: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (folder_of(state_dir, root) / SETTINGS).unlink()
