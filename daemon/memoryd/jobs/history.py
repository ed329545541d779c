"""Job run records, schedule anchors and handled sessions, in the state database.

Every run is a row written when it starts (status ``running``) and completed when it ends,
so a daemon that dies mid-run leaves a trace: the next start marks such rows ``failed``.
Old rows are pruned per (job, workspace), keeping the latest ``KEEP_RUNS``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memoryd.runtime.state import StateDB

KEEP_RUNS: Final = 200
STATUSES: Final = ("ok", "skipped", "failed")
_COLUMNS: Final = (
    "id, job, workspace_path, workspace, trigger, dry_run, scheduled_for, "
    "started_at, ended_at, status, message, report"
)


def iso(stamp: float | None, tz: dt.tzinfo) -> str | None:
    """Unix seconds as local ISO 8601 with its offset (None stays None)."""
    if stamp is None:
        return None
    return dt.datetime.fromtimestamp(stamp, tz).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunRecord:
    id: int
    job: str
    workspace_path: str
    workspace: str
    trigger: str
    dry_run: bool
    scheduled_for: float | None
    started_at: float
    ended_at: float | None
    status: str
    message: str
    report: dict[str, Any]

    def to_dict(self, tz: dt.tzinfo) -> dict[str, Any]:
        seconds = None if self.ended_at is None else round(self.ended_at - self.started_at, 3)
        return {
            "id": self.id,
            "job": self.job,
            "workspace": self.workspace,
            "path": self.workspace_path,
            "trigger": self.trigger,
            "dry_run": self.dry_run,
            "scheduled_for": iso(self.scheduled_for, tz),
            "started_at": iso(self.started_at, tz),
            "ended_at": iso(self.ended_at, tz),
            "seconds": seconds,
            "status": self.status,
            "message": self.message,
            "report": self.report,
        }


def _record(row: Any) -> RunRecord:
    (id_, job, path, name, trigger, dry_run, scheduled, started, ended, status, message, report) = (
        row
    )
    try:
        parsed = json.loads(report)
    except ValueError:
        parsed = {}
    return RunRecord(
        int(id_),
        str(job),
        str(path),
        str(name),
        str(trigger),
        bool(dry_run),
        None if scheduled is None else float(scheduled),
        float(started),
        None if ended is None else float(ended),
        str(status),
        str(message),
        parsed if isinstance(parsed, dict) else {},
    )


class History:
    """Blocking, thread-safe: every use of the one state connection holds the state's lock
    (the event loop and job threads share it; apsw refuses concurrent use)."""

    def __init__(self, state: StateDB) -> None:
        self.state = state  # other readers of the state (hippocampus: the hit counts)
        self.conn = state.conn
        self.lock = state.lock

    # -- runs --------------------------------------------------------------------------

    def start(
        self,
        job: str,
        root: Path,
        workspace: str,
        *,
        trigger: str,
        dry_run: bool,
        scheduled_for: float | None,
        started_at: float,
    ) -> int:
        with self.lock, self.conn:
            self.conn.execute(
                "INSERT INTO job_runs(job, workspace_path, workspace, trigger, dry_run, "
                "scheduled_for, started_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'running')",
                (job, str(root), workspace, trigger, int(dry_run), scheduled_for, started_at),
            )
            run_id = int(self.conn.last_insert_rowid())
        return run_id

    def finish(
        self, run_id: int, status: str, message: str, report: dict[str, Any], ended_at: float
    ) -> RunRecord:
        assert status in STATUSES, status
        text = json.dumps(report, default=str, ensure_ascii=False)
        with self.lock, self.conn:
            self.conn.execute(
                "UPDATE job_runs SET status = ?, message = ?, report = ?, ended_at = ? "
                "WHERE id = ?",
                (status, message, text, ended_at, run_id),
            )
            row = self.conn.execute(
                f"SELECT {_COLUMNS} FROM job_runs WHERE id = ?", (run_id,)
            ).fetchone()
            assert row is not None, f"job run {run_id} vanished"
            job, path = row[1], row[2]
            self.conn.execute(
                "DELETE FROM job_runs WHERE job = ? AND workspace_path = ? AND id <= ("
                "SELECT id FROM job_runs WHERE job = ? AND workspace_path = ? "
                "ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (job, path, job, path, KEEP_RUNS),
            )
        return _record(row)

    def checkpoint(self, run_id: int, report: dict[str, Any]) -> None:
        """Record a running run's report so far: what a kill leaves behind says what the
        run had done (e.g. ``writing``: the file and the sha256 it was about to hold)."""
        text = json.dumps(report, default=str, ensure_ascii=False)
        with self.lock, self.conn:
            self.conn.execute(
                "UPDATE job_runs SET report = ? WHERE id = ? AND status = 'running'", (text, run_id)
            )

    def mark_interrupted(self, ended_at: float) -> int:
        """Runs left ``running`` by a daemon that stopped mid-run become ``failed``, unless
        their checkpoint says they were writing a file that now holds what they wrote: the
        run did its work (only what follows the write, a git commit or a reindex, may be
        missing), so it is ``ok`` and says so."""
        with self.lock, self.conn:
            rows = self.conn.execute(
                f"SELECT {_COLUMNS} FROM job_runs WHERE status = 'running'"
            ).fetchall()
            for row in rows:
                run = _record(row)
                status, message = "failed", "interrupted: the daemon stopped during the run"
                if _wrote(Path(run.workspace_path), run.report.get("writing")):
                    status = "ok"
                    message = (
                        f"{run.report['writing']['path']} was written; the daemon "
                        "stopped before the run finished (a git commit or reindex may "
                        "be missing)"
                    )
                self.conn.execute(
                    "UPDATE job_runs SET status = ?, ended_at = ?, message = ? WHERE id = ?",
                    (status, ended_at, message, run.id),
                )
        return len(rows)

    def recent(
        self, job: str, root: Path, limit: int = 1, *, include_dry_runs: bool = True
    ) -> list[RunRecord]:
        where = "" if include_dry_runs else " AND dry_run = 0"
        with self.lock:
            rows = self.conn.execute(
                f"SELECT {_COLUMNS} FROM job_runs WHERE job = ? AND workspace_path = ?{where} "
                "ORDER BY id DESC LIMIT ?",
                (job, str(root), limit),
            ).fetchall()
        return [_record(r) for r in rows]

    def last(self, job: str, root: Path) -> RunRecord | None:
        found = self.recent(job, root, 1)
        return found[0] if found else None

    def last_ok(self, job: str, root: Path) -> RunRecord | None:
        """The latest successful run that was not a dry run."""
        with self.lock:
            row = self.conn.execute(
                f"SELECT {_COLUMNS} FROM job_runs WHERE job = ? AND workspace_path = ? "
                "AND status = 'ok' AND dry_run = 0 ORDER BY id DESC LIMIT 1",
                (job, str(root)),
            ).fetchone()
        return None if row is None else _record(row)

    # -- schedule anchors (catch-up) ---------------------------------------------------

    def anchor(self, job: str, root: Path) -> float | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT anchor FROM job_schedule WHERE job = ? AND workspace_path = ?",
                (job, str(root)),
            ).fetchone()
        return None if row is None else float(row[0])

    def set_anchor(self, job: str, root: Path, when: float) -> None:
        with self.lock, self.conn:
            self.conn.execute(
                "INSERT INTO job_schedule(job, workspace_path, anchor) VALUES (?, ?, ?) "
                "ON CONFLICT(job, workspace_path) DO UPDATE SET anchor = excluded.anchor",
                (job, str(root), when),
            )

    # -- sessions handled by the fallback summary --------------------------------------

    def session_outcome(self, root: Path, session: str) -> str | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT outcome FROM job_sessions WHERE workspace_path = ? AND session = ?",
                (str(root), session),
            ).fetchone()
        return None if row is None else str(row[0])

    def record_session(
        self,
        root: Path,
        session: str,
        outcome: str,
        done_at: float,
        daily_path: str | None = None,
        daily_mtime_ns: int | None = None,
    ) -> None:
        with self.lock, self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO job_sessions(workspace_path, session, outcome, "
                "daily_path, daily_mtime_ns, done_at) VALUES (?, ?, ?, ?, ?, ?)",
                (str(root), session, outcome, daily_path, daily_mtime_ns, done_at),
            )

    def is_own_append(self, root: Path, daily_path: str, mtime_ns: int) -> bool:
        """Whether a daily file's mtime is the one our own summary append left."""
        with self.lock:
            row = self.conn.execute(
                "SELECT 1 FROM job_sessions WHERE workspace_path = ? AND daily_path = ? "
                "AND daily_mtime_ns = ?",
                (str(root), daily_path, mtime_ns),
            ).fetchone()
        return row is not None

    # -- transcripts read by flush ------------------------------------------------------

    def flush_offset(self, transcript: Path, session: str) -> tuple[int, int]:
        """(bytes, lines) of the transcript already flushed for the session; (0, 0) first."""
        with self.lock:
            row = self.conn.execute(
                "SELECT offset, line FROM flush_offsets WHERE transcript = ? AND session = ?",
                (str(transcript), session),
            ).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def transcripts_of(self, session: str) -> list[str]:
        """The transcripts flush read for ``session`` (forget --session)."""
        with self.lock:
            rows = self.conn.execute(
                "SELECT DISTINCT transcript FROM flush_offsets WHERE session = ?", (session,)
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def flushed_lines(self, transcript: Path) -> int:
        """How many lines of ``transcript`` a flush took notes of, any session (0: none);
        the path as given or with its links resolved, as flush may have named it."""
        names = sorted({str(transcript), os.path.realpath(transcript)})
        # flush is named its path in JSON: a name that is not UTF-8 was never flushed
        names = [n for n in names if _utf8(n)]
        if not names:
            return 0
        with self.lock:
            row = self.conn.execute(
                f"SELECT max(line) FROM flush_offsets WHERE transcript IN "
                f"({', '.join('?' * len(names))})",
                names,
            ).fetchone()
        return 0 if row is None or row[0] is None else int(row[0])

    def set_flush_offset(
        self, transcript: Path, session: str, offset: int, line: int, root: Path, when: float
    ) -> None:
        with self.lock, self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO flush_offsets(transcript, session, offset, line, "
                "workspace_path, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (str(transcript), session, offset, line, str(root), when),
            )


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _wrote(root: Path, writing: Any) -> bool:
    """Whether ``root / writing["path"]`` holds the bytes whose sha256 the run recorded."""
    if not isinstance(writing, dict):
        return False
    path, digest = writing.get("path"), writing.get("sha256")
    if not isinstance(path, str) or not isinstance(digest, str):
        return False
    try:
        data = (root / path).read_bytes()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == digest
