"""retention: old session transcripts are archived (gzip) or deleted; old daily files may move.

A transcript whose last write is older than ``retention_days`` is compressed to
``sessions/archive/YYYY-MM/<name>.gz`` (the month of its last write); OpenClaw's copies
(``sessions/openclaw/<agent>/``) go to ``sessions/archive/YYYY-MM/openclaw/<agent>/``. The
copying never fills an archived copy again: it goes on from its own mark (or, without one,
after the lines of the copy and its archives), so new rows start a new, short copy. The archive is
written to a temp file, made durable, decompressed and compared byte for byte with the
original, and only then renamed into place; the original is removed only if it is still
exactly the file that was read (same inode, size and mtime). A file written recently is
never touched, not even one written while the job runs. The index follows in the same step.

With ``daily_archive_days`` set, ``memory/YYYY-MM-DD*.md`` older than that move to
``memory/archive/YYYY/`` (still indexed, so still searchable); an existing file of the same
name there is never overwritten.

Every step is relative to a folder opened beneath the workspace (``Layout.open_dir``, the
walk ``get`` and ``append`` use), never by a path: a folder swapped for a link to outside
while the job runs cannot make it read, move or delete anything there.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import os
import shutil
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from memoryd.errors import MemorydError
from memoryd.files.layout import (
    DAY_RE,
    MEMORY_DIR,
    NOTE_SUFFIX,
    TRANSCRIPT_SUFFIX,
    Layout,
    archived_daily_dir,
    transcript_archive_dir,
    transcript_dirs,
)
from memoryd.files.provenance import ledger_for
from memoryd.jobs.base import JobContext, JobFailed, JobResult, JobSkipped

DAY_S: Final = 86400.0
CHUNK: Final = 1 << 20
MAX_LISTED: Final = 200  # actions listed in a report; the counts are always complete
_KINDS: Final = ("archive", "delete", "archive_daily")
_OPEN: Final = os.O_NOFOLLOW | os.O_CLOEXEC


class _Changed(Exception):
    """The file was written after it was planned: leave it alone."""


@dataclass(frozen=True)
class Action:
    kind: str  # archive | delete | archive_daily
    src: Path
    dest: Path | None
    size: int
    stat_key: tuple[int, int, int]  # (inode, size, mtime_ns) when planned

    def describe(self, ctx: JobContext) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.kind, "path": ctx.rel(self.src), "bytes": self.size}
        if self.dest is not None:
            out["to"] = ctx.rel(self.dest)
        return out


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class _Folders:
    """The workspace's folders opened beneath its root, each once per run; the jobs' file
    steps are relative to these descriptors."""

    def __init__(self, ctx: JobContext) -> None:
        self.root = ctx.root
        self.layout: Layout = ctx.layout
        self._fds: dict[str, int] = {}

    def fd(self, folder: Path, *, make: bool = False) -> int:
        rel = folder.relative_to(self.root).as_posix()
        if rel not in self._fds:
            self._fds[rel] = self.layout.open_dir(rel, make=make)
        return self._fds[rel]

    def files(self, folder: Path, suffix: str) -> list[tuple[str, os.stat_result]]:
        """The regular files (not links) of ``folder`` ending in ``suffix``, sorted."""
        try:
            fd = self.fd(folder)
        except (OSError, MemorydError):  # missing, or a link out of the workspace
            return []
        out = []
        for name in sorted(os.listdir(fd)):
            if not name.endswith(suffix):
                continue
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    out.append((name, st))
        return out

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _fsync_dir(fd: int) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot: the rename stands anyway
        os.fsync(fd)


def _still(folders: _Folders, action: Action) -> None:
    try:
        st = os.stat(action.src.name, dir_fd=folders.fd(action.src.parent), follow_symlinks=False)
    except FileNotFoundError:
        raise _Changed() from None
    if _key(st) != action.stat_key:
        raise _Changed()


def plan(ctx: JobContext) -> list[Action]:
    folders = _Folders(ctx)
    try:
        return _plan(ctx, folders)
    finally:
        folders.close()


def _plan(ctx: JobContext, folders: _Folders) -> list[Action]:
    opts = ctx.config.jobs.retention
    now = ctx.now.timestamp()
    actions: list[Action] = []
    for folder in transcript_dirs(ctx.root):  # sessions/ and OpenClaw's copies
        for name, st in folders.files(folder, TRANSCRIPT_SUFFIX):
            path = folder / name
            if now - st.st_mtime <= opts.retention_days * DAY_S:
                continue
            if opts.action == "delete":
                actions.append(Action("delete", path, None, st.st_size, _key(st)))
                continue
            month = dt.datetime.fromtimestamp(st.st_mtime, ctx.now.tzinfo).strftime("%Y-%m")
            dest = transcript_archive_dir(ctx.root, folder, month) / f"{path.name}.gz"
            actions.append(Action("archive", path, dest, st.st_size, _key(st)))
    if opts.daily_archive_days:
        actions += _plan_daily(ctx, folders, now, opts.daily_archive_days)
    return actions


def _plan_daily(ctx: JobContext, folders: _Folders, now: float, days: int) -> list[Action]:
    cutoff = ctx.now.date() - dt.timedelta(days=days)
    out: list[Action] = []
    folder = ctx.root / MEMORY_DIR
    for name, st in folders.files(folder, NOTE_SUFFIX):
        path = folder / name
        m = DAY_RE.match(name)
        if not m:
            continue
        try:
            day = dt.date.fromisoformat(m.group(1))
        except ValueError:
            continue
        # Both old by name and not written lately: a late note to an old day stays put.
        if day >= cutoff or now - st.st_mtime <= days * DAY_S:
            continue
        dest = archived_daily_dir(ctx.root, day.year) / path.name
        out.append(Action("archive_daily", path, dest, st.st_size, _key(st)))
    return out


def _same_content(original: IO[bytes], dir_fd: int, archive: str) -> bool:
    """Whether ``archive`` (in ``dir_fd``) decompresses to exactly the bytes of ``original``."""
    try:
        original.seek(0)
        fd = os.open(archive, os.O_RDONLY | _OPEN, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as b:
            while True:
                x, y = original.read(CHUNK), b.read(CHUNK)
                if x != y:
                    return False
                if not x:
                    return True
    except (OSError, EOFError, zlib.error):  # a truncated or corrupt archive
        return False


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _archive(folders: _Folders, action: Action) -> int:
    """Gzip, verify, rename into place, remove the original; the archive's size."""
    assert action.dest is not None
    src_fd = folders.fd(action.src.parent)
    dest_fd = folders.fd(action.dest.parent, make=True)
    try:
        fd = os.open(action.src.name, os.O_RDONLY | _OPEN, dir_fd=src_fd)
    except FileNotFoundError:
        raise _Changed() from None
    with os.fdopen(fd, "rb") as src:
        if _key(os.fstat(src.fileno())) != action.stat_key:
            raise _Changed()
        dest = _write_archive(folders, action, src, dest_fd)
    _still(folders, action)
    os.unlink(action.src.name, dir_fd=src_fd)
    _fsync_dir(src_fd)
    return os.stat(dest, dir_fd=dest_fd).st_size


def _write_archive(folders: _Folders, action: Action, src: IO[bytes], dest_fd: int) -> str:
    """The archive of ``src`` in ``dest_fd``, written and verified (or one an earlier run
    left with the same content); its name."""
    assert action.dest is not None
    dest = action.dest.name
    stem, n = dest[: -len(".gz")], 2
    while _exists(dest_fd, dest):
        if _same_content(src, dest_fd, dest):  # an earlier run stopped before the removal
            return dest
        dest = f"{stem}.{n}.gz"
        n += 1
    tmp = f".{dest}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):  # a killed run's
        os.unlink(tmp, dir_fd=dest_fd)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN, 0o600, dir_fd=dest_fd)
    try:
        src.seek(0)
        with os.fdopen(fd, "wb") as raw:
            with gzip.GzipFile(
                filename=action.src.name,
                mode="wb",
                fileobj=raw,
                mtime=action.stat_key[2] // 1_000_000_000,
            ) as gz:
                shutil.copyfileobj(src, gz, CHUNK)
            raw.flush()
            os.fchmod(raw.fileno(), os.fstat(src.fileno()).st_mode & 0o7777)
            os.fsync(raw.fileno())
        _still(folders, action)  # written while compressing: the archive would be stale
        if not _same_content(src, dest_fd, tmp):
            raise JobFailed(
                f"{action.src.name}: the archive does not decompress to the original; original kept"
            )
        os.replace(tmp, dest, src_dir_fd=dest_fd, dst_dir_fd=dest_fd)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dest_fd)
    _fsync_dir(dest_fd)
    return dest


def _move_daily(ctx: JobContext, folders: _Folders, action: Action) -> None:
    """Link into the archive, then unlink the original, under the daemon's lock for the
    file: an ``append`` in this daemon waits for the move (and then creates the day's file
    afresh) instead of writing between the link and the unlink. A change by anyone else
    seen after linking (identity, size or mtime) undoes the link and leaves the file."""
    dest = action.dest
    assert dest is not None
    src_fd = folders.fd(action.src.parent)
    dest_fd = folders.fd(dest.parent, make=True)
    # Both files' locks (Ledger.carry's rule): the ledger compaction never reads the new
    # file between its records and its link.
    with ctx.locks.locked([action.src, dest]):
        _still(folders, action)
        # A line's provenance is its own record in its file (files/provenance.py): the
        # records go with the lines, written before the lines appear there.
        if not _exists(dest_fd, dest.name):
            ledger_for(ctx.root).carry(ctx.rel(action.src), ctx.rel(dest))
        # Fails if the name is taken: never overwrite.
        os.link(
            action.src.name,
            dest.name,
            src_dir_fd=src_fd,
            dst_dir_fd=dest_fd,
            follow_symlinks=False,
        )
        try:
            _still(folders, action)
        except _Changed:
            os.unlink(dest.name, dir_fd=dest_fd)
            raise
        _fsync_dir(dest_fd)
        os.unlink(action.src.name, dir_fd=src_fd)
    _fsync_dir(src_fd)


def run(ctx: JobContext) -> JobResult:
    if not ctx.root.is_dir():
        raise JobSkipped(f"workspace folder {ctx.root} is missing")
    actions = plan(ctx)
    listed = [a.describe(ctx) for a in actions[:MAX_LISTED]]
    report: dict[str, Any] = {"files": len(actions), "bytes": sum(a.size for a in actions)}
    if len(actions) > MAX_LISTED:
        report["more_actions"] = len(actions) - MAX_LISTED
    if ctx.dry_run:
        report["actions"] = listed
        planned = {k: sum(1 for a in actions if a.kind == k) for k in _KINDS}
        return JobResult(
            f"dry run: would {_summary(planned, report['bytes'], future=True)}; nothing changed",
            report,
        )
    counts = dict.fromkeys(_KINDS, 0)
    archived_bytes = done_bytes = 0
    left: list[dict[str, str]] = []
    errors: list[dict[str, str]] = []
    touched: list[Path] = []
    folders = _Folders(ctx)
    try:
        for action in actions:
            ctx.check_cancelled()
            try:
                archived_bytes += _act(ctx, folders, action, counts)
                if action.kind == "archive_daily":
                    assert action.dest is not None
                    touched.append(action.dest)
                touched.append(action.src)
                done_bytes += action.size
            except _Changed:
                left.append({"path": ctx.rel(action.src), "reason": "written during the run"})
            except FileExistsError:
                left.append({"path": ctx.rel(action.src), "reason": "already in the archive"})
            except (OSError, JobFailed, MemorydError) as exc:
                message = exc.message if isinstance(exc, MemorydError) else str(exc)
                errors.append({"path": ctx.rel(action.src), "error": message[:200]})
    finally:
        folders.close()
    # Counts of what was done (a dry run's are of what would be).
    report.update(
        files=sum(counts.values()),
        bytes=done_bytes,
        archived=counts["archive"],
        deleted=counts["delete"],
        daily_archived=counts["archive_daily"],
        archive_bytes=archived_bytes,
    )
    if left:
        report["left_alone"] = left[:MAX_LISTED]
    note = ctx.reindex(touched)
    if note:
        report["index"] = note
    message = _summary(counts, done_bytes)
    if errors:
        report["errors"] = errors[:MAX_LISTED]
        raise JobFailed(
            f"{len(errors)} file(s) could not be handled (first: "
            f"{errors[0]['path']}: {errors[0]['error']}); {message}",
            report,
        )
    return JobResult(message, report)


def _act(ctx: JobContext, folders: _Folders, action: Action, counts: dict[str, int]) -> int:
    """Carry out one action; the archive bytes it wrote."""
    written = 0
    if action.kind == "archive":
        written = _archive(folders, action)
    elif action.kind == "delete":
        _still(folders, action)
        os.unlink(action.src.name, dir_fd=folders.fd(action.src.parent))
    else:
        _move_daily(ctx, folders, action)
    counts[action.kind] += 1
    return written


def _summary(counts: dict[str, int], size: int, future: bool = False) -> str:
    words = {
        "archive": ("archive", "archived", "transcript(s)"),
        "delete": ("delete", "deleted", "transcript(s)"),
        "archive_daily": ("move", "moved", "daily file(s) to memory/archive/"),
    }
    parts = [
        f"{words[k][0 if future else 1]} {counts[k]} {words[k][2]}" for k in _KINDS if counts.get(k)
    ]
    if not parts:
        return "do nothing" if future else "nothing to do"
    return ", ".join(parts) + f" ({size} bytes)"
