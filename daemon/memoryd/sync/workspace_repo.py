"""Which repository a workspace syncs through, made ready: memoryd's own (the default), or
the workspace's own when the person chose it (``--repo workspace``, ``sync_repo``).

memoryd's own: ``<sync folder>/repo.git``, the workspace as its work tree, its own index.
A workspace that is a person's repository never gets memoryd's commits in its history.

The workspace's own: the workspace must be its repository's top folder. memoryd commits
the memory files (and only them) on the chosen branch, through an index of its own (the
person's staging area is left as it is, except that the memory files' entries follow
memoryd's commits), and refuses to merge a remote that changed anything else: those are
the person's to pull (``git pull``: the merge drivers below merge the memory files by
memoryd's rules).

Either way the repository's own config gets merge drivers (``merge.memoryd-*``) and
``info/attributes`` naming the memory files, so a merge a person runs by hand in it merges
daily notes, MEMORY.md and the ledger as memoryd does (driver.py), never with markers.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

from memoryd.errors import InvalidParams
from memoryd.files.fsutil import atomic_write
from memoryd.files.provenance import LEDGER_REL
from memoryd.runtime.config import Config
from memoryd.sync import settings as saved
from memoryd.sync.apply import LockPaths, SecureWrites
from memoryd.sync.engine import Engine
from memoryd.sync.git import Git, Identity
from memoryd.sync.repo import Repo

__all__ = ["open_engine"]

ATTRIBUTES: Final = (
    "# memoryd: memory files merged by memoryd's rules (docs/sync.md)\n"
    "/MEMORY.md merge=memoryd\n"
    "/memory.md merge=memoryd\n"
    "/USER.md merge=memoryd\n"
    "/memory/**/*.md merge=memoryd\n"
    f"/{LEDGER_REL} merge=memoryd\n"
)


def open_engine(
    folder: Path,
    root: Path,
    settings: saved.Settings,
    config: Config,
    locked: LockPaths,
    clock: Callable[[], float],
    secure: SecureWrites | None = None,
) -> Engine:
    """The engine of one workspace, its repository made and pointed at the remote, the
    lock files of a git killed with the last daemon removed."""
    host = saved.default_host(config)
    identity = Identity(host, f"memoryd@{host}", clock)
    if settings.repo == "workspace":
        git_dir = root / ".git"
        if not git_dir.is_dir():
            raise InvalidParams(
                f"{root} is not a git repository's top folder (no .git folder there): "
                "sync through memoryd's own repository instead (the default)"
            )
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        git = Git(git_dir, root, identity, extra={"GIT_INDEX_FILE": str(folder / "index")})
    else:
        git = Git(folder / "repo.git", root, identity)
    own = settings.repo != "workspace"
    repo = Repo(git, saved.check_branch(settings.branch), "origin" if own else "memoryd")
    repo.clear_stale_locks()
    repo.ensure(saved.check_remote(settings.remote), own=own)
    _merge_drivers(git)
    return Engine(
        root,
        repo,
        saved.scope_of(config),
        host,
        locked,
        clock,
        foreign_refused=settings.repo == "workspace",
        secure=secure,
    )


def _merge_drivers(git: Git) -> None:
    driver = f"{shlex.quote(sys.executable)} -m memoryd.sync.driver %O %A %B %P"
    git.run("config", "merge.memoryd.name", "memoryd: memory files merged by memoryd's rules")
    git.run("config", "merge.memoryd.driver", driver)
    info = git.git_dir / "info"
    info.mkdir(exist_ok=True)
    attrs = info / "attributes"
    current = attrs.read_text() if attrs.exists() else ""
    if ATTRIBUTES not in current:  # whole or not at all: a kill mid-write cuts no line
        sep = "\n" if current and not current.endswith("\n") else ""
        atomic_write(attrs, (current + sep + ATTRIBUTES).encode())
