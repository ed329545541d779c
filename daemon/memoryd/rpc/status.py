"""The answer of ``status``: the daemon, its embedding provider and each workspace (its
index, watcher, jobs and startup scan), gathered from the parts that hold them."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import memoryd
from memoryd.files.layout import transcripts_in
from memoryd.lifecycle import journal
from memoryd.lifecycle.hits import HitCounter
from memoryd.records import Record
from memoryd.runtime.config import Config
from memoryd.secrets import mask
from memoryd.workspace.openclaw_sessions import OpenClawSessions
from memoryd.workspace.registry import Registry
from memoryd.workspace.served import Workspace
from memoryd.workspace.watcher import Watcher

if TYPE_CHECKING:
    from memoryd.fleet.service import FleetService  # psycopg: imported only in fleet mode
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.jobs.scheduler import Scheduler


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class StatusReport(Record):
    """The ``status`` answer, gathered from the parts that hold it."""

    registry: Registry
    scheduler: Callable[[], Scheduler]  # made on first use (services.py's upkeep)
    watcher: Watcher
    config: Callable[[], Config]  # the current one (a reload replaces it)
    socket_path: Path
    started_at: float  # monotonic
    server: Callable[[], dict[str, Any]]  # connections, refusals, held bytes, fd limit
    degraded: Callable[[], list[str]]  # the daemon's own problems (a workspace has its own)
    fleet: FleetService | None = None  # fleet mode when [fleet] is set...
    fleet_off: str | None = None  # ...else why not
    hits: HitCounter | None = None  # how often search/recall returned each line
    openclaw: OpenClawSessions | None = None  # OpenClaw's stores copied into its workspace

    async def build(self, items: list[Workspace]) -> dict[str, Any]:
        return {
            "version": memoryd.__version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started_at, 3),
            "socket": str(self.socket_path),
            "config_source": self.config().source or None,
            "provider": self.provider(),
            "server": self.server(),
            "degraded": self.degraded(),
            "workspaces": [
                masked(w) for w in await asyncio.gather(*(self.workspace(w) for w in items))
            ],
            **(
                {"fleet": self.fleet.local_status()}
                if self.fleet is not None
                else {"fleet": {"state": "off", "error": self.fleet_off}}
                if self.fleet_off
                else {}
            ),
        }

    def provider(self) -> dict[str, Any]:
        choice = self.registry.choice
        if choice is None:
            return {
                "name": "loading",
                "model": "",
                "dims": None,
                "reason": f"choosing {self.config().embedding.provider} provider",
            }
        p = choice.provider
        out: dict[str, Any] = {
            "name": p.name if p else "none",
            "model": p.model if p else "",
            "dims": p.dims if p else None,
            "reason": choice.reason,
        }
        if choice.fallback is not None:
            out["fallback"] = choice.fallback.status()
        return out

    async def workspace(self, ws: Workspace) -> dict[str, Any]:
        scheduler = self.scheduler()  # made here on first use (services.py's upkeep)
        index = ws.index
        # What blocks (the index's counts, the state database's job runs and hits, folders
        # listed) is read in one hop off the event loop, on its default executor: not
        # queued behind searches on the readers, and not one hop per part (each a thread
        # woken and the loop woken back: during a first index at load 4-8, 5-40 ms a
        # status; a part read on the loop held every other answer up).
        read = await asyncio.get_running_loop().run_in_executor(
            None, self._read, ws, index, scheduler
        )
        out: dict[str, Any] = {
            "name": ws.name,
            "path": str(ws.root),
            "source": ws.source,
            "jobs": read.pop("jobs"),
        }
        if index is None:
            out.update(
                files=0,
                chunks=0,
                pending_vectors=0,
                pending_files=0,
                last_sync=None,
                index_generation=0,
                vector_ready=False,
                skipped={},
                degraded=[ws.error or "opening the index"],
                watcher="not watched",
            )
            retry = ws.open_failing()
            if retry is not None:  # tried again by itself (registry.py, _open_failed)
                out["open_retry"] = retry
                out["degraded"] = [
                    f"the index could not be opened ({ws.error}); tried {retry['failures']} "
                    f"time(s), again in {retry['retry_in_s']:.0f} s"
                ]
            return out
        status = read.pop("index")
        out.update({k: v for k, v in status.items() if k not in out})
        out["pending_files"] = max(
            int(status.get("pending_files", 0)), self.watcher.pending(ws.name)
        )
        out["watcher"] = self.watcher.describe(ws.name)
        for failing in (ws.scan_failing(), self.watcher.failing(ws.name)):
            if failing:
                out["degraded"] = [*out.get("degraded", []), failing]
        scanning = ws.scan is not None and not ws.scan.done()
        scan: dict[str, Any] = {"running": scanning}
        if ws.scan_progress is not None and scanning:
            scan.update(ws.scan_progress.to_dict())
        if ws.scan_report is not None:
            scan["seconds"] = round(ws.scan_report.seconds, 3)
        if ws.scan_error is not None:
            scan["error"] = ws.scan_error
        out["startup_scan"] = scan
        if self.openclaw is not None and (oc := read.pop("openclaw", None)) is not None:
            out["openclaw"] = oc
            problems = self.openclaw.problems(ws)
            if problems:
                out["degraded"] = [*out.get("degraded", []), *problems]
        out.update(read)  # line_hits, sessions_left_out, forget_kept: each absent when none
        return out

    def _read(
        self, ws: Workspace, index: WorkspaceIndex | None, scheduler: Scheduler
    ) -> dict[str, Any]:
        """The blocking parts of a workspace's status (a worker thread): its jobs, and with
        an index, its counts and what the state and the workspace's folders say."""
        out: dict[str, Any] = {"jobs": scheduler.status_of(ws)}
        if index is None:
            return out
        out["index"] = index.status()
        if self.openclaw is not None:
            out["openclaw"] = self.openclaw.status(ws)
        if self.hits is not None:
            counted = self.hits.summary(ws.root)
            if counted is not None:  # absent until a search returned a memory line
                out["line_hits"] = counted
        if not self.config().index.sessions:
            left_out = transcripts_in(ws.root)
            if left_out:  # absent when there are none, or they are indexed
                out["sessions_left_out"] = left_out
        kept = journal.kept(ws.root)
        if kept.changes:  # what forget keeps (docs/lifecycle.md); absent when nothing
            out["forget_kept"] = {**kept.to_dict(), "keep_days": self.config().forget.keep_days}
        return out


def masked(entry: dict[str, Any]) -> dict[str, Any]:
    """A workspace's status with what memory files said masked, as search, get and recall
    mask it (secrets.py): the most returned lines (a hand-written secret in one must not be
    printed by ``memctl status``), and the reasons files were skipped or the index is
    degraded (they may quote a name or a line)."""
    hits = entry.get("line_hits")
    if isinstance(hits, dict):
        for top in hits.get("top") or ():
            if isinstance(top, dict) and isinstance(top.get("line"), str):
                top["line"] = mask(top["line"])
    skipped = entry.get("skipped")
    if isinstance(skipped, dict):
        entry["skipped"] = {k: mask(v) if isinstance(v, str) else v for k, v in skipped.items()}
    degraded = entry.get("degraded")
    if isinstance(degraded, list):
        entry["degraded"] = [mask(d) if isinstance(d, str) else d for d in degraded]
    return entry
