"""ledger_compaction: the provenance ledger keeps what still counts, and no more.

The ledger (files/provenance.py) only grows: every append, move and forget adds records.
This job drops, per workspace, the ``add`` and ``approve`` records of lines no longer in
their file and those a later tombstone made moot (both once older than ``keep_days``, and
than fallback_summary's ``max_age_days``: a recent session's records tell it the session
was flushed), and the tombstones older
than ``sync.tombstone_days`` whose line has nothing older left. Tombstones are kept that
long whether or not the workspace syncs: sync may be enabled later, and a host that joins
with an old copy of the notes is exactly what a tombstone stops (docs/sync.md). The fold
of what stays (a line's trust) is what it was before.

Concurrency: the first pass reads the records and the files they name without any lock
and finds the files some record of which would go. The second holds those files' locks
(the daemon's FileLocks; every writer of a record holds its file's lock while it writes
the record and then the line), reads them again and rewrites the ledger (atomically) under
its own lock. So an append to one of them either finished (record and line on disk) or
has not written its record yet, and records of other files are never dropped: an append
racing the compaction never loses its record. Appends to other files never wait.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from memoryd.errors import MemorydError
from memoryd.files.beneath import open_beneath
from memoryd.files.lines import line_key
from memoryd.files.provenance import droppable, ledger_for
from memoryd.jobs.base import JobContext, JobResult, JobSkipped

DAY_S: Final = 86400.0
MAX_LISTED: Final = 50
_NAMES: Final = {"add": "adds", "approve": "approvals", "forget": "tombstones"}


def _keys(root: Path, paths: Iterable[str]) -> tuple[dict[str, set[str]], list[str]]:
    """The line keys now in each file (a missing file: none), and the files that could
    not be read (their records are all kept)."""
    live: dict[str, set[str]] = {}
    unreadable: list[str] = []
    for rel in paths:
        try:
            opened = open_beneath(root, rel, os.O_RDONLY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            live[rel] = set()
            continue
        except (OSError, MemorydError):  # a folder, a link out, no permission, "" (legacy)
            unreadable.append(rel)
            continue
        with os.fdopen(opened.fd, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
        live[rel] = {k for k in map(line_key, text.split("\n")) if k}
    return live, unreadable


def run(ctx: JobContext) -> JobResult:
    if not ctx.root.is_dir():
        raise JobSkipped(f"workspace folder {ctx.root} is missing")
    now = ctx.now.timestamp()
    forgets_since = now - ctx.config.sync.tombstone_days * DAY_S
    jobs = ctx.config.jobs
    # fallback_summary takes a session with records as flushed, as long as it looks back.
    lines_since = (
        now - max(jobs.ledger_compaction.keep_days, jobs.fallback_summary.max_age_days) * DAY_S
    )
    ledger = ledger_for(ctx.root)
    records = ledger.records()
    live, unreadable = _keys(ctx.root, sorted({r.path for r in records}))
    planned = droppable(records, live, forgets_since, lines_since)
    files = sorted({records[i].path for i in planned})
    report: dict[str, Any] = {"records": len(ledger), "files": len(files)}
    if unreadable:
        report["unreadable"] = unreadable[:MAX_LISTED]
    if ctx.dry_run:
        counts: dict[str, int] = {}
        for i in planned:
            counts[records[i].op] = counts.get(records[i].op, 0) + 1
        report.update(_counts(counts))
        return JobResult(f"dry run: would {_summary(report, future=True)}; nothing changed", report)
    ctx.check_cancelled()
    with ctx.locks.locked(ctx.root / rel for rel in files):
        live, _ = _keys(ctx.root, files)
        done = ledger.compact(live, forgets_since, lines_since)
    report.update(_counts(done), kept=len(ledger))
    return JobResult(_summary(report), report)


def _counts(by_op: dict[str, int]) -> dict[str, int]:
    out = {name: by_op.get(op, 0) for op, name in _NAMES.items()}
    out["dropped"] = sum(out.values())
    return out


def _summary(report: dict[str, Any], future: bool = False) -> str:
    if not report["dropped"]:
        return f"keep all {report['records']} ledger records" if future else "nothing to drop"
    parts = ", ".join(f"{report[n]} {n}" for n in _NAMES.values() if report[n])
    verb = "drop" if future else "dropped"
    return f"{verb} {report['dropped']} of {report['records']} ledger records ({parts})"
