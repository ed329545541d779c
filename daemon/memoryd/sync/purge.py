"""A purge on a synced workspace: memoryd's history rewritten without the lines, force-pushed.

``forget --purge`` means no copy is left. On a synced workspace copies are also in the
sync repository's history, on the remote, and on the other hosts. memoryd rewrites what it
owns and says what it cannot reach:

1. the remote's new commits are merged first (nothing another host pushed is lost), with
   the purged lines kept out;
2. every commit of memoryd's branch is rewritten (``git fast-export`` piped through a filter
   into ``git fast-import``): each file version loses the lines whose key was purged,
   wherever and whenever they were (the ledger holds keys, not text: its forget records
   stay, so the other hosts remove the lines too);
3. the rewritten branch is force-pushed with a lease (``--force-with-lease`` on the remote
   tip just merged: a host that pushed meanwhile is merged and the rewrite done again);
4. the old history is dropped here (reflog expired, unreachable objects pruned).

An unreachable remote leaves the rewrite done here and the force-push pending
(``purge-pending.json`` in the repository, shown by ``sync status``): every sync tries it
again until it is done, keeping the purged lines out of whatever it merges. The other
hosts notice at their next sync that the remote's history no longer holds what they last
saw: they rebuild on it, drop their old history, and their tombstones remove the lines from
their files (no pre-image kept: a purge). What no daemon can reach is said in the answer:
clones and forks made by hand, the forge's own caches, backups and reflogs.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from memoryd.sync.git import GitError
from memoryd.sync.repo import SEEN_REF, Repo
from memoryd.sync.text import as_bytes, as_text
from memoryd.sync.tombstones import drop_lines

__all__ = ["PENDING", "Pending", "rewrite_without"]

PENDING: Final = "purge-pending.json"
PURGED_REF: Final = "refs/memoryd/purged"
UNREACHABLE: Final = (
    "copies no daemon can reach: clones or forks made by hand, the forge's caches and "
    "backups, and the remote's own reflog or unreachable objects until it collects them"
)


@dataclass
class Pending:
    """A purge whose force-push has not reached the remote yet."""

    keys: set[str] = field(default_factory=set)
    since: float = 0.0
    paths: set[str] = field(default_factory=set)  # whole files purged (a transcript)

    @classmethod
    def read(cls, git_dir: Path) -> Pending | None:
        try:
            raw = json.loads((git_dir / PENDING).read_text())
        except (OSError, ValueError):
            return None
        keys = raw.get("keys") if isinstance(raw, dict) else None
        if not isinstance(keys, list):
            return None
        paths = raw.get("paths")
        return cls(
            {k for k in keys if isinstance(k, str)},
            float(raw.get("since") or 0),
            {p for p in paths if isinstance(p, str)} if isinstance(paths, list) else set(),
        )

    def write(self, git_dir: Path) -> None:
        tmp = git_dir / (PENDING + ".tmp")
        body = {"keys": sorted(self.keys), "since": self.since, "paths": sorted(self.paths)}
        tmp.write_text(json.dumps(body))
        os.replace(tmp, git_dir / PENDING)

    @staticmethod
    def clear(git_dir: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            (git_dir / PENDING).unlink()


def _filter(data: bytes, keys: set[str]) -> bytes:
    text = as_text(data)
    lines, removed = drop_lines(text.lines, keys)
    return as_bytes(lines, text.newline_at_end) if removed else data


def _read_data(src: IO[bytes], header: bytes) -> bytes:
    size = int(header.split(b" ", 1)[1])
    data = src.read(size)
    if len(data) != size:
        raise GitError("git fast-export ended early")
    return data


def _records(src: IO[bytes]) -> Iterator[tuple[bytes, bytes | None]]:
    """(line, data after it) for each line of a fast-export stream."""
    while True:
        line = src.readline()
        if not line:
            return
        if line.startswith(b"data "):
            yield line, _read_data(src, line.rstrip(b"\n"))
        else:
            yield line, None


def rewrite_without(repo: Repo, keys: set[str], paths: set[str] | None = None) -> tuple[str, int]:
    """memoryd's branch rewritten into ``PURGED_REF`` with no line whose key is in
    ``keys``, in any version of any file, and none of ``paths`` (whole files purged) in
    any commit; (the new tip, how many file versions changed)."""
    gone = {p.encode("utf-8", "surrogateescape") for p in paths or ()}
    gone |= {json.dumps(p).encode() for p in paths or ()}  # as fast-export quotes one
    git = repo.git
    env = git.environment()
    export = subprocess.Popen(
        git.command(
            "fast-export",
            "--reencode=yes",
            "--signed-tags=strip",
            "--tag-of-filtered-object=drop",
            repo.ref,
        ),
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    target = PURGED_REF.encode()
    changed = 0
    imported = subprocess.Popen(
        git.command("fast-import", "--force", "--quiet"),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert export.stdout is not None and imported.stdin is not None
    in_blob = False  # the data that follows is a file version's (not a commit message)
    try:
        for line, data in _records(export.stdout):
            if line == b"blob\n":
                in_blob = True
            elif line.startswith((b"commit ", b"reset ", b"tag ")):
                in_blob = False
                if not line.startswith(b"tag "):
                    line = line.split(b" ", 1)[0] + b" " + target + b"\n"
            if data is None:
                if not (gone and line.startswith(b"M ") and _path_of(line) in gone):
                    imported.stdin.write(line)
                continue
            if in_blob:
                new = _filter(data, keys)
                changed += new != data
                data, in_blob = new, False
            imported.stdin.write(b"data %d\n" % len(data) + data)
    finally:
        imported.stdin.close()
        export.stdout.close()
        export.wait()
        err = b""
        if imported.stderr is not None:
            err = imported.stderr.read()
            imported.stderr.close()
        imported.wait()
    if export.returncode or imported.returncode:
        detail = err.decode("utf-8", "replace").strip()[:300]
        raise GitError(f"rewriting the sync history failed: {detail or 'fast-export failed'}")
    tip = repo.resolve(PURGED_REF)
    if tip is None:
        raise GitError("rewriting the sync history left no branch")
    return tip, changed


def _path_of(modify: bytes) -> bytes:
    """The path of a fast-export ``M mode dataref path`` line."""
    return modify.rstrip(b"\n").split(b" ", 3)[3]


def drop_old_history(repo: Repo) -> None:
    """What only the old history held goes from this repository's objects."""
    git = repo.git
    git.run("update-ref", "-d", PURGED_REF)
    head = repo.head()
    if head is not None:  # the index's entries hold blobs too: of the new tip only
        git.run("read-tree", "--reset", head)
    git.run("reflog", "expire", "--expire=now", "--all")
    git.run("gc", "-q", "--prune=now")


def describe(remote: str) -> dict[str, Any]:
    """What a purge on this synced workspace will do (the dry run says it first)."""
    return {
        "remote": remote,
        "history": "rewritten without these lines, then force-pushed to the remote",
        "other_hosts": "remove the lines at their next sync and drop their old history",
        "unreachable": UNREACHABLE,
    }


def mark_seen(repo: Repo, tip: str) -> None:
    """After a force-push: what we saw of the remote is the rewritten tip."""
    for ref in (SEEN_REF, repo.tracking):
        repo.git.run("update-ref", ref, tip)
