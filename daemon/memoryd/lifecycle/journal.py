"""A change to several memory files at once, whole or absent across a kill -9.

Forget and import rewrite (or create, or delete) several files. Each file's replacement is
atomic (temp file, fsync, rename), but a kill between two files would leave the change half
done. So the change is written down first, in ``memory/.history/changes/<id>/``:

- ``plan.json``: for each file its sha256 before and after, and what else the change does
  (``meta``: the session it forgets, the ledger records it drops);
- ``<n>.after``: each file's new content (absent for a deletion);
- ``<n>.before``: each file's old content, the pre-image kept for ``forget.keep_days``
  (not written with ``purge``: a real deletion keeps nothing).

Then the files are replaced one by one, and the plan is marked ``done`` (the ``.after``
copies go). A plan found ``applying`` at start-up is finished: a file still as it was
before gets its new content, one already changed is left, one edited by hand since is left
too and logged (never overwritten). Before the plan is durable nothing was touched, so an
interrupted change is either rolled forward completely or never started.

The folder is hidden (``memory/.history``): never indexed, never readable by ``get``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.files.beneath import open_beneath
from memoryd.files.fsutil import atomic_write_at
from memoryd.files.layout import HISTORY_DIR, Layout
from memoryd.runtime.logs import get_logger

__all__ = ["CHANGES_DIR", "Change", "FileChange", "Kept", "apply", "kept", "prune", "recover"]

log = get_logger("memoryd.lifecycle.journal")

CHANGES_DIR: Final = f"{HISTORY_DIR}/changes"
PLAN: Final = "plan.json"
VERSION: Final = 1


def sha(data: bytes | None) -> str:
    return "" if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileChange:
    rel: str  # workspace-relative
    before: bytes | None  # None: the file does not exist yet
    after: bytes | None  # None: the file is deleted


@dataclass
class Change:
    kind: str  # "forget" | "import"
    files: list[FileChange]
    meta: dict[str, Any] = field(default_factory=dict)
    keep: bool = True  # keep the pre-images (False: --purge)


@dataclass(frozen=True)
class Kept:
    """What the journal folder holds: pre-images kept for ``forget.keep_days``."""

    changes: int
    files: int
    bytes: int
    oldest: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "changes": self.changes,
            "files": self.files,
            "bytes": self.bytes,
            "oldest": self.oldest,
        }


class Conflict(Exception):
    """A file is no longer what the change was computed from."""


def _new_id(now: float) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}-{os.urandom(3).hex()}"


def _write(dir_fd: int, name: str, data: bytes) -> None:
    atomic_write_at(dir_fd, name, data, mode=0o600)


def apply(
    root: Path, change: Change, on_planned: Callable[[], None] | None = None, now: float = 0.0
) -> str:
    """Write the plan, then the files; answer the change's folder (workspace-relative).
    ``on_planned`` runs once the plan is durable, before any file is touched (forget marks
    the session there). Conflict when a file changed since ``before`` was read (nothing is
    touched then: every file is checked before the first is replaced)."""
    layout = Layout(root)
    for f in change.files:
        if sha(_read(layout, f.rel)) != sha(f.before):
            raise Conflict(f"{f.rel} changed meanwhile")
    ident = _new_id(now or time.time())
    folder = f"{CHANGES_DIR}/{ident}"
    dir_fd = layout.open_dir(folder, make=True)
    try:
        plan = {
            "v": VERSION,
            "kind": change.kind,
            "at": now or time.time(),
            "state": "applying",
            "keep": change.keep,
            "meta": change.meta,
            "files": [
                {"rel": f.rel, "n": n, "before": sha(f.before), "after": sha(f.after)}
                for n, f in enumerate(change.files)
            ],
        }
        for n, f in enumerate(change.files):
            if f.after is not None:
                _write(dir_fd, f"{n}.after", f.after)
            if change.keep and f.before is not None:
                _write(dir_fd, f"{n}.before", f.before)
        _write(dir_fd, PLAN, json.dumps(plan).encode())  # from here on, it will happen
        if on_planned is not None:
            on_planned()
        _finish(layout, dir_fd, plan)
    finally:
        os.close(dir_fd)
    if not change.keep:
        _remove(layout, folder)
    return folder


def _read(layout: Layout, rel: str) -> bytes | None:
    """File ``rel`` as it is now (None: missing), opened beneath the workspace."""
    try:
        opened = open_beneath(layout.root, rel, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(opened.fd, "rb") as f:
        return f.read()


def _finish(layout: Layout, dir_fd: int, plan: dict[str, Any]) -> list[str]:
    """Bring each file of ``plan`` to its ``after`` state; the files left (edited by hand
    since) are named. Marks the plan done and drops the ``.after`` copies."""
    left: list[str] = []
    for f in plan["files"]:
        rel, n = str(f["rel"]), int(f["n"])
        now = sha(_read(layout, rel))
        if now == f["after"]:
            continue
        if now != f["before"]:
            left.append(rel)
            log.warning("change_left_file", rel=rel, why="edited since the change was planned")
            continue
        parent, _, name = rel.rpartition("/")
        pfd = layout.open_dir(parent, make=True)
        try:
            if f["after"] == "":
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=pfd)
                    os.fsync(pfd)
            else:
                data = _read_at(dir_fd, f"{n}.after")
                atomic_write_at(pfd, name, data)
        finally:
            os.close(pfd)
    plan["state"] = "done"
    if left:
        plan["left"] = left
    _write(dir_fd, PLAN, json.dumps(plan).encode())
    for f in plan["files"]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{f['n']}.after", dir_fd=dir_fd)
    return left


def _read_at(dir_fd: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _plans(layout: Layout) -> list[tuple[str, dict[str, Any]]]:
    try:
        top = layout.open_dir(CHANGES_DIR)
    except (FileNotFoundError, NotADirectoryError, OSError):
        return []
    out = []
    try:
        for name in sorted(os.listdir(top)):
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
            except OSError:
                continue
            try:
                plan = json.loads(_read_at(sub, PLAN))
            except (OSError, ValueError):
                plan = None  # killed before the plan was durable: nothing was touched
            finally:
                os.close(sub)
            out.append((name, plan if isinstance(plan, dict) else {}))
    finally:
        os.close(top)
    return out


def recover(root: Path, after: Callable[[dict[str, Any]], None] | None = None) -> int:
    """Finish the changes a kill interrupted; ``after(meta)`` redoes what a change does
    beside the files (idempotent). Returns how many were finished."""
    layout = Layout(root)
    done = 0
    for name, plan in _plans(layout):
        folder = f"{CHANGES_DIR}/{name}"
        if not plan:
            _remove(layout, folder)  # never started
            continue
        if plan.get("state") != "applying":
            continue
        dir_fd = layout.open_dir(folder)
        try:
            if after is not None:
                after(plan.get("meta") or {})
            left = _finish(layout, dir_fd, plan)
        finally:
            os.close(dir_fd)
        log.info("change_recovered", kind=plan.get("kind"), folder=folder, left=len(left))
        if not plan.get("keep", True):
            _remove(layout, folder)
        done += 1
    return done


def kept(root: Path) -> Kept:
    layout = Layout(root)
    files = size = count = 0
    oldest: float | None = None
    base = root / CHANGES_DIR
    for name, plan in _plans(layout):
        if plan.get("state") != "done":
            continue
        count += 1
        at = float(plan.get("at") or 0)
        oldest = at if oldest is None else min(oldest, at)
        for entry in os.scandir(base / name):
            if entry.name.endswith(".before") and entry.is_file(follow_symlinks=False):
                files += 1
                size += entry.stat(follow_symlinks=False).st_size
    return Kept(count, files, size, oldest)


def prune(root: Path, keep_days: float, now: float) -> int:
    """Remove the kept changes older than ``keep_days``; how many went."""
    layout = Layout(root)
    gone = 0
    for name, plan in _plans(layout):
        if plan.get("state") == "done" and float(plan.get("at") or 0) < now - keep_days * 86400:
            _remove(layout, f"{CHANGES_DIR}/{name}")
            gone += 1
    return gone


def _remove(layout: Layout, folder: str) -> None:
    """Remove a change's folder (beneath the workspace: its parent is opened beneath)."""
    parent, _, name = folder.rpartition("/")
    try:
        pfd = layout.open_dir(parent)
    except OSError:
        return
    try:
        shutil.rmtree(name, dir_fd=pfd)
    except FileNotFoundError:
        pass
    finally:
        os.close(pfd)
