"""The project a working directory belongs to, as memoryd's ``project`` key.

The key is the repository's ``origin`` remote, normalised to ``host/owner/repo``
(``git@github.com:Acme/App.git`` and ``https://github.com/acme/app`` are both
``github.com/acme/app``), so clones and worktrees of one repository share it; a repository
without an origin is keyed by its root's path. Read from ``.git/config`` (a worktree's
``.git`` file leads to the shared config), never by running git: hooks ask on every prompt.
Cached per directory for the process (the MCP server asks for each call).
"""

from __future__ import annotations

import functools
import os
import re

__all__ = ["normalize_remote", "project_key"]

_SCP = r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$"  # git@host:owner/repo
_URL = r"^[a-z][a-z0-9+.-]*://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.*)$"
MAX_DEPTH = 64


def normalize_remote(url: str) -> str | None:
    """``host/owner/repo`` of a git remote URL (lower-cased, no user, port, ``.git``)."""
    url = url.strip()
    # re compiles (and caches) the patterns here, not at import: outside a repository the
    # hook never needs them
    m = re.match(_URL, url, re.I) or re.match(_SCP, url)
    if m is None:
        return None
    path = m.group("path").strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.strip("/")
    if not path:
        return None
    return f"{m.group('host').lower()}/{path}".casefold()


# Paths as strings (os.path), not pathlib: the hook asks before every prompt.


def _first_line(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().strip()
    except OSError:
        return None


def _git_dir(root: str) -> str | None:
    """The git folder of a repository whose top is ``root``: ``.git``, or the folder a
    worktree's (or submodule's) ``.git`` file names."""
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot):
        return dot
    first = _first_line(dot)
    if not first or not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:") :].strip()
    return target if os.path.isabs(target) else os.path.realpath(os.path.join(root, target))


def _common_dir(git_dir: str) -> str:
    """Where the config lives: a worktree's git folder names the shared one in ``commondir``."""
    common = _first_line(os.path.join(git_dir, "commondir"))
    if common is None:
        return git_dir
    return common if os.path.isabs(common) else os.path.realpath(os.path.join(git_dir, common))


def _origin(config: str) -> str | None:
    import configparser  # only inside a repository

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
    path = directory
    for _ in range(MAX_DEPTH):
        if os.path.exists(os.path.join(path, ".git")):
            git_dir = _git_dir(path)
            if git_dir is None:
                return path
            return _origin(os.path.join(_common_dir(git_dir), "config")) or path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
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
