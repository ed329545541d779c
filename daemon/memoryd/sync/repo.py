"""memoryd's sync repository: made, configured, read and written through git's plumbing.

By default the repository is memoryd's own, under the state folder, with the workspace as
its work tree: a workspace that is already the person's repository never gets memoryd's
commits in its history. Reading and writing go through object ids (``ls-tree``,
``cat-file``, ``hash-object``, ``mktree`` by a private index, ``commit-tree``,
``update-ref`` with the old value): git never writes into the workspace itself, so a merge
reaches the memory files only through the journal (apply.py), under the file locks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memoryd.sync.git import Git, GitError

__all__ = ["REMOTE", "Entry", "Repo"]

REMOTE: Final = "origin"
SEEN_REF: Final = "refs/memoryd/remote-seen"  # the remote tip last merged or pushed
EMPTY_TREE: Final = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
MADE: Final = "memoryd-made"  # written last when memoryd made its repository (ensure)
PRIVATE_INDEX: Final = "memoryd-index-"  # + the daemon's pid: write_tree's own index
_LOCKS: Final = ("index.lock", "HEAD.lock", "config.lock", "packed-refs.lock", "shallow.lock")


@dataclass(frozen=True)
class Entry:
    mode: str
    oid: str


class Repo:
    def __init__(self, git: Git, branch: str, remote: str = REMOTE) -> None:
        self.git = git
        self.branch = branch
        self.remote = remote

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def tracking(self) -> str:
        return f"refs/remotes/{self.remote}/{self.branch}"

    # -- set-up ------------------------------------------------------------------------

    def ensure(self, remote: str, own: bool = True) -> None:
        """Make the repository unless it was made whole (memoryd's ``own``), and point it
        at ``remote``. A person's repository keeps its HEAD: memoryd only writes its branch.

        Made whole means its last step, the ``MADE`` file, was written: a daemon killed
        while ``git init`` ran leaves a HEAD but no ``objects/`` (git writes HEAD first),
        which git does not call a repository; the next start makes it again (``git init``
        of an existing repository keeps what it holds and adds what is missing)."""
        gd = self.git.git_dir
        if own and not (gd / MADE).exists():
            gd.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            bare = Git(gd, None, self.git.identity, self.git.base_env)
            bare.run("init", "-q", "--bare", str(gd), cwd=gd.parent)
            self.git.run("config", "core.bare", "false")
            if self.git.work_tree is not None:  # `git --git-dir=... log` works by hand
                self.git.run("config", "core.worktree", str(self.git.work_tree))
            self.git.run("config", "core.logAllRefUpdates", "true")
            (gd / MADE).write_bytes(b"")
        if own:
            self.git.run("symbolic-ref", "HEAD", self.ref)
        self.set_remote(remote)

    def set_remote(self, url: str) -> None:
        """Point the remote at ``url``; another remote than before forgets what was seen
        of the old one (its tip is no ancestor of the new one's: not a rewrite)."""
        name = self.remote
        current = self.git.run("config", "--get", f"remote.{name}.url", ok=(0, 1))
        if current.returncode == 1:
            self.git.run("remote", "add", name, url)
        elif current.stdout.decode().strip() != url:
            self.git.run("remote", "set-url", name, url)
            for ref in (SEEN_REF, self.tracking):
                self.git.run("update-ref", "-d", ref)
        self.git.run(
            "config", "--replace-all", f"remote.{name}.fetch", f"+{self.ref}:{self.tracking}"
        )

    def clear_stale_locks(self) -> list[str]:
        """Lock files a killed git left (its children die with the daemon: git.py), and the
        private index (and its lock) of ``write_tree`` in a daemon that was killed: one whose
        process is gone, or that bore this daemon's pid. Called at start, before this daemon
        runs any git in the repository."""
        gone = []
        gd = self.git.git_dir
        for name in (*_LOCKS, *_stale_private_indexes(gd)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(gd / name)
                gone.append(name)
        for base in ("refs",):
            for dirpath, _dirs, files in os.walk(gd / base):
                for f in files:
                    if f.endswith(".lock"):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(os.path.join(dirpath, f))
                            gone.append(f)
        return gone

    # -- refs --------------------------------------------------------------------------

    def resolve(self, ref: str) -> str | None:
        proc = self.git.run("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", ok=(0, 1))
        out = proc.stdout.decode().strip()
        return out or None

    def head(self) -> str | None:
        return self.resolve(self.ref)

    def tips(self) -> tuple[str | None, str | None, str | None]:
        """(our branch, the remote's as last fetched, the remote tip last seen), read in
        one git call (every spawn counts in a sync with nothing to do)."""
        wanted = (self.ref, self.tracking, SEEN_REF)
        out = self.git.out("for-each-ref", "--format=%(objectname) %(refname)", *wanted)
        found: dict[str, str] = {}
        for line in out.splitlines():
            oid, _, ref = line.partition(" ")
            found[ref] = oid
        head, tracking, seen = (found.get(r) for r in wanted)
        return head, tracking, seen

    def point(self, refs: dict[str, str], why: str) -> None:
        """Move several refs at once (no old value checked: after a push, what we know)."""
        lines = "".join(f"update {ref} {oid}\n" for ref, oid in refs.items())
        self.git.run("update-ref", "-m", why, "--stdin", input=lines.encode())

    def set_ref(self, ref: str, new: str, old: str | None, why: str) -> None:
        """Move ``ref`` to ``new`` if it still is ``old`` (None: it must not exist)."""
        self.move([(ref, new, old)], why)

    def move(self, moves: list[tuple[str, str, str | None]], why: str) -> None:
        """Move each (ref, new, old) as ``set_ref`` does, all or none, in one git call."""
        lines = "".join(f"update {ref} {new} {old or '0' * 40}\n" for ref, new, old in moves)
        self.git.run("update-ref", "-m", why, "--stdin", input=lines.encode())

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.git.run("merge-base", "--is-ancestor", a, b, ok=(0, 1)).returncode == 0

    def merge_base(self, a: str, b: str) -> str | None:
        proc = self.git.run("merge-base", a, b, ok=(0, 1))
        return proc.stdout.decode().strip() or None

    def count(self, spec: str) -> int:
        return int(self.git.out("rev-list", "--count", spec) or 0)

    def commits(self, *commits: str) -> dict[str, tuple[float, str]]:
        """Each commit's (commit time, author name), read in one git call."""
        out: dict[str, tuple[float, str]] = {}
        for line in self.git.out("show", "-s", "--format=%H %ct %an", *commits).splitlines():
            oid, ct, name = [*line.split(" ", 2), "", ""][:3]
            out[oid] = (float(ct or 0), name)
        return out

    # -- trees and blobs ---------------------------------------------------------------

    def tree_of(self, commit: str | None) -> dict[str, Entry]:
        """Every file of ``commit``'s tree: path -> (mode, blob id)."""
        if commit is None:
            return {}
        raw = self.git.run("ls-tree", "-r", "-z", "--full-tree", commit).stdout
        out: dict[str, Entry] = {}
        for item in raw.split(b"\0"):
            if not item:
                continue
            meta, _, path = item.partition(b"\t")
            mode, _kind, oid = meta.decode().split(" ")
            out[path.decode("utf-8", "surrogateescape")] = Entry(mode, oid)
        return out

    def blobs(self, oids: Iterable[str]) -> dict[str, bytes]:
        """The contents of blobs, read in one ``cat-file --batch``."""
        wanted = list(dict.fromkeys(oids))
        if not wanted:
            return {}
        data = self.git.run("cat-file", "--batch", input="".join(o + "\n" for o in wanted).encode())
        out: dict[str, bytes] = {}
        buf, at = data.stdout, 0
        for oid in wanted:
            nl = buf.index(b"\n", at)
            header = buf[at:nl].decode().split(" ")
            if len(header) < 3:  # "<oid> missing"
                raise GitError(f"blob {oid} is missing from the sync repository")
            size = int(header[2])
            out[oid] = buf[nl + 1 : nl + 1 + size]
            at = nl + 1 + size + 1
        return out

    def write_blob(self, data: bytes) -> str:
        return self.git.out("hash-object", "-w", "-t", "blob", "--stdin", input=data)

    def write_tree(self, base: str | None, changes: Mapping[str, Entry | None]) -> str:
        """``base``'s tree with ``changes`` (path -> entry, or None to remove), written."""
        index = self.git.git_dir / f"{PRIVATE_INDEX}{os.getpid()}"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            if base is not None:
                self.git.run("read-tree", base, env=env)
            else:
                self.git.run("read-tree", "--empty", env=env)
            lines = []
            for path, entry in changes.items():
                if entry is None:
                    lines.append(f"0 {'0' * 40}\t{path}")
                else:
                    lines.append(f"{entry.mode} {entry.oid}\t{path}")
            if lines:
                payload = "".join(x + "\0" for x in lines).encode("utf-8", "surrogateescape")
                self.git.run("update-index", "-z", "--index-info", input=payload, env=env)
            return self.git.out("write-tree", env=env)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(index)

    def commit_tree(self, tree: str, parents: list[str], message: str) -> str:
        args = ["commit-tree", tree]
        for p in parents:
            args += ["-p", p]
        return self.git.out(*args, "-m", message)


def _stale_private_indexes(git_dir: Path) -> list[str]:
    """``write_tree``'s private indexes (and git's locks of them) left by a daemon that is
    gone; this daemon's pid counts as gone (it has written none yet: a pid used again)."""
    try:
        names = [n for n in os.listdir(git_dir) if n.startswith(PRIVATE_INDEX)]
    except OSError:
        return []
    out = []
    for name in names:
        pid = name[len(PRIVATE_INDEX) :].removesuffix(".lock")
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            out.append(name)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
