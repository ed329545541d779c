"""The methods that change what memory holds as a whole: ``forget``, ``export``, ``import``
(docs/lifecycle.md). A forget's lines are chosen here (lifecycle/forget.py); what follows is
lifecycle/forget_service.py's, which review.reject shares.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import ForbiddenPath, InvalidParams
from memoryd.files.layout import CURATED_FILES, MEMORY_DIR, SESSIONS_DIR, Layout
from memoryd.files.locks import FileLocks
from memoryd.files.provenance import clean_session_id, ledger_for
from memoryd.index.types import SearchRequest
from memoryd.jobs.clock import Clock
from memoryd.jobs.history import History
from memoryd.lifecycle import archive, exports, importing
from memoryd.lifecycle import forget as select
from memoryd.lifecycle import purge as purging
from memoryd.lifecycle.forget_run import apply_import
from memoryd.lifecycle.forget_service import ForgetService
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.runtime.config import Config
from memoryd.runtime.state import StateDB
from memoryd.workspace.registry import Registry
from memoryd.workspace.search_service import SearchService
from memoryd.workspace.served import Workspace
from memoryd.workspace.watcher import Watcher
from memoryd_client.search_terms import SOURCE_MEMORY

if TYPE_CHECKING:
    from memoryd.rpc.dispatch import Handler

MAX_QUERY_HITS = 50


class LifecycleMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        state: StateDB,
        searches: SearchService,
        forgets: ForgetService,
        history: History,
        locks: FileLocks,
        watcher: Watcher,
        clock: Clock,
        config: Callable[[], Config],
    ) -> None:
        """``searches``: forget by query selects from a search's hits; ``forgets``: the
        forget sequence (lifecycle/forget_service.py); ``history``: the transcripts a
        session flushed (forget by session); ``state``: the exports written outside (a
        purge names them); ``locks``: the exports folder's and an import's files';
        ``watcher``: told of an import's files at once."""
        self.registry = registry
        self.state = state
        self.searches = searches
        self.forgets = forgets
        self.history = history
        self.locks = locks
        self.watcher = watcher
        self.clock = clock
        self.config = config

    def table(self) -> dict[str, Handler]:
        return {"forget": self.forget, "export": self.export, "import": self.import_}

    async def forget(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        path = p.path("path")
        lines = p.text("lines")
        query = p.text("query")
        session = p.text("session_id")
        session = clean_session_id(session) if session is not None else None  # as stored
        max_results = p.integer("max_results", lo=1, hi=MAX_QUERY_HITS, default=5)
        dry_run = p.flag("dry_run")
        purge = p.flag("purge")
        p.done()
        given = [n for n, v in (("path", path), ("query", query), ("session_id", session)) if v]
        if len(given) != 1:
            raise InvalidParams(
                "give exactly one of: path (with lines), query, session_id",
                {"param": given[1] if len(given) > 1 else "path"},
            )
        if path and not lines:
            raise InvalidParams("path needs lines (N or A-B)", {"param": "lines"})
        ws, index = await self.registry.index_of(ref)
        req.log_fields["workspace"] = ws.name
        cfg = self.config()
        layout = Layout(ws.root, cfg.index.sessions, cfg.index.extra_paths)
        if query:
            sel = await self._by_query(ws, layout, query, max_results)
        elif path:
            assert lines is not None
            first, last = select.parse_range(lines)
            sel = await asyncio.to_thread(select.by_range, layout, path, first, last)
        else:
            assert session is not None
            flushed = self.history.transcripts_of(session)
            sel = await asyncio.to_thread(
                select.by_session, layout, ledger_for(ws.root), session, flushed
            )
        return await self.forgets.forget(ws.name, ws.root, index, sel, purge=purge, dry_run=dry_run)

    async def _by_query(
        self, ws: Workspace, layout: Layout, query: str, max_results: int | None
    ) -> select.Selection:
        # The hits a search of the notes would show (superseded lines left out); they do
        # not count as used: their lines are about to go.
        sreq = SearchRequest(
            query=query,
            max_results=max_results,
            sources=(SOURCE_MEMORY,),
            today=self.clock.now().date().isoformat(),
        )
        found = (await self.searches.answer(ws.name, sreq, count=False)).result
        return await asyncio.to_thread(select.by_hits, layout, found["results"], query)

    async def export(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        given = p.path("path")
        force = p.flag("force")
        p.done()
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        if given is None:  # the workspace's exports folder (what MCP's memory_export uses)
            lock = self.locks.lock_for(ws.root / exports.EXPORTS_DIR)

            def here() -> dict[str, Any]:
                with lock:  # a purge rewriting the folder waits, or comes after
                    return exports.export_here(ws.root, ws.name)

            return await asyncio.to_thread(here)
        out = _absolute(given)
        self._not_memory(out)
        written = await asyncio.to_thread(
            functools.partial(archive.write_archive, ws.root, ws.name, out, force=force)
        )
        await asyncio.to_thread(  # a purge names it while it is still as written
            purging.record_outside_export, self.state, ws.root, out, written["sha256"]
        )
        return written

    def _not_memory(self, out: Path) -> None:
        """An export never lands among a workspace's memory files (MEMORY.md, memory/,
        sessions/): forbidden_path, whichever workspace, whatever the name."""
        try:
            real = out.parent.resolve() / out.name
        except OSError:
            real = out
        for other in self.registry.list():
            try:
                rel = real.relative_to(other.root)
            except ValueError:
                continue
            parts = rel.parts
            if parts and (
                rel.as_posix() in CURATED_FILES or parts[0] in (MEMORY_DIR, SESSIONS_DIR)
            ):
                raise ForbiddenPath(
                    f"{out} is among the memory files of workspace {other.name}: an export "
                    "is written elsewhere (or, without a path, into its exports folder)",
                    {"param": "path"},
                )

    async def import_(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        given = p.path("path")
        name = p.text("export")
        dry_run = p.flag("dry_run")
        untrusted = p.flag("untrusted")
        p.done()
        if (given is None) == (name is None):
            raise InvalidParams("give one of: path (an archive), export (a file name)")
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        if name is not None:
            found = await asyncio.to_thread(exports.read_export, ws.root, name)
        else:
            assert given is not None
            found = await asyncio.to_thread(archive.read_archive, _absolute(given))
        merged = await asyncio.to_thread(importing.plan_import, ws.root, found, True, untrusted)
        if dry_run:
            return {**merged.report, "dry_run": True}
        answer = await asyncio.to_thread(
            apply_import, ws.root, merged, self.locks, self.config().forget.keep_days
        )
        paths = [ws.root / f.rel for f in merged.change.files]
        if paths:
            self.watcher.submit(ws.name, paths)  # searchable without waiting for inotify
        return {**answer, "dry_run": False}


def _absolute(path: str) -> Path:
    if not os.path.isabs(path):
        raise InvalidParams("path must be absolute (memctl makes it so)", {"param": "path"})
    return Path(path)
