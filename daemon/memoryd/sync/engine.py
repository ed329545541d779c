"""One sync of one workspace: commit, fetch, merge, write, push; again if the remote moved.

1. commit what the workspace holds now (snapshot.py; files with a secret held back);
2. fetch the remote's branch;
3. if the remote has commits we lack, merge (tree_merge.py), write the result to the
   workspace (apply.py), then move our branch to the merged commit;
4. push; a push refused because another host pushed meanwhile starts again at 2.

A kill at any moment leaves a state the next sync finishes: objects written but not yet
referenced are harmless; the workspace's files are whole or untouched (the journal); a
branch not moved yet means the next commit holds the merged files and merges again with
the same remote commit (identical changes on both sides merge to one); fetch and push are
git's own (refs move atomically). A remote whose history no longer contains what we saw
last was rewritten by a purge elsewhere: we rebuild on it and drop our old history.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.errors import MemorydError
from memoryd.files.layout import display_name
from memoryd.files.provenance import LEDGER_REL
from memoryd.runtime.logs import get_logger
from memoryd.sync.apply import LockPaths, SecureWrites, write_integration
from memoryd.sync.git import GitError
from memoryd.sync.paths import Scope
from memoryd.sync.purge import Pending, drop_old_history, mark_seen, rewrite_without
from memoryd.sync.repo import SEEN_REF, Entry, Repo
from memoryd.sync.snapshot import Held, Snapshot, Stamp, commit_workspace, seen_after_write
from memoryd.sync.tree_merge import FILE_MODE, Hosts, Integration, integrate, today

__all__ = ["Engine", "Refused", "Report"]

log = get_logger("memoryd.sync")
MAX_ROUNDS: Final = 4  # pushes refused because another host pushed meanwhile


class Refused(MemorydError):
    code = "unavailable"


@dataclass
class Report:
    committed: str | None = None
    fetched: bool = False
    pulled: int = 0  # remote commits merged in
    written: list[str] = field(default_factory=list)  # workspace files changed
    notes: dict[str, int] = field(default_factory=dict)
    forgotten: dict[str, int] = field(default_factory=dict)  # lines tombstones removed
    pushed: bool = False
    rewritten: bool = False  # history rewritten (a purge: here, or elsewhere and adopted)
    purged_versions: int = 0  # file versions a purge here rewrote
    held: list[Held] = field(default_factory=list)
    offline: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as answers and status.json hold it: paths as display_name shows them
        (git's names that are not UTF-8 come as surrogate escapes, which cannot be packed)."""
        return {
            "committed": self.committed,
            "fetched": self.fetched,
            "pulled": self.pulled,
            "written": [display_name(p) for p in self.written],
            "conflicts": {display_name(p): n for p, n in self.notes.items()},
            "forgotten": {display_name(p): n for p, n in self.forgotten.items()},
            "pushed": self.pushed,
            "rewritten": self.rewritten,
            "purged_versions": self.purged_versions,
            "held": [h.to_dict() for h in self.held],
            "offline": self.offline,
            "error": self.error,
        }


@dataclass
class Engine:
    root: Path
    repo: Repo
    scope: Scope
    host: str
    locked: LockPaths
    now: Callable[[], float]
    # The workspace's own repository: a remote that changed other files is the person's to
    # pull, and their index follows memoryd's commits for the memory files.
    foreign_refused: bool = False
    # Forgets that travel: the files tombstones (or an adopted purge) take lines out of are
    # held secure on this workspace's index around their write (apply.SecureWrites).
    secure: SecureWrites | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # What the last commit step saw (branch, file stamps) and held: unchanged, it is skipped.
    _seen: tuple[str | None, dict[str, Stamp]] | None = None
    _held: list[Held] = field(default_factory=list)

    def commit(self) -> Snapshot:
        with self.lock:
            return self._commit()

    def _commit(self) -> Snapshot:
        message = f"memoryd: {self.host}"
        snap = commit_workspace(self.repo, self.root, self.scope, message, self._seen)
        if snap.skipped:
            snap.held = self._held  # held back as the last step found
        else:
            self._held = snap.held
        self._seen = (snap.head, snap.seen)
        if snap.commit is not None:
            self._follow(snap.changed)
        return snap

    def _follow(self, paths: list[str]) -> None:
        """In the person's repository, with our branch checked out: their index entries
        of ``paths`` follow the branch (else `git status` shows our commit reversed)."""
        if not self.foreign_refused or not paths:
            return
        git = self.repo.git
        head = git.run("symbolic-ref", "-q", "HEAD", ok=(0, 1)).stdout.decode().strip()
        if head != self.repo.ref:
            return
        index = {"GIT_INDEX_FILE": str(git.git_dir / "index")}
        payload = "".join(p + "\0" for p in paths).encode("utf-8", "surrogateescape")
        try:
            git.run(
                "reset",
                "-q",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                input=payload,
                env=index,
            )
        except GitError as exc:  # their index is busy (a git of theirs): it catches up later
            log.warning("sync_index_not_followed", error=exc.message)

    def sync(self, walk: bool = True) -> Report:
        """Commit, then pull and merge, then push. ``walk`` False: no write was seen since
        the last commit step (the daemon's watcher says so), which is skipped: a sync with
        nothing to do is a fetch and one look at the refs."""
        report = Report(held=self._held)
        with self.lock:
            if walk:
                snap = self._commit()
                report.committed, report.held = snap.commit, snap.held
            pending = Pending.read(self.repo.git.git_dir)
            if pending is not None:  # a purge's force-push has not reached the remote yet
                return self._purge_rounds(pending, report)
            for _ in range(MAX_ROUNDS):
                try:
                    self._fetch()
                except GitError as exc:
                    if exc.offline:
                        report.offline = exc.message
                        return report
                    raise
                report.fetched = True
                target = self._integrate(report)
                if target is None:
                    return report
                if self._push(target, report):
                    return report
            report.error = "the remote kept moving: other hosts pushed during every try"
            return report

    def purge(self, keys: set[str], paths: set[str] | None = None) -> Report:
        """Rewrite memoryd's history without the lines of ``keys`` (and the whole files
        ``paths``) and force-push it (purge.py). Durable first: a kill from here on is
        finished by the next sync."""
        report = Report()
        with self.lock:
            gd = self.repo.git.git_dir
            pending = Pending.read(gd) or Pending(set(), self.now())
            pending.keys |= keys
            pending.paths |= paths or set()
            pending.write(gd)
            snap = self._commit()
            report.committed, report.held = snap.commit, snap.held
            return self._purge_rounds(pending, report)

    def _purge_rounds(self, pending: Pending, report: Report) -> Report:
        repo, keys = self.repo, frozenset(pending.keys)
        for _ in range(MAX_ROUNDS):
            try:
                self._fetch()
                report.fetched = True
            except GitError as exc:
                if not exc.offline:
                    raise
                report.offline = exc.message
            if not report.offline:
                self._integrate(report, purged=keys)
            head = repo.head()
            if head is None:
                Pending.clear(repo.git.git_dir)
                return report
            tip, report.purged_versions = rewrite_without(repo, set(keys), pending.paths)
            theirs = None if report.offline else repo.resolve(repo.tracking)
            if theirs is not None and not self._force_push(tip, theirs, report):
                continue  # another host pushed meanwhile: merged, rewritten again
            repo.set_ref(repo.ref, tip, head, "memoryd: purge")
            if report.offline:  # done here; the remote gets it at a later sync
                for ref in (repo.tracking, SEEN_REF):  # they hold the old history
                    if repo.resolve(ref) is not None:
                        repo.git.run("update-ref", "-d", ref)
            else:
                mark_seen(repo, tip)
                Pending.clear(repo.git.git_dir)
                report.pushed = True
            drop_old_history(repo)
            report.rewritten = True
            return report
        report.error = "the remote kept moving: the purge's force-push is tried again later"
        return report

    def _force_push(self, tip: str, lease: str, report: Report) -> bool:
        """Force-push ``tip`` if the remote still is ``lease``; False when it moved."""
        repo = self.repo
        try:
            repo.git.run(
                "push",
                "-q",
                "--porcelain",
                f"--force-with-lease={repo.ref}:{lease}",
                repo.remote,
                f"{tip}:{repo.ref}",
                network=True,
            )
        except GitError as exc:
            if exc.offline:
                report.offline = exc.message
                return True
            if "stale info" in exc.stderr or "rejected" in exc.stderr:
                return False
            raise
        return True

    def _fetch(self) -> None:
        repo = self.repo
        try:
            repo.git.run("fetch", "-q", "--no-tags", repo.remote, network=True)
        except GitError as exc:
            if "couldn't find remote ref" not in exc.stderr:
                raise
            # The branch is not on the remote (yet): an empty remote, or one emptied.
            if repo.resolve(repo.tracking) is not None:
                repo.git.run("update-ref", "-d", repo.tracking)

    def _integrate(self, report: Report, purged: frozenset[str] = frozenset()) -> str | None:
        """Merge the fetched remote into our branch; the commit to push (None: nothing).
        ``purged``: a purge here is rewriting our history (never an adoption of theirs)."""
        repo = self.repo
        head, theirs, seen = repo.tips()
        if theirs is None:  # an empty remote: ours goes up as it is
            return head
        if head == theirs and seen == theirs:  # nothing moved (the usual quiet sync)
            return None
        base = repo.merge_base(head, theirs) if head else None
        adopt = not purged and seen is not None and seen != theirs
        if adopt and seen == head:  # ours is what we saw last: is it in theirs' history?
            adopt = base != head
        elif adopt:
            adopt = not repo.is_ancestor(str(seen), theirs)
        if head is not None and not adopt and base == theirs:  # theirs is in ours
            return head if head != theirs else None
        info = repo.commits(*([head] if head else []), theirs)
        ours_time = info[head][0] if head in info else 0.0
        theirs_time, author = info.get(theirs, (0.0, ""))
        hosts = Hosts(self.host, author or "remote", today(self.now()), ours_time, theirs_time)
        integ = integrate(repo, self.scope, head, theirs, base, hosts, adopt, purged)
        if self.foreign_refused and integ.other:
            names = ", ".join(sorted(integ.other)[:5])
            raise Refused(
                f"the remote's {repo.branch} changed files outside memory ({names}): pull "
                f"them yourself (git pull in {self.root}; the memory files merge by "
                "memoryd's rules), then memoryd syncs again"
            )
        keep = bool(integ.removed) and not adopt and not purged
        with self._secure(integ, adopt or bool(purged)):
            report.written = write_integration(
                self.root, integ, self.locked, self.host, self.now(), keep
            )
        report.pulled = repo.count(f"{head}..{theirs}") if head else repo.count(theirs)
        report.notes, report.rewritten = integ.notes, adopt
        report.forgotten = {r.path: r.lines for r in integ.removed}
        target = self._commit_merge(integ)
        moves = [(repo.ref, target, head)]
        if not purged:
            moves.append((SEEN_REF, theirs, seen))
        repo.move(moves, "memoryd: merge")
        self._follow(sorted(integ.contents))
        if self._seen is not None and self._seen[0] == head:  # the next step: no git for us
            held = {h.path for h in self._held}
            self._seen = (target, seen_after_write(self.root, self._seen[1], integ.contents, held))
        if adopt:
            drop_old_history(repo)
        return target if target != theirs else None

    def _secure(
        self, integ: Integration, rewritten: bool
    ) -> contextlib.AbstractContextManager[object]:
        """The files whose lines a forget elsewhere removes here: those of the tombstones,
        and every merged file when a purge's rewritten history is adopted (or one here is
        merging). Their chunks leave the index as a local forget's do (docs/sync.md)."""
        rels = {r.path for r in integ.removed}
        if rewritten:
            rels |= {p for p in integ.contents if p != LEDGER_REL}
        if self.secure is None or not rels:
            return contextlib.nullcontext()
        return self.secure(self.root, [self.root / p for p in sorted(rels)])

    def _commit_merge(self, integ: Integration) -> str:
        if integ.is_theirs:  # the remote's tree as it is: its commit, nothing to write
            return integ.theirs
        repo = self.repo
        changes: dict[str, Entry | None] = dict(integ.other)
        for path, data in integ.contents.items():
            changes[path] = None if data is None else Entry(FILE_MODE, repo.write_blob(data))
        tree = repo.write_tree(integ.ours, changes)
        if tree == repo.git.out("rev-parse", f"{integ.theirs}^{{tree}}"):
            return integ.theirs
        message = f"memoryd: {self.host} merged {integ.theirs[:12]}"
        return repo.commit_tree(tree, integ.parents, message)

    def _push(self, target: str, report: Report) -> bool:
        """Push ``target``; False when refused because the remote moved (merge again)."""
        repo = self.repo
        try:
            repo.git.run(
                "push", "-q", "--porcelain", repo.remote, f"{target}:{repo.ref}", network=True
            )
        except GitError as exc:
            if exc.offline:
                report.offline = exc.message
                return True
            if "rejected" in exc.stderr or "fetch first" in exc.stderr:
                return False
            raise
        report.pushed = True
        repo.point({SEEN_REF: target, repo.tracking: target}, "memoryd: pushed")
        return True
