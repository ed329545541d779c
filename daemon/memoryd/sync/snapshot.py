"""The commit step: the workspace's synced files as they are now, into the sync repository.

The repository's own index is the stat cache: ``update-index`` re-reads only files whose
size or times changed, so a commit with nothing new costs a walk of the memory folders and
one small git call. A file that holds a hand-written secret (memoryd/secrets.py: appends
are redacted on the way in, but a person may paste one by hand) is not committed: its last
committed version stays in the tree, so it is never pushed, and ``status`` names it
(``held``) until the secret is gone from the file.

Paths the tree holds that are not synced (a forge's README on the remote's branch) are
left as they are: memoryd only ever adds, changes or removes synced paths.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.errors import MemorydError
from memoryd.files.beneath import open_beneath
from memoryd.files.layout import display_name
from memoryd.secrets import redact
from memoryd.sync.paths import Scope
from memoryd.sync.repo import Entry, Repo

__all__ = ["Held", "Snapshot", "commit_workspace", "seen_after_write"]


@dataclass(frozen=True)
class Held:
    path: str
    kinds: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"path": display_name(self.path), "kinds": sorted(set(self.kinds))}


Stamp = tuple[int, int, int, int]  # (size, mtime_ns, ctime_ns, inode)
UNKNOWN: Final[Stamp] = (-1, -1, -1, -1)  # no file's: the next commit step runs git


@dataclass
class Snapshot:
    head: str | None  # the branch after the step
    commit: str | None = None  # the new commit, None when nothing changed
    changed: list[str] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    seen: dict[str, Stamp] = field(default_factory=dict)  # the files as this step saw them
    skipped: bool = False  # nothing moved since the last step: git was not run


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def stamps(root: Path, scope: Scope) -> dict[str, Stamp]:
    return {rel: _stamp(st) for rel, st in scope.stats(root)}


def seen_after_write(
    root: Path, seen: Mapping[str, Stamp], written: Mapping[str, bytes | None], held: set[str]
) -> dict[str, Stamp]:
    """The stamps a commit step saw (``seen``), updated after a merge wrote the workspace:
    a file takes its new stamp only if it holds exactly the merged commit's bytes
    (``written``; read between two equal stats), so a write by anyone else, before or
    after ours, still makes the next step run git and commit it."""
    out = dict(seen)
    for rel, data in written.items():
        if data is None and not os.path.lexists(root / rel):
            out.pop(rel, None)
        elif data is None or rel in held:
            out[rel] = UNKNOWN
        else:
            out[rel] = _stamp_if(root, rel, data)
    return out


def _stamp_if(root: Path, rel: str, expected: bytes) -> Stamp:
    try:
        before = os.lstat(root / rel)
        if not stat.S_ISREG(before.st_mode) or before.st_size != len(expected):
            return UNKNOWN
        opened = open_beneath(root, rel, os.O_RDONLY | os.O_CLOEXEC)
        with os.fdopen(opened.fd, "rb") as f:
            data = f.read()
        after = os.lstat(root / rel)
    except (OSError, MemorydError):
        return UNKNOWN
    same = _stamp(before) == _stamp(after) and data == expected
    return _stamp(after) if same else UNKNOWN


def _nul(items: list[str]) -> bytes:
    return "".join(p + "\0" for p in items).encode("utf-8", "surrogateescape")


def commit_workspace(
    repo: Repo,
    root: Path,
    scope: Scope,
    message: str,
    before: tuple[str | None, dict[str, Stamp]] | None = None,
) -> Snapshot:
    """``before``: (the branch, the files' stamps) the last step saw: when neither moved,
    nothing changed and git is not run at all (a sync with nothing to do costs a walk)."""
    git = repo.git
    now = stamps(root, scope)
    head = repo.head()
    if before is not None and before == (head, now):
        return Snapshot(head, seen=now, skipped=True)
    # The index follows the branch (a merge moves the branch, not the index); "-m" keeps
    # the stat data of entries that did not change, so nothing is hashed again for them.
    if head:
        git.run("read-tree", "--reset", head)
    else:
        git.run("read-tree", "--empty")
    on_disk = list(now)
    listed = git.run("ls-files", "-z").stdout.decode("utf-8", "surrogateescape").split("\0")
    present = set(on_disk)
    gone = [p for p in listed if p and scope.synced(p) and p not in present]
    if on_disk:
        git.run("update-index", "--add", "-z", "--stdin", input=_nul(on_disk))
    if gone:
        git.run("update-index", "--force-remove", "-z", "--stdin", input=_nul(gone))
    changes = _staged(repo, head)
    if not changes:
        return Snapshot(head, seen=now)
    held = _secrets(repo, changes)
    if held:
        _unstage(repo, head, [h.path for h in held])
    tree = git.out("write-tree")
    if head is not None and tree == git.out("rev-parse", f"{head}^{{tree}}"):
        return Snapshot(head, held=held, seen=now)
    commit = repo.commit_tree(tree, [head] if head else [], message)
    repo.set_ref(repo.ref, commit, head, "memoryd: commit")
    kept = {h.path for h in held}
    return Snapshot(commit, commit, sorted(p for p in changes if p not in kept), held, now)


def _staged(repo: Repo, head: str | None) -> dict[str, str | None]:
    """What the index changes against ``head``: path -> new blob id (None: removed)."""
    if head is None:
        raw = repo.git.run("ls-files", "-s", "-z").stdout
        out: dict[str, str | None] = {}
        for item in raw.split(b"\0"):
            if item:
                meta, _, path = item.partition(b"\t")
                out[path.decode("utf-8", "surrogateescape")] = meta.decode().split(" ")[1]
        return out
    raw = repo.git.run("diff-index", "--cached", "-z", "--no-renames", head).stdout
    parts = raw.split(b"\0")
    changed: dict[str, str | None] = {}
    for i in range(0, len(parts) - 1, 2):
        info = parts[i].decode().lstrip(":").split(" ")
        changed[parts[i + 1].decode("utf-8", "surrogateescape")] = (
            None if info[4] == "D" else info[3]
        )
    return changed


def _secrets(repo: Repo, changes: dict[str, str | None]) -> list[Held]:
    oids = {p: o for p, o in changes.items() if o is not None}
    data = repo.blobs(oids.values())
    held = []
    for path, oid in sorted(oids.items()):
        kinds = redact(data[oid].decode("utf-8", "replace")).kinds
        if kinds:
            held.append(Held(path, kinds))
    return held


def _unstage(repo: Repo, head: str | None, paths: list[str]) -> None:
    """Put the committed version of ``paths`` back in the index (or none, if new)."""
    before = repo.tree_of(head)
    restore: dict[str, Entry | None] = {p: before.get(p) for p in paths}
    lines = [
        f"{e.mode} {e.oid}\t{p}" if e is not None else f"0 {'0' * 40}\t{p}"
        for p, e in restore.items()
    ]
    repo.git.run("update-index", "-z", "--index-info", input=_nul(lines))


def uncommitted(repo: Repo, root: Path, scope: Scope, head: str | None) -> list[str]:
    """The synced files that changed since ``head``, our last commit (or are new), as
    status shows them (display_name)."""
    git = repo.git
    if head:
        git.run("read-tree", "--reset", head)
    on_disk = [rel for rel, _ in scope.walk(root)]
    listed = set(git.run("ls-files", "-z").stdout.decode("utf-8", "surrogateescape").split("\0"))
    git.run("update-index", "-q", "--refresh", ok=(0, 1))
    raw = git.run("diff-files", "--name-only", "-z").stdout.decode("utf-8", "surrogateescape")
    changed = {p for p in raw.split("\0") if p and scope.synced(p)}
    changed |= {p for p in on_disk if p not in listed}
    return [display_name(p) for p in sorted(changed)]
