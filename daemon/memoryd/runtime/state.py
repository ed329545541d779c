"""The daemon's own state database (``Paths.state_db``): registered workspaces, job history.

Opened by the one connection factory and migrated by the one runner (sqlite.py). To add
a migration, append ``(name, sql)`` to ``MIGRATIONS`` (never edit or reorder applied ones):
the next start applies it.

It is not a single point of failure. A damaged file (scribbled, not a database) is moved
aside to ``state.sqlite.corrupt`` and a new one made; a file that lost its tables
(truncated to nothing) is noticed. Either way the registered workspaces come back from
``workspaces.json``, a plain-text copy of the registry rewritten (atomically) on every
change, with each workspace's OpenClaw home when it has one; job history starts again (and
how far OpenClaw's sessions were copied: files/openclaw_mirror.py resumes from the copies).
``recovered`` says what happened, for status and logs.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import apsw

from memoryd import sqlite
from memoryd.errors import MemorydError
from memoryd.records import Record
from memoryd.runtime.logs import get_logger

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

log = get_logger("memoryd.runtime.state")
REGISTRY_COPY = "workspaces.json"

MIGRATIONS: Final[list[sqlite.Migration]] = [
    (
        "0001_workspaces",
        """
        CREATE TABLE workspaces (
            path TEXT PRIMARY KEY,  -- resolved; the name may be changed to stay unique
            name TEXT NOT NULL,
            added_at REAL NOT NULL
        );
    """,
    ),
    # Scheduled jobs (memoryd/jobs/history.py). Times are Unix seconds; workspaces are keyed
    # by their resolved path, which survives a rename.
    (
        "0002_job_runs",
        """
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
    """,
    ),
    (
        "0003_job_schedule",
        """
        CREATE TABLE job_schedule (
            job TEXT NOT NULL,
            workspace_path TEXT NOT NULL,
            anchor REAL NOT NULL,  -- the last slot handled (or when first seen): for catch-up
            PRIMARY KEY (job, workspace_path)
        );
    """,
    ),
    (
        "0004_job_sessions",
        """
        CREATE TABLE job_sessions (  -- fallback summary: each transcript is handled once
            workspace_path TEXT NOT NULL,
            session TEXT NOT NULL,  -- workspace-relative transcript path
            outcome TEXT NOT NULL,  -- summarised | wrote_daily | empty
            daily_path TEXT,  -- where the summary went
            daily_mtime_ns INTEGER,  -- that file's mtime right after our append
            done_at REAL NOT NULL,
            PRIMARY KEY (workspace_path, session)
        );
    """,
    ),
    (
        "0005_flush_offsets",
        """
        CREATE TABLE flush_offsets (  -- flush: how far each session's transcript was read
            transcript TEXT NOT NULL,  -- absolute path (Claude Code keeps them outside)
            session TEXT NOT NULL,
            offset INTEGER NOT NULL,  -- bytes read, up to a line end
            line INTEGER NOT NULL,  -- lines read
            workspace_path TEXT NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (transcript, session)
        );
    """,
    ),
    (
        "0006_line_hits",
        """
        CREATE TABLE line_hits (  -- how often search/recall returned a memory line (26)
            workspace_path TEXT NOT NULL,
            key TEXT NOT NULL,  -- files/lines.py line_key
            sample TEXT NOT NULL,  -- the line as last seen, for status
            hits INTEGER NOT NULL,
            last_at REAL NOT NULL,
            PRIMARY KEY (workspace_path, key)
        ) WITHOUT ROWID;
        CREATE TABLE line_hit_queries (  -- the distinct queries that returned it
            workspace_path TEXT NOT NULL,
            key TEXT NOT NULL,
            query TEXT NOT NULL,  -- a hash of the normalised query
            PRIMARY KEY (workspace_path, key, query)
        ) WITHOUT ROWID;
    """,
    ),
    # OpenClaw's sessions mirrored into its workspace (memoryd/files/openclaw_mirror.py).
    (
        "0007_openclaw_sessions",
        """
        CREATE TABLE openclaw_homes (  -- a workspace that is OpenClaw's: its home's stores
            workspace_path TEXT PRIMARY KEY,
            home TEXT NOT NULL
        );
        CREATE TABLE openclaw_mirrored (  -- the last seq of each session copied to the file
            workspace_path TEXT NOT NULL,
            store TEXT NOT NULL,
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (workspace_path, store, session_id)
        ) WITHOUT ROWID;
    """,
    ),
    # The query words that tied each (line, query) together: hippocampus weighs a return by
    # how specific they are in the notes (lifecycle/hits.py, jobs/curation.py).
    (
        "0008_line_hit_words",
        """
        ALTER TABLE line_hit_queries ADD COLUMN words TEXT NOT NULL DEFAULT '';
    """,
    ),
    # What each agent session read since its user's last message (jobs/session_trust.py):
    # a write of the session takes the least trusted origin of it (docs/provenance.md).
    (
        "0009_session_trust",
        """
        CREATE TABLE session_trust (
            session_id TEXT PRIMARY KEY,
            turn TEXT NOT NULL,  -- least trusted origin read since the user's last message
            stretch TEXT NOT NULL,  -- ... since the session's last flush (its notes)
            save TEXT,  -- the stretch a Stop-hook save was asked about, until the next message
            kind TEXT,  -- interactive | cron | heartbeat | subagent, when an observer said
            what TEXT,  -- what lowered it last (a tool, a path), for review and logs
            updated_at REAL NOT NULL
        ) WITHOUT ROWID;
    """,
    ),
    (
        "0010_exports_outside",
        """
        CREATE TABLE exports_outside (  -- archives export -o wrote outside the workspace
            path TEXT PRIMARY KEY,  -- absolute; a purge names those still as written
            workspace_path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            at REAL NOT NULL
        ) WITHOUT ROWID;
    """,
    ),
    (
        "0011_agent_usage",
        """
        CREATE TABLE agent_usage (  -- what memory costs each agent, per day (runtime/usage.py)
            day TEXT NOT NULL,
            agent TEXT NOT NULL,
            workspace_path TEXT NOT NULL,
            metric TEXT NOT NULL,
            value INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (day, agent, workspace_path, metric)
        ) WITHOUT ROWID;
        """,
    ),
]


class StateError(MemorydError):
    """The state database cannot be opened or migrated (and is not damaged: permissions,
    a full disk, a failing migration)."""


class _Damaged(Exception):
    """quick_check found the file damaged."""


@frozen_record(frozen=True, eq=False, repr=False)
class RegisteredWorkspace(Record):
    """A workspace added with ``workspace.add`` (the state database's row)."""

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

    def __init__(self, path: Path, migrations: list[sqlite.Migration] | None = None) -> None:
        self.path = path
        self.copy_path = path.with_name(REGISTRY_COPY)
        self.lock = threading.RLock()
        self.recovered: str | None = None  # what was rebuilt at open, and why
        existed = path.exists() and path.stat().st_size > 0
        try:
            self.conn, self.applied = self._open(migrations)
        except sqlite.CORRUPTION as exc:
            aside = sqlite.move_aside(path)
            self.recovered = (
                f"the state database was damaged ({type(exc).__name__}: {exc}); "
                f"moved to {aside.name} and rebuilt"
            )
            self.conn, self.applied = self._open(migrations)
        except _Damaged as exc:
            aside = sqlite.move_aside(path)
            self.recovered = (
                f"the state database was damaged ({exc}); moved to {aside.name} and rebuilt"
            )
            self.conn, self.applied = self._open(migrations)
        if self.recovered is None and not existed and self._copy_entries():
            self.recovered = "the state database was empty (truncated or deleted) and rebuilt"
        if self.recovered is not None:
            restored = self._restore_registry()
            self.recovered += (
                f"; {restored} registered workspace(s) restored from "
                f"{REGISTRY_COPY}, job history starts again"
            )
            log.error("state_recovered", path=str(path), detail=self.recovered)
        else:
            self._write_copy()  # a copy from before this version, or none yet

    def _open(self, migrations: list[sqlite.Migration] | None) -> tuple[apsw.Connection, list[str]]:
        try:
            conn = sqlite.connect(self.path, vectors=False)
        except sqlite.CORRUPTION:
            raise
        except apsw.Error as exc:
            raise StateError(f"cannot open the state database {self.path}: {exc}") from None
        try:
            with self.lock:
                problem = sqlite.quick_check(conn)
                if problem is not None:
                    raise _Damaged(problem)
                return conn, sqlite.migrate(conn, MIGRATIONS if migrations is None else migrations)
        except (*sqlite.CORRUPTION, _Damaged):
            conn.close()
            raise
        except apsw.Error as exc:
            conn.close()
            raise StateError(f"cannot open the state database {self.path}: {exc}") from None

    # -- the plain-text copy of the registry -----------------------------------------------

    def _copy_entries(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.copy_path.read_text(encoding="utf-8"))
            entries = data["workspaces"]
            return [
                e
                for e in entries
                if isinstance(e, dict)
                and isinstance(e.get("name"), str)
                and isinstance(e.get("path"), str)
            ]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def _restore_registry(self) -> int:
        restored = 0
        with self.lock, self.conn:
            for e in self._copy_entries():
                self.conn.execute(
                    "INSERT OR IGNORE INTO workspaces(name, path, added_at) VALUES (?, ?, ?)",
                    (e["name"], e["path"], float(e.get("added_at", time.time()))),
                )
                restored += self.conn.changes()
                if isinstance(e.get("openclaw_home"), str):
                    self.conn.execute(
                        "INSERT OR IGNORE INTO openclaw_homes(workspace_path, home) VALUES (?, ?)",
                        (e["path"], e["openclaw_home"]),
                    )
        return restored

    def _write_copy(self) -> None:
        """The registry as JSON beside the database: temp file, fsync, rename (0600)."""
        with self.lock:
            homes = dict(self.conn.execute("SELECT workspace_path, home FROM openclaw_homes"))
        entries: list[dict[str, Any]] = []
        for w in self.workspaces():
            entry: dict[str, Any] = {"name": w.name, "path": str(w.path), "added_at": w.added_at}
            if str(w.path) in homes:
                entry["openclaw_home"] = str(homes[str(w.path)])
            entries.append(entry)
        text = json.dumps({"workspaces": entries}, indent=1) + "\n"
        with contextlib.suppress(OSError):
            if self.copy_path.read_text(encoding="utf-8") == text:
                return  # every start checks it: no write (and no fsync) when it is current
        tmp = self.copy_path.with_name(f".{REGISTRY_COPY}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.copy_path)
        except OSError as exc:  # the database has it; the copy is a spare
            log.warning("registry_copy_failed", path=str(self.copy_path), error=str(exc))
            with contextlib.suppress(OSError):
                tmp.unlink()

    def migrations(self) -> list[str]:
        with self.lock:
            return [
                row[0] for row in self.conn.execute("SELECT name FROM migrations ORDER BY name")
            ]

    def workspaces(self) -> list[RegisteredWorkspace]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT name, path, added_at FROM workspaces ORDER BY added_at"
            )
            return [RegisteredWorkspace(str(n), Path(str(p)), float(a)) for n, p, a in rows]

    def add_workspace(self, name: str, path: Path) -> None:
        with self.lock:
            with self.conn:
                self.conn.execute(
                    "INSERT INTO workspaces(name, path, added_at) VALUES (?, ?, ?)",
                    (name, str(path), time.time()),
                )
            self._write_copy()

    def set_openclaw_home(self, path: Path, home: Path) -> None:
        """Mark a registered workspace as OpenClaw's (its home's session stores are copied)."""
        with self.lock:
            with self.conn:
                self.conn.execute(
                    "INSERT INTO openclaw_homes(workspace_path, home) VALUES (?, ?) "
                    "ON CONFLICT DO UPDATE SET home = excluded.home",
                    (str(path), str(home)),
                )
            self._write_copy()

    def remove_workspace(self, path: Path) -> bool:
        with self.lock:
            with self.conn:
                self.conn.execute("DELETE FROM workspaces WHERE path = ?", (str(path),))
                removed = self.conn.changes() > 0
                self.conn.execute(
                    "DELETE FROM openclaw_homes WHERE workspace_path = ?", (str(path),)
                )
            self._write_copy()
        return removed

    def close(self) -> None:
        with self.lock:
            self.conn.close()
