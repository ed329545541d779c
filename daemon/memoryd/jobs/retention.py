"""retention: old session transcripts are archived (gzip) or deleted; old daily files may move.

A transcript whose last write is older than ``retention_days`` is compressed to
``sessions/archive/YYYY-MM/<name>.gz`` (the month of its last write). The archive is
written to a temp file, made durable, decompressed and compared byte for byte with the
original, and only then renamed into place; the original is removed only if it is still
exactly the file that was read (same inode, size and mtime). A file written recently is
never touched, not even one written while the job runs. The index follows in the same step.

With ``daily_archive_days`` set, ``memory/YYYY-MM-DD*.md`` older than that move to
``memory/archive/YYYY/`` (still indexed, so still searchable); an existing file of the same
name there is never overwritten.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memoryd.jobs.base import JobContext, JobFailed, JobResult, JobSkipped
from memoryd.workspace.fsutil import fsync_dir
from memoryd.workspace.layout import (
    ARCHIVE_DIR,
    DAY_RE,
    MEMORY_DIR,
    NOTE_SUFFIX,
    TRANSCRIPT_SUFFIX,
    archived_daily_dir,
    transcripts_dir,
)

DAY_S: Final = 86400.0
CHUNK: Final = 1 << 20
MAX_LISTED: Final = 200  # actions listed in a report; the counts are always complete
_KINDS: Final = ("archive", "delete", "archive_daily")


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


def _still(action: Action) -> None:
    try:
        st = os.stat(action.src)
    except FileNotFoundError:
        raise _Changed() from None
    if _key(st) != action.stat_key:
        raise _Changed()


def plan(ctx: JobContext) -> list[Action]:
    opts = ctx.config.jobs.retention
    now = ctx.now.timestamp()
    actions: list[Action] = []
    folder = transcripts_dir(ctx.root)
    if folder.is_dir():
        for path in sorted(folder.glob(f"*{TRANSCRIPT_SUFFIX}")):
            st = path.lstat()
            if not path.is_file() or path.is_symlink():
                continue
            if now - st.st_mtime <= opts.retention_days * DAY_S:
                continue
            if opts.action == "delete":
                actions.append(Action("delete", path, None, st.st_size, _key(st)))
                continue
            month = dt.datetime.fromtimestamp(st.st_mtime, ctx.now.tzinfo).strftime("%Y-%m")
            dest = folder / ARCHIVE_DIR / month / f"{path.name}.gz"
            actions.append(Action("archive", path, dest, st.st_size, _key(st)))
    if opts.daily_archive_days:
        actions += _plan_daily(ctx, now, opts.daily_archive_days)
    return actions


def _plan_daily(ctx: JobContext, now: float, days: int) -> list[Action]:
    cutoff = ctx.now.date() - dt.timedelta(days=days)
    out: list[Action] = []
    folder = ctx.root / MEMORY_DIR
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob(f"*{NOTE_SUFFIX}")):
        m = DAY_RE.match(path.name)
        if not m or not path.is_file() or path.is_symlink():
            continue
        try:
            day = dt.date.fromisoformat(m.group(1))
        except ValueError:
            continue
        st = path.stat()
        # Both old by name and not written lately: a late note to an old day stays put.
        if day >= cutoff or now - st.st_mtime <= days * DAY_S:
            continue
        dest = archived_daily_dir(ctx.root, day.year) / path.name
        out.append(Action("archive_daily", path, dest, st.st_size, _key(st)))
    return out


def _same_content(original: Path, archive: Path) -> bool:
    """Whether ``archive`` decompresses to exactly the bytes of ``original``."""
    try:
        with open(original, "rb") as a, gzip.open(archive, "rb") as b:
            while True:
                x, y = a.read(CHUNK), b.read(CHUNK)
                if x != y:
                    return False
                if not x:
                    return True
    except (OSError, EOFError, zlib.error):  # a truncated or corrupt archive
        return False


def _archive(action: Action) -> int:
    """Gzip, verify, rename into place, remove the original; the archive's size."""
    assert action.dest is not None
    dest = action.dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    stem, n = dest.name[: -len(".gz")], 2
    while dest.exists():
        if _same_content(action.src, dest):  # an earlier run stopped before the removal
            break
        dest = dest.with_name(f"{stem}.{n}.gz")
        n += 1
    else:  # no archive of this content yet: write one
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        try:
            with open(action.src, "rb") as src, open(tmp, "wb") as raw:
                with gzip.GzipFile(
                    filename=action.src.name,
                    mode="wb",
                    fileobj=raw,
                    mtime=action.stat_key[2] // 1_000_000_000,
                ) as gz:
                    shutil.copyfileobj(src, gz, CHUNK)
                raw.flush()
                os.fsync(raw.fileno())
            os.chmod(tmp, os.stat(action.src).st_mode & 0o7777)
            _still(action)  # written while compressing: the archive would be stale
            if not _same_content(action.src, tmp):
                raise JobFailed(
                    f"{action.src.name}: the archive does not decompress to the "
                    "original; original kept"
                )
            os.replace(tmp, dest)
        finally:
            if tmp.exists():
                tmp.unlink()
        fsync_dir(dest.parent)
    _still(action)
    os.unlink(action.src)
    fsync_dir(action.src.parent)
    return dest.stat().st_size


def _move_daily(ctx: JobContext, action: Action) -> None:
    """Link into the archive, then unlink the original, under the Appender's lock for the
    file: an ``append`` in this daemon waits for the move (and then creates the day's file
    afresh) instead of writing between the link and the unlink. A change by anyone else
    seen after linking (identity, size or mtime) undoes the link and leaves the file."""
    dest = action.dest
    assert dest is not None
    dest.parent.mkdir(parents=True, exist_ok=True)
    with ctx.appender.lock_for(action.src.resolve()):
        _still(action)
        os.link(action.src, dest)  # fails if the name is taken: never overwrite
        try:
            _still(action)
        except _Changed:
            os.unlink(dest)
            raise
        fsync_dir(dest.parent)
        os.unlink(action.src)
    fsync_dir(action.src.parent)


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
    for action in actions:
        ctx.check_cancelled()
        try:
            if action.kind == "archive":
                archived_bytes += _archive(action)
                counts["archive"] += 1
            elif action.kind == "delete":
                _still(action)
                os.unlink(action.src)
                counts["delete"] += 1
            else:
                _move_daily(ctx, action)
                counts["archive_daily"] += 1
                assert action.dest is not None
                touched.append(action.dest)
            touched.append(action.src)
            done_bytes += action.size
        except _Changed:
            left.append({"path": ctx.rel(action.src), "reason": "written during the run"})
        except FileExistsError:
            left.append({"path": ctx.rel(action.src), "reason": "already in the archive"})
        except (OSError, JobFailed) as exc:
            errors.append({"path": ctx.rel(action.src), "error": str(exc)[:200]})
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
