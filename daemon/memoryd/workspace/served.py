"""A workspace the daemon serves: where it is, its index once opened, how its opening and
its first scan went (the registry, workspace/registry.py, opens and scans it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import Unavailable
from memoryd.index.types import SyncProgress, SyncReport
from memoryd.records import Fields

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as fields_record
else:
    from memoryd.records import fields_record


if TYPE_CHECKING:  # the engine and numpy load in the background, after the socket is up
    from memoryd.index.workspace import WorkspaceIndex


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Workspace(Fields):
    """A workspace the daemon serves: where it is, and its index once opened."""

    name: str
    root: Path  # resolved
    source: str  # "config" | "registry"
    index: WorkspaceIndex | None = None  # None until opened (or when it cannot be)
    error: str | None = None  # why it is not usable
    scan: Future[SyncReport] | None = None  # the background scan after opening
    scan_progress: SyncProgress | None = None
    # Told the scan's progress too (a workspace.add waiting on its first scan), writer thread
    scan_listeners: list[Callable[[SyncProgress], None]] = field(default_factory=list)
    scan_started: float | None = None
    scan_report: SyncReport | None = None
    scan_failures: int = 0  # in a row; retried with back-off
    scan_error: str | None = None
    scan_retry_at: float = 0.0  # time.time() of the next try
    scan_retry: asyncio.TimerHandle | None = None
    opening: bool = False  # an open was started (exactly one per workspace)
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    open_failures: int = 0  # in a row; retried with back-off
    open_retry_at: float = 0.0  # time.time() of the next try
    open_retry: asyncio.TimerHandle | None = None

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.root), "source": self.source}

    def scan_failing(self) -> str | None:
        """Why the first scan failed and when it is tried again (None: it did not fail)."""
        if not self.scan_failures:
            return None
        wait = max(0.0, self.scan_retry_at - time.time())
        return (
            f"the first scan failed {self.scan_failures} time(s) in a row ({self.scan_error}); "
            f"retried in {wait:.0f} s"
        )

    def cancel_scan_retry(self) -> None:
        if self.scan_retry is not None:
            self.scan_retry.cancel()
            self.scan_retry = None
        if self.open_retry is not None:
            self.open_retry.cancel()
            self.open_retry = None

    def open_failing(self) -> dict[str, Any] | None:
        """Why the index could not be opened and when it is tried again (status)."""
        if not self.open_failures or self.index is not None:
            return None
        return {
            "failures": self.open_failures,
            "error": self.error,
            "retry_in_s": round(max(0.0, self.open_retry_at - time.time()), 1),
        }

    def usable_index(self) -> WorkspaceIndex:
        if self.index is None:
            raise Unavailable(
                f"workspace {self.name} is not available: {self.error or 'still opening'}",
                {"workspace": self.name},
            )
        return self.index
