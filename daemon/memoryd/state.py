"""The daemon's own state database (``Paths.state_db``): registered workspaces, later jobs.

Migrations are named and recorded in a ``migrations`` table; each runs once, in its own
transaction. To add one, append ``(name, sql)`` to ``MIGRATIONS`` (never edit or reorder
applied ones): the next start applies it.
"""

from __future__ import annotations

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
]


class StateError(MemorydError):
    """The state database cannot be opened or migrated."""


@dataclass(frozen=True)
class RegisteredWorkspace:
    name: str
    path: Path
    added_at: float


class StateDB:
    """A small apsw connection wrapper; apsw serialises calls, so any thread may use it."""

    def __init__(self, path: Path, migrations: list[tuple[str, str]] | None = None) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = apsw.Connection(str(path))
        except apsw.Error as exc:
            raise StateError(f"cannot open the state database {path}: {exc}") from None
        try:
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
        return [row[0] for row in
                self.conn.execute("SELECT name FROM migrations ORDER BY name")]

    def workspaces(self) -> list[RegisteredWorkspace]:
        rows = self.conn.execute("SELECT name, path, added_at FROM workspaces ORDER BY added_at")
        return [RegisteredWorkspace(str(n), Path(str(p)), float(a)) for n, p, a in rows]

    def add_workspace(self, name: str, path: Path) -> None:
        with self.conn:
            self.conn.execute("INSERT INTO workspaces(name, path, added_at) VALUES (?, ?, ?)",
                              (name, str(path), time.time()))

    def remove_workspace(self, path: Path) -> bool:
        with self.conn:
            self.conn.execute("DELETE FROM workspaces WHERE path = ?", (str(path),))
            removed = self.conn.changes() > 0
        return removed

    def close(self) -> None:
        self.conn.close()
