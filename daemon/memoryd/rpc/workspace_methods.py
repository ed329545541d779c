"""The methods that add, remove, list and index workspaces: ``workspace.add``,
``workspace.remove``, ``workspace.list`` and ``reindex`` (with progress events)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidParams
from memoryd.index.types import SyncProgress, SyncReport
from memoryd.rpc.params import Params
from memoryd.rpc.server import Emit, Request
from memoryd.workspace.openclaw_sessions import OpenClawSessions, set_home
from memoryd.workspace.registry import Registry
from memoryd.workspace.served import Workspace

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.rpc.dispatch import Handler

PROGRESS_INTERVAL_S = 0.1
HEARTBEAT_S = 1.0


def progress_callback(emit: Emit) -> Callable[[SyncProgress], None]:
    """A progress callback for engine threads: throttled there, then hopped to the loop.

    News goes out at most every 0.1 s (a new phase or the last step at once); a repeat of
    the same numbers only once a second, as a heartbeat for the client's timeout.
    """
    loop = asyncio.get_running_loop()
    last: list[Any] = [0.0, None]  # when, (phase, done, total)
    guard = threading.Lock()

    def callback(p: SyncProgress) -> None:
        now, key = time.monotonic(), (p.phase, p.done, p.total)
        with guard:
            age, prev = now - last[0], last[1]
            if key == prev and age < HEARTBEAT_S:
                return
            if (
                prev is not None
                and p.phase == prev[0]
                and p.done < p.total
                and age < PROGRESS_INTERVAL_S
            ):
                return
            last[0], last[1] = now, key
        loop.call_soon_threadsafe(emit, "progress", p.to_dict())

    return callback


class WorkspaceMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        workspaces_changed: Callable[[], Awaitable[None]],
        readers: Executor,
        waiters: Executor,
        openclaw: OpenClawSessions | None = None,
    ) -> None:
        """``workspaces_changed``: after a workspace was added or removed (the watch
        follows); ``readers``: status reads; ``waiters``: long waits (reindex wait=true),
        apart so that abandoned ones starve nothing; ``openclaw``: OpenClaw's session
        stores (workspace.add openclaw_home)."""
        self.registry = registry
        self.workspaces_changed = workspaces_changed
        self.readers = readers
        self.waiters = waiters
        self.openclaw = openclaw

    def table(self) -> dict[str, Handler]:
        return {
            "workspace.add": self.workspace_add,
            "workspace.remove": self.workspace_remove,
            "workspace.list": self.workspace_list,
            "reindex": self.reindex,
        }

    async def workspace_add(self, p: Params, req: Request) -> dict[str, Any]:
        path = p.required_path("path")
        name = p.text("name")
        wait = p.flag("wait")
        openclaw_home = p.path("openclaw_home")
        p.done()
        if openclaw_home is not None and not Path(openclaw_home).expanduser().is_absolute():
            raise InvalidParams(
                f"openclaw_home must be absolute, got {openclaw_home!r}",
                {"param": "openclaw_home"},
            )
        ws, added = await self.registry.add(path, name)
        req.log_fields["workspace"] = ws.name
        if openclaw_home is not None and self.openclaw is not None:
            # OpenClaw's workspace: its home's session stores are copied and indexed
            home = Path(openclaw_home).expanduser()
            await asyncio.to_thread(set_home, self.openclaw.state, ws.root, home)
            self.openclaw.poke()
        if added:
            await self.workspaces_changed()
        out: dict[str, Any] = {"name": ws.name, "path": str(ws.root), "added": added}
        if wait and added and openclaw_home is None:  # a first index in one round trip
            out["indexed"] = await self._first_scan(ws, req)
        elif wait:  # reindex wait=true in the same call
            out["indexed"] = await self._sync(ws.name, req, full=False, wait=True)
        return out

    async def _first_scan(self, ws: Workspace, req: Request) -> dict[str, Any]:
        """Wait on a workspace's first scan itself, as reindex wait=true would answer: a
        sync queued after it would only stat every file again."""
        await ws.opened.wait()
        scan, index = ws.scan, ws.index
        if scan is None or index is None:
            return await self._sync(ws.name, req, full=False, wait=True)
        progress = progress_callback(req.emit)
        ws.scan_listeners.append(progress)
        try:
            report = await asyncio.wrap_future(scan)
        except Exception:  # it is tried again later: a sync now says why, or indexes
            return await self._sync(ws.name, req, full=False, wait=True)
        finally:
            ws.scan_listeners.remove(progress)
        return await self._embedded(index, report, progress, wait=True)

    async def workspace_remove(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.required_path("workspace")
        delete_index = p.flag("delete_index")
        p.done()
        ws = await self.registry.remove(ref, delete_index)
        req.log_fields["workspace"] = ws.name
        await self.workspaces_changed()
        return {"name": ws.name, "path": str(ws.root), "removed": True}

    async def workspace_list(self, p: Params, req: Request) -> dict[str, Any]:
        p.done()
        return {"workspaces": [w.info() for w in self.registry.list()]}

    async def reindex(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        full = p.flag("full")
        wait = p.flag("wait")
        p.done()
        return await self._sync(ref, req, full, wait)

    async def _sync(self, ref: str | None, req: Request, full: bool, wait: bool) -> dict[str, Any]:
        """A sync of workspace ``ref`` now (after its first scan, on the same writer),
        with ``wait`` until every vector is embedded: reindex's answer."""
        ws, index = await self.registry.index_of(ref)
        req.log_fields["workspace"] = ws.name
        progress = progress_callback(req.emit)
        report = await asyncio.wrap_future(index.submit_sync(None, full=full, progress=progress))
        return await self._embedded(index, report, progress, wait)

    async def _embedded(
        self,
        index: WorkspaceIndex,
        report: SyncReport,
        progress: Callable[[SyncProgress], None],
        wait: bool,
    ) -> dict[str, Any]:
        """A sync's answer, with ``wait`` once every vector is embedded."""
        loop = asyncio.get_running_loop()
        out = report.to_dict()
        if wait:  # its own executor: an abandoned long wait must not starve append
            started = time.monotonic()
            await loop.run_in_executor(self.waiters, index.wait_embedded, None, progress)
            out["vectors_seconds"] = round(time.monotonic() - started, 3)
        status = await loop.run_in_executor(self.readers, index.status)
        out["vectors_pending"] = int(status.get("pending_vectors", 0))
        return out
