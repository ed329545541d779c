"""Search with read-your-writes: what the daemon answers to ``search``.

A search sees every write made before it was asked, within ``server.read_your_writes_ms``
in total: it waits for the changes the watcher had queued for the workspace when it was
asked (not for those queued while it waits: a stream of writes never starves it), then syncs the
recently active files the watcher may not have reported yet (``Freshness.stale_hot_paths``,
a few stats). It waits only for the files its filters let through (``Freshness.concerns``:
a search of notes never waits for a transcript being written). Past the budget it answers
anyway and says ``stale``.

Where it runs: what the in-memory copies rank takes well under a millisecond and is
answered on the event loop itself (``server.inline_searches``); the hop to a reader thread
and back would cost a third of it again. Anything slower (FTS5, sqlite-vec) goes to the
reader threads, so the loop never stalls on it; a query vector that must be computed (the
model, 5-20 ms) goes to a thread of its own first, so it never holds up a reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.index.search.notices import search_notices
from memoryd.index.search.validate import check_search_request
from memoryd.index.types import NotInMemory, SearchRequest, SearchResponse
from memoryd.runtime.config import Config
from memoryd.workspace.registry import Registry
from memoryd.workspace.watcher import Watcher

if TYPE_CHECKING:  # the engine loads in the background, after the socket is up
    from memoryd.index.vectors.query_vectors import PreparedQuery
    from memoryd.index.workspace import WorkspaceIndex


@dataclass(frozen=True)
class FreshAnswer:
    workspace: str  # its name
    result: dict[str, Any]  # the answer of the ``search`` method (docs/protocol.md)


@dataclass(frozen=True)
class SearchService:
    registry: Registry
    watcher: Watcher
    readers: Executor  # the searches the copies cannot rank
    query_embedder: Executor  # new query vectors
    config: Callable[[], Config]  # the current one, read at each search

    async def search(self, ref: str | None, req: SearchRequest) -> FreshAnswer:
        """Search workspace ``ref`` (name or path; None: the only one)."""
        check_search_request(req)
        ws, index = await self.registry.index_of(ref)
        config = self.config()
        notices = search_notices(req, config.index.sessions)
        if notices.nothing_to_search:
            provider = index.queries.provider  # as a search that ran would name it
            return FreshAnswer(
                ws.name,
                {
                    "results": [],
                    "provider": provider.name if provider else "none",
                    "model": provider.model if provider else "",
                    "mode_used": req.mode,
                    "took_ms": 0.0,
                    "pending_files": 0,
                    "notices": notices.lines,
                },
            )
        cfg = config.server
        started = time.monotonic()
        budget = cfg.read_your_writes_ms / 1000
        concerns = index.freshness.concerns(req)
        fresh = await self.watcher.wait_synced(ws.name, budget, concerns)
        loop = asyncio.get_running_loop()
        prepared = None
        if index.queries.embeds(req):
            prepared = await loop.run_in_executor(self.query_embedder, index.queries.prepare, req)

        stale: list[Path] = []
        resp = None
        if cfg.inline_searches:
            stale, resp = _fresh_then_search(index, req, prepared, True)
        if resp is None and not stale:
            stale, resp = await loop.run_in_executor(
                self.readers, _fresh_then_search, index, req, prepared, False
            )
        if resp is None:  # stale: sync those files first
            left = budget - (time.monotonic() - started)
            fresh = await self.watcher.sync_now(ws.name, index, stale, left, concerns) and fresh
            if cfg.inline_searches:  # the sync done, the copies may answer now
                with contextlib.suppress(NotInMemory):
                    resp = index.search(req, prepared, in_memory=True)
            if resp is None:
                resp = await loop.run_in_executor(self.readers, index.search, req, prepared)
        out = resp.to_dict()
        out["pending_files"] = max(resp.pending_files, self.watcher.pending(ws.name))
        out["waited_ms"] = round((time.monotonic() - started) * 1000, 3)
        if not fresh:
            out["stale"] = True  # a write may be missing: the wait ran out of budget
        if notices.lines:
            out["notices"] = notices.lines
        return FreshAnswer(ws.name, out)

    async def query_for_fleet(self, req: SearchRequest) -> PreparedQuery | None:
        """The query vector for a search of other hosts' workspaces, prepared as a local
        search prepares it: by an open local index's query side (its query cache, the
        fallback while the provider fails, the same reasons when there is none). None when
        no local index embeds queries (none open, no provider, no sqlite-vec here): the fleet
        embeds it then."""
        index = next((w.index for w in self.registry.list() if w.index is not None), None)
        if index is None or index.queries.embedder is None:
            return None
        prepared = index.queries.prepare_cached(req)  # never runs the model
        if prepared is not None:
            return prepared
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.query_embedder, index.queries.prepare, req)


def _fresh_then_search(
    index: WorkspaceIndex, req: SearchRequest, prepared: PreparedQuery | None, in_memory: bool
) -> tuple[list[Path], SearchResponse | None]:
    """The files to sync first, or the answer (None in memory: the copies cannot rank it)."""
    stale = index.freshness.stale_hot_paths()
    if stale:
        return stale, None
    if not in_memory:
        return [], index.search(req, prepared)
    try:
        return [], index.search(req, prepared, in_memory=True)
    except NotInMemory:
        return [], None
