"""The project a working directory belongs to, as memoryd's ``project`` key.

The key is the repository's ``origin`` remote, normalised to ``host/owner/repo``
(``git@github.com:Acme/App.git`` and ``https://github.com/acme/app`` are both
``github.com/acme/app``), so clones and worktrees of one repository share it; a repository
without an origin is keyed by its root's path. Read from ``.git/config`` (a worktree's
``.git`` file leads to the shared config), never by running git: hooks ask on every prompt.
Cached per directory for the process (the MCP server asks for each call).
"""

from __future__ import annotations

import configparser
import functools
import os
import re
from pathlib import Path

__all__ = ["normalize_remote", "project_key"]

_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")  # git@host:owner/repo
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.*)$", re.I)
MAX_DEPTH = 64


def normalize_remote(url: str) -> str | None:
    """``host/owner/repo`` of a git remote URL (lower-cased, no user, port, ``.git``)."""
    url = url.strip()
    m = _URL.match(url) or _SCP.match(url)
    if m is None:
        return None
    path = m.group("path").strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.strip("/")
    if not path:
        return None
    return f"{m.group('host').lower()}/{path}".casefold()


def _git_dir(root: Path) -> Path | None:
    """The git folder of a repository whose top is ``root``: ``.git``, or the folder a
    worktree's (or submodule's) ``.git`` file names."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:
        first = dot.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(first[len("gitdir:") :].strip())
    return target if target.is_absolute() else (root / target).resolve()


def _common_dir(git_dir: Path) -> Path:
    """Where the config lives: a worktree's git folder names the shared one in ``commondir``."""
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    path = Path(common)
    return path if path.is_absolute() else (git_dir / path).resolve()


def _origin(config: Path) -> str | None:
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read(config, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    section = 'remote "origin"'
    if not parser.has_section(section):
        return None
    url = parser.get(section, "url", fallback=None)
    return normalize_remote(url) if url else None


@functools.lru_cache(maxsize=128)
def _key_of(directory: str) -> str | None:
    path = Path(directory)
    for _ in range(MAX_DEPTH):
        if (path / ".git").exists():
            git_dir = _git_dir(path)
            if git_dir is None:
                return str(path)
            return _origin(_common_dir(git_dir) / "config") or str(path)
        if path.parent == path:
            return None
        path = path.parent
    return None


def project_key(cwd: str | os.PathLike[str] | None) -> str | None:
    """The project key of ``cwd`` (None: not in a repository, or no cwd)."""
    if not cwd:
        return None
    try:
        directory = os.path.realpath(cwd)
    except (OSError, ValueError):
        return None
    return _key_of(directory)
