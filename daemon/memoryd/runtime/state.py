"""The daemon's own state database (``Paths.state_db``): registered workspaces, later jobs.

Migrations are named and recorded in a ``migrations`` table; each runs once, in its own
transaction. To add one, append ``(name, sql)`` to ``MIGRATIONS`` (never edit or reorder
applied ones): the next start applies it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import apsw

from memoryd.errors import MemorydError

MIGRATIONS: Final[list[tuple[str, str]]] = [
    ("0001_workspaces", """
        CREATE TABLE workspaces (
            path TEXT PRIMARY KEY,  -- resolved; the name may be changed to stay unique
            name TEXT NOT NULL,
            added_at REAL NOT NULL
        );
    """),
    # Scheduled jobs (memoryd/jobs/history.py). Times are Unix seconds; workspaces are keyed
    # by their resolved path, which survives a rename.
    ("0002_job_runs", """
        CREATE TABLE job_runs (
            id INTEGER PRIMARY KEY,
            job TEXT NOT NULL,
            workspace_path TEXT NOT NULL,
            workspace TEXT NOT NULL,  -- its name at the time, for display
            trigger TEXT NOT NULL,  -- schedule | catch-up | manual
            dry_run INTEGER NOT NULL DEFAULT 0,
            scheduled_for REAL,  -- the schedule slot (NULL for a manual run)
            started_at REAL NOT NULL,
            ended_at REAL,
            status TEXT NOT NULL,  -- running | ok | skipped | failed
            message TEXT NOT NULL DEFAULT '',
            report TEXT NOT NULL DEFAULT '{}'  -- a small JSON object
        );
        CREATE INDEX job_runs_by_job ON job_runs(job, workspace_path, id);
    """),
    ("0003_job_schedule", """
        CREATE TABLE job_schedule (
            job TEXT NOT NULL,
            workspace_path TEXT NOT NULL,
            anchor REAL NOT NULL,  -- the last slot handled (or when first seen): for catch-up
            PRIMARY KEY (job, workspace_path)
        );
    """),
    ("0004_job_sessions", """
        CREATE TABLE job_sessions (  -- fallback summary: each transcript is handled once
            workspace_path TEXT NOT NULL,
            session TEXT NOT NULL,  -- workspace-relative transcript path
            outcome TEXT NOT NULL,  -- summarised | wrote_daily | empty
            daily_path TEXT,  -- where the summary went
            daily_mtime_ns INTEGER,  -- that file's mtime right after our append
            done_at REAL NOT NULL,
            PRIMARY KEY (workspace_path, session)
        );
    """),
    ("0005_flush_offsets", """
        CREATE TABLE flush_offsets (  -- flush: how far each session's transcript was read
            transcript TEXT NOT NULL,  -- absolute path (Claude Code keeps them outside)
            session TEXT NOT NULL,
            offset INTEGER NOT NULL,  -- bytes read, up to a line end
            line INTEGER NOT NULL,  -- lines read
            workspace_path TEXT NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (transcript, session)
        );
    """),
]


class StateError(MemorydError):
    """The state database cannot be opened or migrated."""


@dataclass(frozen=True)
class RegisteredWorkspace:
    name: str
    path: Path
    added_at: float


class StateDB:
    """A small apsw connection wrapper that any thread may use.

    apsw refuses concurrent use of one connection ("Connection is busy in another thread":
    e.g. one thread iterating a cursor while another executes), and two threads' ``with
    conn:`` blocks would nest into one transaction. So every use of ``conn`` (here and in
    jobs/history.py) holds ``lock``, an RLock so that methods may call each other.
    """

    def __init__(self, path: Path, migrations: list[tuple[str, str]] | None = None) -> None:
        self.path = path
        self.lock = threading.RLock()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = apsw.Connection(str(path))
        except apsw.Error as exc:
            raise StateError(f"cannot open the state database {path}: {exc}") from None
        try:
            with self.lock:
                self.conn.set_busy_timeout(5000)
                self.conn.pragma("journal_mode", "wal")
                self.conn.pragma("synchronous", "normal")
                self.applied = self._migrate(MIGRATIONS if migrations is None else migrations)
        except apsw.Error as exc:
            self.conn.close()
            raise StateError(f"cannot open the state database {path}: {exc}") from None

    def _migrate(self, migrations: list[tuple[str, str]]) -> list[str]:
        """Apply the migrations not yet recorded; returns the names applied now."""
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL)")
        done = {row[0] for row in self.conn.execute("SELECT name FROM migrations")}
        applied = []
        for name, sql in migrations:
            if name in done:
                continue
            with self.conn:  # one transaction per migration: all of it or nothing
                self.conn.execute(sql)
                self.conn.execute("INSERT INTO migrations(name, applied_at) VALUES (?, ?)",
                                  (name, time.time()))
            applied.append(name)
        return applied

    def migrations(self) -> list[str]:
        with self.lock:
            return [row[0] for row in
                    self.conn.execute("SELECT name FROM migrations ORDER BY name")]

    def workspaces(self) -> list[RegisteredWorkspace]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT name, path, added_at FROM workspaces ORDER BY added_at")
            return [RegisteredWorkspace(str(n), Path(str(p)), float(a)) for n, p, a in rows]

    def add_workspace(self, name: str, path: Path) -> None:
        with self.lock, self.conn:
            self.conn.execute("INSERT INTO workspaces(name, path, added_at) VALUES (?, ?, ?)",
                              (name, str(path), time.time()))

    def remove_workspace(self, path: Path) -> bool:
        with self.lock, self.conn:
            self.conn.execute("DELETE FROM workspaces WHERE path = ?", (str(path),))
            removed = self.conn.changes() > 0
        return removed

    def close(self) -> None:
        with self.lock:
            self.conn.close()
