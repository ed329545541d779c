"""Damage found at run time: what was found, the rebuild's progress, and its retries.

A read or a write that meets SQLITE_CORRUPT or SQLITE_NOTADB reports it here (any thread);
the index's writer thread then moves the file aside and rebuilds it (workspace.py). This
holds what status and the searches say meanwhile (found, rebuilding with its progress,
rebuilt, or failing) and the back-off of a rebuild that could not make the new file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import apsw

from memoryd import sqlite
from memoryd.index.types import SyncProgress
from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.index")

# A rebuild that could not make the new file (disk full...) is tried again after this,
# doubling up to the maximum, as the watcher retries a failed sync.
REBUILD_RETRY_FIRST_S = 1.0
REBUILD_RETRY_MAX_S = 300.0


def unmasked(exc: Exception) -> Exception:
    """The error behind a failed rollback: when a write fails on a full disk or an I/O
    error, SQLite rolls the whole transaction back itself, and the savepoint's rollback
    that follows fails 'no transaction is active', which said nothing of why."""
    ctx = exc.__context__
    if (
        isinstance(exc, apsw.SQLError)
        and "no transaction is active" in str(exc)
        and isinstance(ctx, Exception)
    ):
        return ctx
    return exc


def corruption_in(exc: BaseException) -> BaseException | None:
    """The SQLITE_CORRUPT / SQLITE_NOTADB error behind ``exc`` (itself, or what it was raised
    from or during, e.g. a ROLLBACK after a failed write), or None."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, sqlite.CORRUPTION):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None


class Damage:
    def __init__(self, root: Path, db_path: Path, retry: Callable[[], None]) -> None:
        """``retry``: queues a sync, which rebuilds (called on a timer thread)."""
        self.root = root
        self.db_path = db_path
        self._retry = retry
        self._lock = threading.Lock()
        self._closed = False
        self.found: str | None = None  # what was found, until the file is swapped
        self.rebuilding: str | None = None  # what searches and status say while it fills
        self.rebuilt: str | None = None  # what status says once it is full (kept)
        self._done: str | None = None  # the words rebuilt takes once the rebuild ends
        self._progress: SyncProgress | None = None
        self._failures = 0
        self.error: str | None = None  # why the last rebuild failed, with its retry
        self._timer: threading.Timer | None = None

    def report(self, exc: BaseException, where: str) -> bool:
        """A read or a write found the file damaged: True when it is news (a rebuild is
        due), False when it was known already or the index is closing."""
        with self._lock:
            if self._closed or self.found is not None:
                return False
            self.found = f"{type(exc).__name__} while {where}: {exc}"
        log.error(
            "index_corrupt",
            workspace=str(self.root),
            path=str(self.db_path),
            problem=self.found,
            action="moving it aside and rebuilding from the markdown files while serving",
        )
        return True

    def check(self, exc: BaseException, where: str) -> None:
        """Any thread: when ``exc`` says the file is damaged, as ``spotted``."""
        if (found := corruption_in(exc)) is not None:
            self.spotted(found, where)

    def spotted(self, exc: BaseException, where: str, schedule: bool = True) -> None:
        """Any thread: a read or a write found the file damaged. The writer thread moves it
        aside and rebuilds it at its next sync (``schedule``: one is queued now)."""
        if self.report(exc, where) and schedule:
            self._retry()

    def message(self) -> str:
        return (
            f"the index of {self.root} was found damaged ({self.found or 'unknown'}); it is "
            "being rebuilt from the files: try again in a moment"
        )

    def swapped(self, problem: str, aside: Path) -> None:
        """The damaged file went to ``aside`` and a new one is open: the rebuild fills it."""
        with self._lock:
            self.found = None
        self._failures, self.error, self._progress, self.rebuilt = 0, None, None, None
        found = f"index was found damaged at run time ({problem}) and moved to {aside.name}"
        self.rebuilding = (
            f"{found}; rebuilding it from the files: results may be incomplete until then"
        )
        self._done = f"{found}; rebuilt from the files"
        log.warning("index_rebuilding", workspace=str(self.root), moved_to=str(aside))

    def finished(self) -> None:
        self.rebuilt, self.rebuilding = self._done, None
        log.info("index_rebuilt", workspace=str(self.root))

    def progress_to(
        self, progress: Callable[[SyncProgress], None] | None
    ) -> Callable[[SyncProgress], None]:
        """The rebuild's progress, kept for status and passed on to ``progress``."""

        def both(p: SyncProgress) -> None:
            self._progress = p  # a plain store; status reads it
            if progress is not None:
                progress(p)

        return both

    def failed(self, exc: BaseException) -> str:
        """The new file could not be made (or is damaged too): try again later, backing off
        from 1 s to 5 min. Returns what reads answer (``unavailable``) meanwhile."""
        self._failures += 1
        delay = min(REBUILD_RETRY_MAX_S, REBUILD_RETRY_FIRST_S * 2 ** (self._failures - 1))
        self.error = (
            f"{self.message()}; rebuilding failed {self._failures} time(s) "
            f"({type(exc).__name__}: {exc}), retried in {delay:.0f} s"
        )
        log.error(
            "index_rebuild_failed",
            workspace=str(self.root),
            error=f"{type(exc).__name__}: {exc}",
            failures=self._failures,
            retry_in_s=delay,
        )
        with self._lock:
            if not self._closed:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = threading.Timer(delay, self._retry)
                self._timer.daemon = True
                self._timer.start()
        return self.error

    def words(self) -> list[str]:
        """Status's words for it now: failing, found, rebuilding (with progress), or none."""
        if self.error is not None:
            return [self.error]
        if self.found is not None:
            return [self.message()]
        rebuilding, p = self.rebuilding, self._progress
        if rebuilding is None:
            return []
        if p is not None and p.total:
            rebuilding += f" ({p.phase} {p.done} of {p.total} files)"
        return [rebuilding]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
