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
import errno
import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.files.beneath import open_beneath
from memoryd.files.fsutil import atomic_write_at
from memoryd.files.layout import CHANGES_DIR, Layout
from memoryd.files.reader import read_all
from memoryd.records import Record
from memoryd.runtime.logs import get_logger

__all__ = [
    "CHANGES_DIR",
    "Applied",
    "Change",
    "FileChange",
    "Kept",
    "Stale",
    "apply",
    "kept",
    "mark_indexed",
    "prune",
    "recover",
    "unindexed",
]

log = get_logger("memoryd.lifecycle.journal")

PLAN: Final = "plan.json"
VERSION: Final = 1


def sha(data: bytes | None) -> str:
    return "" if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, eq=False, repr=False)
class FileChange(Record):
    """One file of a change: its content before and after."""

    rel: str  # workspace-relative
    before: bytes | None  # None: the file does not exist yet
    after: bytes | None  # None: the file is deleted


@dataclass
class Change:
    """A change to several files, whole or absent (the module docstring)."""

    kind: str  # "forget" | "import"
    files: list[FileChange]
    meta: dict[str, Any] = field(default_factory=dict)
    keep: bool = True  # keep the pre-images (False: --purge)
    # The index must follow before anything searches it again (a forget): the plan says so
    # until ``mark_indexed``, so a daemon killed before the index followed syncs the files
    # at its next start before the workspace answers (``unindexed``).
    reindex: bool = False


@dataclass(frozen=True, eq=False, repr=False)
class Kept(Record):
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


class Stale(Exception):
    """A file changed (beyond an append) so that the change no longer applies to it: it is
    left as it is, and the change's answer names it."""


# ``replan(rel, now)``: the file's new content computed again from its bytes ``now`` (None:
# it goes), or Stale. Forget cuts its lines again; without one only an append is carried.
Replan = Callable[[str, bytes | None], bytes | None]
ATTEMPTS: Final = 5  # a file that keeps moving under us is left after this many tries


@dataclass
class Applied:
    """A change done: its folder, and the files left as they were (and why)."""

    folder: str  # the change's folder (workspace-relative)
    left: dict[str, str] = field(default_factory=dict)  # file -> why it was not changed


def _new_id(now: float) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}-{os.urandom(3).hex()}"


def _write(dir_fd: int, name: str, data: bytes) -> None:
    atomic_write_at(dir_fd, name, data, mode=0o600)


def apply(
    root: Path,
    change: Change,
    on_planned: Callable[[], None] | None = None,
    now: float = 0.0,
    replan: Replan | None = None,
) -> Applied:
    """Write the plan, then the files. ``on_planned`` runs once the plan is durable, before
    any file is touched (forget marks the session there).

    Each file is compared with what the plan read just before its rename (identity, size,
    mtime): a file an outside writer appended to meanwhile gets the change on top of the
    append; one changed otherwise is planned again (``replan``), and left (named in
    ``Applied.left``) when that cannot be done or it kept moving. Bytes appended to the old
    file in the instant between the check and the rename are carried over to the new one."""
    if not change.files:  # nothing to write down (a forget whose lines all moved away)
        if on_planned is not None:
            on_planned()
        return Applied("")
    layout = Layout(root)
    ident = _new_id(now or time.time())
    folder = f"{CHANGES_DIR}/{ident}"
    dir_fd = layout.open_dir(folder, make=True)
    left: dict[str, str] = {}
    try:
        plan: dict[str, Any] = {
            "v": VERSION,
            "kind": change.kind,
            "at": now or time.time(),
            "state": "applying",
            "keep": change.keep,
            "indexed": not change.reindex,
            "meta": change.meta,
            "files": [
                {
                    "rel": f.rel,
                    "n": n,
                    "before": sha(f.before),
                    "before_size": len(f.before or b""),
                    "after": sha(f.after),
                }
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
        target = _Target(layout, dir_fd, plan, replan)
        for entry in plan["files"]:
            why = target.settle(entry)
            if why is not None:
                left[str(entry["rel"])] = why
        _done(dir_fd, plan, sorted(left))
    finally:
        os.close(dir_fd)
    if not change.keep and not change.reindex:
        _remove(layout, folder)
    return Applied(folder, left)


def unindexed(root: Path) -> dict[str, list[str]]:
    """The finished changes the index has not followed yet (a kill came first): their
    folders and the files they changed."""
    return {
        f"{CHANGES_DIR}/{name}": [str(f["rel"]) for f in plan.get("files", ())]
        for name, plan in _plans(Layout(root))
        if plan.get("state") == "done" and plan.get("indexed") is False
    }


def mark_indexed(root: Path, folder: str) -> None:
    """The index followed the change in ``folder``: a purge's folder goes now (it holds no
    pre-image, only the plan), a kept one says so."""
    if not folder:
        return
    layout = Layout(root)
    try:
        dir_fd = layout.open_dir(folder)
    except OSError:
        return  # pruned meanwhile
    try:
        plan = json.loads(_read_at(dir_fd, PLAN))
        if not plan.get("keep", True):
            remove = True
        else:
            remove = False
            plan["indexed"] = True
            _write(dir_fd, PLAN, json.dumps(plan).encode())
    except (OSError, ValueError):
        return
    finally:
        os.close(dir_fd)
    if remove:
        _remove(layout, folder)


class _Moved(Exception):
    """The file changed between our check and our rename: check again."""


class _Target:
    """Bringing the files of one plan to their new content, one at a time."""

    def __init__(
        self, layout: Layout, dir_fd: int, plan: dict[str, Any], replan: Replan | None
    ) -> None:
        self.layout, self.dir_fd, self.plan, self.replan = layout, dir_fd, plan, replan

    def settle(self, entry: dict[str, Any]) -> str | None:
        """Bring one file to its planned state; None, or why it was left as it is."""
        rel = str(entry["rel"])
        parent, _, name = rel.rpartition("/")
        try:
            pfd = self.layout.open_dir(parent, make=True)
        except OSError as exc:
            return f"its folder cannot be opened ({exc.strerror or exc})"
        try:
            for _ in range(ATTEMPTS):
                try:
                    return self._attempt(pfd, name, entry)
                except _Moved:
                    continue
            log.warning("change_left_file", rel=rel, why="kept changing")
            return f"it kept changing while the change was applied ({ATTEMPTS} attempts)"
        finally:
            os.close(pfd)

    def _attempt(self, pfd: int, name: str, entry: dict[str, Any]) -> str | None:
        rel = str(entry["rel"])
        try:
            old = _open_old(pfd, name)
        except _NotFile as exc:
            log.warning("change_left_file", rel=rel, why=str(exc))
            return str(exc)
        try:
            data = None if old is None else read_all(old, os.fstat(old).st_size)
            st = None if old is None else os.fstat(old)
            try:
                already, after = self._after(entry, data)
            except Stale as exc:
                log.warning("change_left_file", rel=rel, why="edited since it was planned")
                return str(exc) or "it was edited since the change was planned"
            if already:
                return None

            def still() -> None:  # the last check, just before the rename
                if not _same(pfd, name, old, st, data):
                    raise _Moved()

            if after is None:  # the whole file goes (a transcript): whatever it holds now
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=pfd)
                os.fsync(pfd)
                return None
            atomic_write_at(pfd, name, after, before_replace=still)
            if old is not None and data is not None:
                _carry_over(pfd, name, old, len(data))
            return None
        finally:
            if old is not None:
                os.close(old)

    def _after(self, entry: dict[str, Any], data: bytes | None) -> tuple[bool, bytes | None]:
        """(whether the file has its new content already, that content; None: it goes),
        given its bytes now; recorded in the plan first when it had to be computed again
        (a kill then recovers that)."""
        now = sha(data)
        n = int(entry["n"])
        if now == entry["after"] and entry["after"] != entry["before"]:
            return True, None
        if now == entry["before"]:
            return False, None if entry["after"] == "" else _read_at(self.dir_fd, f"{n}.after")
        appended, after = _rebased(self.dir_fd, entry, data)
        if not appended:
            if self.replan is None:
                raise Stale("it was edited since the change was planned")
            after = self.replan(str(entry["rel"]), data)
        self._record(entry, data, after)
        return False, after

    def _record(self, entry: dict[str, Any], data: bytes | None, after: bytes | None) -> None:
        n = int(entry["n"])
        if after is not None:
            _write(self.dir_fd, f"{n}.after", after)
        if self.plan.get("keep", True) and data is not None:
            _write(self.dir_fd, f"{n}.before", data)
        entry.update(before=sha(data), before_size=len(data or b""), after=sha(after))
        _write(self.dir_fd, PLAN, json.dumps(self.plan).encode())


def _rebased(dir_fd: int, entry: dict[str, Any], data: bytes | None) -> tuple[bool, bytes | None]:
    """(whether the file only grew since the plan read it, the planned content with what
    was appended on top). A file being deleted goes whatever was appended."""
    size = int(entry.get("before_size") or 0)
    if data is None or entry["before"] == "" or len(data) < size:
        return False, None
    if sha(data[:size]) != entry["before"]:
        return False, None
    if entry["after"] == "":
        return True, None
    return True, _read_at(dir_fd, f"{int(entry['n'])}.after") + data[size:]


class _NotFile(Exception):
    """The name is a link, a folder or a special file: a change never replaces one."""


def _open_old(pfd: int, name: str) -> int | None:
    """The file as it is now, opened without following a link (None: it does not exist)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=pfd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _NotFile("it is a link (never replaced by a copy)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _NotFile("it is not a regular file")
    return fd


def _same(
    pfd: int, name: str, old: int | None, st: os.stat_result | None, data: bytes | None
) -> bool:
    """Whether the name still leads to the file read and holds what was read, perhaps with
    more appended (carried over after the rename); no file: still none."""
    try:
        cur = os.stat(name, dir_fd=pfd, follow_symlinks=False)
    except FileNotFoundError:
        return old is None
    if old is None or st is None or data is None:
        return False
    if (cur.st_dev, cur.st_ino) != (st.st_dev, st.st_ino):
        return False  # replaced (an editor's save, another rename)
    now = os.fstat(old)
    if (now.st_size, now.st_mtime_ns) == (st.st_size, st.st_mtime_ns):
        return True
    # Written since: fine when only appended to (the bytes read are still there as read).
    return now.st_size >= len(data) and read_all(old, len(data)) == data


def _carry_over(pfd: int, name: str, old: int, read: int) -> None:
    """Bytes an outside writer appended to the replaced file after our last check (through
    a descriptor it opened before the rename) are appended to the new file: never lost."""
    size = os.fstat(old).st_size
    if size <= read:
        return
    tail = _read_from(old, read, size)
    fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
    try:
        done = 0
        while done < len(tail):
            done += os.write(fd, tail[done:])
        os.fsync(fd)
    finally:
        os.close(fd)
    log.info("change_carried_append", name=name, bytes=len(tail))


def _read_from(fd: int, start: int, end: int) -> bytes:
    parts: list[bytes] = []
    offset = start
    while offset < end:
        chunk = os.pread(fd, min(1 << 20, end - offset), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _read(layout: Layout, rel: str) -> bytes | None:
    """File ``rel`` as it is now (None: missing), opened beneath the workspace."""
    try:
        opened = open_beneath(layout.root, rel, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(opened.fd, "rb") as f:
        return f.read()


def _done(dir_fd: int, plan: dict[str, Any], left: list[str]) -> None:
    """Mark the plan done (naming the files left) and drop the ``.after`` copies."""
    plan["state"] = "done"
    if left:
        plan["left"] = left
    _write(dir_fd, PLAN, json.dumps(plan).encode())
    for f in plan["files"]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{f['n']}.after", dir_fd=dir_fd)


def _finish(layout: Layout, dir_fd: int, plan: dict[str, Any]) -> list[str]:
    """Recovery: bring each file of ``plan`` to its ``after`` state (an append made since
    carried on top); the files left (edited by hand since) are named."""
    target = _Target(layout, dir_fd, plan, None)
    left = [str(f["rel"]) for f in plan["files"] if target.settle(f) is not None]
    _done(dir_fd, plan, left)
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
        if not plan.get("keep", True) and plan.get("indexed") is not False:
            _remove(layout, folder)
        done += 1
    return done


def kept(root: Path) -> Kept:
    layout = Layout(root)
    files = size = count = 0
    oldest: float | None = None
    base = root / CHANGES_DIR
    for name, plan in _plans(layout):
        if plan.get("state") != "done" or not plan.get("keep", True):
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
        if (
            plan.get("state") == "done"
            and plan.get("indexed") is not False  # the index follows first (unindexed)
            and float(plan.get("at") or 0) < now - keep_days * 86400
        ):
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
