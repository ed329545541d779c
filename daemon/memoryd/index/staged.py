"""What the in-memory copies of the index share: they follow the writer's *committed*
transactions only.

A copy stages the changes of the writer's open transaction; the apsw commit hook applies
them, the rollback hook discards them. When applying fails, or the commit itself fails
after the hook ran (the rollback hook follows), the copy is dropped and ``on_stale`` asks
for a reload; until then the copy answers nothing and the caller asks SQLite.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import apsw

Op = TypeVar("Op")


class StagedMirror(Generic[Op]):
    def __init__(self, max_bytes: int, on_stale: Callable[[], None] = lambda: None) -> None:
        self.max_bytes = max_bytes
        self.on_stale = on_stale  # the copy may differ from the store: reload it (writer thread)
        self._lock = threading.Lock()
        self._loaded = False
        self._too_big = False
        self._failed = False  # the last load raised: the caller's store answers until the next
        self._staged: list[Op] = []  # the writer's open transaction; applied at commit
        self._unconfirmed = False  # ops applied by the commit hook, commit not yet known good
        self._missed = False  # a change of the open transaction could not be staged

    def follow(self, conn: apsw.Connection, name: str) -> None:
        """Apply what is staged when ``conn`` commits; forget it when it rolls back."""
        conn.set_commit_hook(self.commit, id=name)
        conn.set_rollback_hook(self.rollback, id=name)

    def _apply(self, ops: list[Op]) -> None:
        """Apply committed ops; called with the lock held."""
        raise NotImplementedError

    def _drop(self) -> None:
        """Forget the copy; called with the lock held."""
        raise NotImplementedError

    def _begin_load(self) -> None:
        with self._lock:
            self._drop()
            self._too_big = self._failed = False
            self._loaded = False
            self._staged, self._unconfirmed, self._missed = [], False, False

    # Staged ops wait for the outermost transaction's commit or rollback hook: the writer's
    # ``with conn:`` blocks are never nested (a rolled-back inner savepoint fires no hook).

    def _stage(self, ops: list[Op]) -> None:
        if self.max_bytes > 0:
            # A new transaction writes: the last commit went through (a failed one rolls back).
            self._unconfirmed = False
            self._staged += ops

    def missed(self) -> None:
        """A change of the open transaction may be staged wrongly (a savepoint rolled back
        after staging): reload after the commit."""
        self._stage_missed()

    def _stage_missed(self) -> None:
        """Staging a change failed: the copy cannot follow this transaction. The write itself
        goes on (the index matters more than this copy of it); its commit makes the copy
        reload."""
        self._missed = True

    def commit(self) -> bool:
        """apsw commit hook (just before the commit): apply what the transaction staged.

        Never fails the commit: the index matters more than this copy of it."""
        staged, self._staged = self._staged, []
        if self._missed:
            self._missed = False
            self._go_stale()
            return False
        if not staged:
            return False
        try:
            with self._lock:
                self._apply(staged)
            self._unconfirmed = True
        except Exception:
            self._go_stale()
        return False

    def rollback(self) -> None:
        """apsw rollback hook: forget the staged ops; after a failed commit, reload."""
        self._staged, self._missed = [], False
        if self._unconfirmed:  # or a later transaction that staged nothing: a spare reload
            self._go_stale()

    def _go_stale(self) -> None:
        self._unconfirmed = False
        with self._lock:
            self._loaded = False  # answers None: SQLite until the reload
            self._drop()
        self.on_stale()

    @property
    def usable(self) -> bool:
        return self._loaded and not self._too_big and not self._failed and self.max_bytes > 0
