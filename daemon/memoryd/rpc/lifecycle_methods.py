"""The methods that change what memory holds as a whole: ``forget``, ``export``, ``import``
(docs/lifecycle.md). Added to the core method table (methods.py) like the agents' methods.
"""

from __future__ import annotations

import asyncio
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import ForbiddenPath, InvalidParams
from memoryd.files.layout import CURATED_FILES, MEMORY_DIR, SESSIONS_DIR, Layout
from memoryd.files.lines import line_key
from memoryd.files.provenance import clean_session_id, ledger_for
from memoryd.index.types import SearchRequest
from memoryd.lifecycle import archive, exports, importing, journal
from memoryd.lifecycle import forget as select
from memoryd.lifecycle import purge as purging
from memoryd.lifecycle.forget_run import ForgetConflict, apply_forget, apply_import, describe
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd_client.search_terms import SOURCE_MEMORY

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.rpc.methods import Handler, Methods
    from memoryd.workspace.registry import Workspace

MAX_QUERY_HITS = 50


class LifecycleMethods:
    def __init__(self, methods: Methods) -> None:
        self.m = methods

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
        ws, index = await self.m.registry.index_of(ref)
        req.log_fields["workspace"] = ws.name
        cfg = self.m.config()
        layout = Layout(ws.root, cfg.index.sessions, cfg.index.extra_paths)
        if query:
            sel = await self._by_query(ws, layout, query, max_results, req)
        elif path:
            assert lines is not None
            first, last = select.parse_range(lines)
            sel = await asyncio.to_thread(select.by_range, layout, path, first, last)
        else:
            assert session is not None
            flushed = self.m.scheduler.runner.history.transcripts_of(session)
            sel = await asyncio.to_thread(
                select.by_session, layout, ledger_for(ws.root), session, flushed
            )
        if purge:  # every copy of the lines in the memory files goes too
            sel = await asyncio.to_thread(select.with_copies, layout, sel)
        synced = self.m.sync.purge_plan(ws.root) if purge and self.m.sync else None
        if dry_run:
            out = describe(sel, dry_run=True)
            if synced is not None:  # said before it is done (docs/sync.md, purge)
                out["sync"] = synced
            return out
        # The index side loads numpy and the tokenizer: here, as the index itself is loaded
        # after the socket listens (registry.py), never at the daemon's start.
        from memoryd.index.forget_cache import cache_hashes

        window = cfg.index.vector_window_tokens  # the vector windows' size (their cache keys)
        spans = sel.spans()
        hashes = await asyncio.wrap_future(
            index.on_writer(lambda c: cache_hashes(c, spans, window))
        )
        try:
            done = await asyncio.to_thread(
                apply_forget,
                ws.root,
                sel,
                self.m.appender,
                purge=purge,
                keep_days=cfg.forget.keep_days,
            )
        except ForgetConflict as exc:  # what did go leaves the index before the error
            left = {str(r["path"]) for r in (exc.data or {}).get("not_removed", ())}
            keys = _keys([r for r in sel.removals if r.rel not in left])
            await self._forgotten(ws, index, exc.paths, exc.folder, hashes or [], {}, keys)
            raise
        keys = _keys(sel.removals)
        await self._forgotten(ws, index, done.paths, done.folder, hashes or [], done.answer, keys)
        if purge:
            done.answer["purged"] = await self._purge(ws, index, sel, keys, done.answer)
        if synced is not None and self.m.sync is not None:  # memoryd's history and the remote
            whole = {r.rel for r in sel.removals if r.whole_file}
            done.answer["sync"] = await self.m.sync.purge(ws.root, keys, whole)
        return done.answer

    async def _by_query(
        self, ws: Workspace, layout: Layout, query: str, max_results: int | None, req: Request
    ) -> select.Selection:
        # The hits a search of the notes would show (superseded lines left out); they do
        # not count as used: their lines are about to go.
        sreq = SearchRequest(
            query=query,
            max_results=max_results,
            sources=(SOURCE_MEMORY,),
            today=self.m.clock.now().date().isoformat(),
        )
        found = (await self.m.searches.answer(ws.name, sreq, count=False)).result
        return await asyncio.to_thread(select.by_hits, layout, found["results"], query)

    async def _purge(
        self,
        ws: Workspace,
        index: WorkspaceIndex,
        sel: select.Selection,
        keys: set[str],
        answer: dict[str, Any],
    ) -> dict[str, Any]:
        """Every other copy (lifecycle/purge.py); what it could not reach is named."""
        report = purging.Purge(
            ws.root,
            keys,
            purging.cores_of(t for r in sel.removals for t in r.lines.values()),
            {r.rel for r in sel.removals if r.whole_file},
        )
        state, locks = self.m.registry.state, self.m.appender.locks
        purged = await asyncio.to_thread(purging.run, report, index, state, locks, self.m.hits)
        fleet = answer.get("fleet")
        if fleet not in (None, "published"):
            purged["not_reached"].append(
                {
                    "path": "fleet (Postgres)",
                    "why": f"not published yet ({fleet}): the publisher's next pass removes "
                    "the rows",
                }
            )
        return purged

    async def _forgotten(
        self,
        ws: Workspace,
        index: WorkspaceIndex,
        paths: list[Path],
        folder: str,
        hashes: list[str],
        answer: dict[str, Any],
        keys: set[str],
    ) -> None:
        """The index side of a forget: files synced before the answer (a search right after
        never finds a forgotten line; the journal knows it is done only then, so a kill
        before it makes the next start sync them first), cached vectors dropped, the fleet
        told."""
        from memoryd.index.forget_cache import purge_cache

        if not paths:
            await asyncio.to_thread(journal.mark_indexed, ws.root, folder)
            return
        await asyncio.wrap_future(index.submit_sync(paths))
        await asyncio.to_thread(journal.mark_indexed, ws.root, folder)
        gone = await asyncio.wrap_future(index.on_writer(lambda c: purge_cache(c, hashes)))
        answer["cache_entries_removed"] = gone or 0
        await asyncio.to_thread(purging.forget_hits, self.m.registry.state, ws.root, keys)
        if self.m.fleet is not None:  # fleet search drops the lines now, not next pass
            answer["fleet"] = await self.m.fleet.publish_now(ws.name, index)

    async def export(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        given = p.path("path")
        force = p.flag("force")
        p.done()
        ws = self.m.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        if given is None:  # the workspace's exports folder (what MCP's memory_export uses)
            lock = self.m.appender.locks.lock_for(ws.root / exports.EXPORTS_DIR)

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
            purging.record_outside_export, self.m.registry.state, ws.root, out, written["sha256"]
        )
        return written

    def _not_memory(self, out: Path) -> None:
        """An export never lands among a workspace's memory files (MEMORY.md, memory/,
        sessions/): forbidden_path, whichever workspace, whatever the name."""
        try:
            real = out.parent.resolve() / out.name
        except OSError:
            real = out
        for other in self.m.registry.list():
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
        ws = self.m.registry.resolve(ref)
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
            apply_import, ws.root, merged, self.m.appender, self.m.config().forget.keep_days
        )
        paths = [ws.root / f.rel for f in merged.change.files]
        if paths:
            self.m.watcher.submit(ws.name, paths)  # searchable without waiting for inotify
        return {**answer, "dry_run": False}


def _keys(removals: list[select.Removal]) -> set[str]:
    """The removed lines' keys: their hit counts go with them."""
    return {line_key(t) for r in removals for t in r.lines.values()} - {""}


def _absolute(path: str) -> Path:
    if not os.path.isabs(path):
        raise InvalidParams("path must be absolute (memctl makes it so)", {"param": "path"})
    return Path(path)
