"""OpenClaw's sessions kept searchable: for each workspace registered as OpenClaw's (with its
home, ``workspace.add openclaw_home``) and while ``index.sessions`` is on, the agent stores
under that home are polled; a store that changed (its database or WAL file) has its new rows
copied to ``sessions/openclaw/<agent>/<session>.jsonl`` (files/openclaw_mirror.py) and those
files are handed to the index at once, as ``append`` does.

A store that cannot be read (missing, locked past the busy timeout, damaged) is a line in
that workspace's status and is tried again at the next change; nothing else waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from memoryd.files.provenance import ledger_for
from memoryd.runtime.logs import get_logger
from memoryd.runtime.state import StateDB
from memoryd.workspace.registry import Registry
from memoryd.workspace.served import Workspace
from memoryd.workspace.watcher import Watcher

if TYPE_CHECKING:
    from memoryd.files.openclaw_mirror import StoreReport

log = get_logger("memoryd.workspace.openclaw_sessions")
POLL_S: Final = 1.0  # how often the stores' files are stat'ed (a read only when they changed)


class StateMarks:
    """How far each session was copied, in the state database (openclaw_mirror.Marks)."""

    def __init__(self, state: StateDB, workspace: Path) -> None:
        self.state, self.workspace = state, str(workspace)

    def of(self, store: Path) -> dict[str, int]:
        with self.state.lock:
            rows = self.state.conn.execute(
                "SELECT session_id, seq FROM openclaw_mirrored "
                "WHERE workspace_path = ? AND store = ?",
                (self.workspace, str(store)),
            ).fetchall()
        return {str(s): int(cast(int, q)) for s, q in rows}

    def set(self, store: Path, session: str, seq: int) -> None:
        with self.state.lock, self.state.conn:
            self.state.conn.execute(
                "INSERT INTO openclaw_mirrored(workspace_path, store, session_id, seq) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET seq = excluded.seq",
                (self.workspace, str(store), session, seq),
            )


def home_of(state: StateDB, workspace: Path) -> Path | None:
    """The OpenClaw home a workspace was registered with, if it is OpenClaw's."""
    with state.lock:
        row = state.conn.execute(
            "SELECT home FROM openclaw_homes WHERE workspace_path = ?", (str(workspace),)
        ).fetchone()
    return Path(str(row[0])) if row else None


def set_home(state: StateDB, workspace: Path, home: Path) -> None:
    state.set_openclaw_home(workspace, home)  # kept in workspaces.json too


class OpenClawSessions:
    def __init__(
        self, state: StateDB, registry: Registry, watcher: Watcher, sessions_on: Any
    ) -> None:
        self.state, self.registry, self.watcher = state, registry, watcher
        self._sessions_on = sessions_on  # () -> bool: index.sessions of the current config
        self._seen: dict[tuple[str, str], tuple[int, ...]] = {}  # (workspace, store) -> sig
        self._reports: dict[str, dict[str, StoreReport]] = {}  # workspace -> store -> last
        # (workspace, store) -> archived (session, generation) pairs read by this process
        self._archives: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._wake = asyncio.Event()
        self._stopping = threading.Event()  # seen by the copying thread between sessions

    def poke(self) -> None:
        """Look now (a workspace was registered as OpenClaw's)."""
        self._wake.set()

    async def stop(self, task: asyncio.Task[None]) -> None:
        """Let a copy in progress end at its next session (the state database closes
        after this), then end the loop."""
        self._stopping.set()
        self._wake.set()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(task, 5.0)

    async def run(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.pass_once()
            except Exception:  # never stops: the next change is tried again
                log.exception("openclaw_sessions_failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), POLL_S)
            self._wake.clear()

    async def pass_once(self) -> None:
        if not self._sessions_on():
            return
        for ws in self.registry.list():
            if ws.index is None or self._stopping.is_set():
                continue
            home = await asyncio.to_thread(home_of, self.state, ws.root)
            if home is None:
                continue
            files = await asyncio.to_thread(self._mirror_workspace, ws.root, home)
            if files:
                await self.watcher.sync_now(ws.name, ws.index, files, 0.0)

    def _mirror_workspace(self, root: Path, home: Path) -> list[Path]:
        # Here and in status: only an OpenClaw workspace reads a store, and a daemon's first
        # answer waits for no copy (the mirror, its archives and zstd: ~20 M instructions).
        from memoryd.files import openclaw_mirror

        stores = openclaw_mirror.find_stores(home)
        reports = self._reports.setdefault(str(root), {})
        for gone in set(reports) - {str(s) for s in stores}:
            del reports[gone]
        marks = StateMarks(self.state, root)
        files: list[Path] = []
        for store in stores:
            if self._stopping.is_set():
                break
            sig = openclaw_mirror.signature(store)
            key = (str(root), str(store))
            if self._seen.get(key) == sig:
                continue
            report = openclaw_mirror.mirror_store(
                store,
                root,
                marks,
                self._stopping.is_set,
                ledger_for(root).forgotten_sessions,
                self._archives.setdefault(key, set()),
            )
            before = reports.get(str(store))
            report.rows_read_total = report.rows_read + (before.rows_read_total if before else 0)
            reports[str(store)] = report
            if report.error is None:
                self._seen[key] = sig  # a failed read is tried again at the next poll
            else:
                self._seen.pop(key, None)
                log.warning("openclaw_store_unreadable", store=str(store), error=report.error)
            files += report.files
        return files

    def status(self, ws: Workspace) -> dict[str, Any] | None:
        """The workspace's OpenClaw stores for ``status`` (None: not OpenClaw's)."""
        home = home_of(self.state, ws.root)
        if home is None:
            return None
        out: dict[str, Any] = {"home": str(home), "sessions_indexed": self._sessions_on()}
        reports = list(self._reports.get(str(ws.root), {}).values())
        out["stores"] = [r.to_dict() for r in reports]
        if not self._sessions_on():
            out["note"] = "index.sessions is off: OpenClaw's sessions are not copied or indexed"
        elif not _stores_under(home):
            out["note"] = f"no OpenClaw agent store under {home / 'agents'} yet"
        return out

    def problems(self, ws: Workspace) -> list[str]:
        """Stores that could not be read, for the workspace's ``degraded``."""
        reports = list(self._reports.get(str(ws.root), {}).values())
        return [
            f"OpenClaw store {r.path} cannot be read: {r.error}"
            for r in reports
            if r.error is not None
        ]


def _stores_under(home: Path) -> list[Path]:
    from memoryd.files import openclaw_mirror

    return openclaw_mirror.find_stores(home)
