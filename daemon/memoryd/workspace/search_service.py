"""A search's answer, in one place: what ``search``, ``recall`` and forget by query get.

``SearchService.answer`` finds the hits (a local workspace with read-your-writes, or other
hosts' through fleet mode), then leaves out the lines a newer keyed line superseded, counts
the hits (hit counting, off the hot path) and masks secrets in the snippets: the same steps
for every caller and every path. The request was checked when it was made
(``index.types.SearchRequest``); nothing here checks it again.

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

The freshness stats run where the search does, keeping the interpreter lock, only on a
local file system (``Freshness.may_hold_lock``). A workspace on NFS, SMB, sshfs or another
FUSE mount (or one whose file system is not known) has them run on a ``memoryd-stat``
thread, giving the lock up: a stat that waits minutes for a server then stops nothing else.
One such check per workspace at a time; a search that cannot have its check within its
read-your-writes budget answers without it, ``stale``.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.errors import InvalidParams, MemorydError
from memoryd.index.search import supersession
from memoryd.index.search.notices import search_notices
from memoryd.index.types import (
    NotInMemory,
    SearchHit,
    SearchRequest,
    SearchResponse,
    hit_maps,
    hit_rows,
)
from memoryd.lifecycle.hits import HitCounter
from memoryd.runtime.config import Config
from memoryd.runtime.foreground import FOREGROUND
from memoryd.secrets import mask_snippets, masked_snippet
from memoryd.workspace.registry import Registry
from memoryd.workspace.served import Workspace
from memoryd.workspace.watcher import Watcher

if TYPE_CHECKING:  # the engine loads in the background, after the socket is up
    from memoryd.embeddings.base import EmbeddingProvider
    from memoryd.index.query_vectors import PreparedQuery
    from memoryd.index.workspace import WorkspaceIndex

FLEET_OFF = "fleet mode is off: set [fleet] dsn (docs/fleet.md)"
STAT_THREADS = 4  # freshness checks of workspaces not on a local file system, at once
# A check off the loop is waited for this long even when the read-your-writes budget is
# spent (read_your_writes_ms = 0: no wait for pending writes, but the stats still run, as
# inline): a network file system that answers does so in a few ms.
STAT_WAIT_MIN_S = 0.05


class FleetSearch(Protocol):
    """What a search asks of fleet mode (``fleet.service.FleetService``, a room above this
    one: it reads the registry's workspaces to publish them)."""

    @property
    def host(self) -> str: ...  # this daemon's host name in the fleet

    def split_ref(self, ref: str | None) -> tuple[str, str] | None: ...

    async def answer_search(
        self,
        req: SearchRequest,
        ref: str | None,
        provider: EmbeddingProvider | None,
        embedder: Executor,
        prepared: PreparedQuery | None = None,
    ) -> dict[str, Any]: ...


class Answer:
    """A search's answer, and which workspace (and index) gave it. Plain slots, set once:
    one is made a search, and a frozen record's construction (a ``object.__setattr__`` per
    field) cost ~4x as much."""

    __slots__ = ("hits", "index", "result", "workspace")

    def __init__(
        self,
        workspace: str,  # the local workspace's name; "fleet" (every one), or "host:name"
        result: dict[str, Any],  # the answer of the ``search`` method (docs/protocol.md)
        index: WorkspaceIndex | None = None,  # the local workspace's index (None: fleet)
        # The hits when ``result``'s are rows made from them (``answer(rows=True)``), masked
        hits: list[SearchHit] | None = None,
    ) -> None:
        self.workspace = workspace
        self.result = result
        self.index = index
        self.hits = hits

    def ranges(self) -> Iterator[tuple[str, int, int]]:
        """Each hit's (path, start line, end line)."""
        if self.hits is not None:
            return ((h.path, h.start_line, h.end_line) for h in self.hits)
        return (
            (str(h.get("path")), int(h.get("start_line") or 0), int(h.get("end_line") or 0))
            for h in self.result["results"]
        )


class SearchService:
    def __init__(
        self,
        registry: Registry,
        watcher: Watcher,
        readers: Executor,  # the searches the copies cannot rank
        stats: Executor,  # freshness checks where a stat may hang (memoryd-stat: app.py)
        query_embedder: Executor,  # new query vectors
        config: Callable[[], Config],  # the current one, read at each search
        *,
        hits: HitCounter | None = None,  # how often search and recall returned each line
        fleet: FleetSearch | None = None,  # fleet mode when [fleet] is set...
        fleet_off: str | None = None,  # ...else why not
    ) -> None:
        self.registry = registry
        self.watcher = watcher
        self.readers = readers
        self.query_embedder = query_embedder
        self.config = config
        self.hits = hits
        self.fleet = fleet
        self.fleet_off = fleet_off
        self.supersession = supersession.Supersession()
        # STAT_THREADS daemon threads, started when first needed and ended with the daemon,
        # which never waits for one stuck in a stat. And the check in flight of each
        # workspace (a hung one is not joined by another at every search).
        self.stats = stats
        self._checks: dict[WorkspaceIndex, asyncio.Future[list[Path]]] = {}

    def remote(self, ref: str | None) -> bool:
        """Whether ``ref`` names another host's workspace ("host:name", fleet mode)."""
        return self.fleet is not None and self.fleet.split_ref(ref) is not None

    async def answer(
        self,
        ref: str | None,
        req: SearchRequest,
        *,
        everywhere: bool = False,
        include_superseded: bool = False,
        count: bool = True,
        quick: bool = False,
        rows: bool = False,
    ) -> Answer:
        """Search workspace ``ref`` (name or path; None: the only one; "host:name": another
        host's), or with ``everywhere`` every workspace the fleet publishes. Superseded lines
        are left out (marked with ``include_superseded``); ``count``: the hits count as used
        (hit counting; a forget's own search does not). ``quick``: the caller is a quick
        request (rpc/server.py's QUICK_METHODS), which background threads step aside for.
        ``rows``: the hits as rows (protocol.HIT_ROWS) when they can be made from the
        engine's hits themselves, with no maps (``Answer.hits`` says they were)."""
        if everywhere or self.remote(ref):
            return await self._fleet_answer(None if everywhere else ref, req, include_superseded)
        ws, index, result = await self._fresh(ref, req, quick)
        hits: list[SearchHit] = result["results"]
        if rows and hits and self._nothing_superseded(ws, index):
            snippets = list(map(_SNIPPET, hits))
            masked = _masked(hits, snippets)
            made = hit_rows(masked)
            if made is not None:  # counted as _settle counts them: the snippets as found
                if count and self.hits is not None:
                    found = _memory_snippets(hits, snippets)
                    self.hits.record_snippets(ws.root, req.query, found)
                result["results"] = made
                return Answer(ws.name, result, index, masked)
        result["results"] = self._settle(
            ws, index, req.query, hit_maps(hits), include_superseded, count=count
        )
        return Answer(ws.name, mask_snippets(result), index)

    def _nothing_superseded(self, ws: Workspace, index: WorkspaceIndex) -> bool:
        """Whether no line of the workspace is superseded (as far as is known: _settle)."""
        sup = self.supersession.current(ws.root, index.line_meta)
        return sup is None or sup.empty

    def _settle(
        self,
        ws: Workspace,
        index: WorkspaceIndex | None,
        query: str,
        hits: list[dict[str, Any]],
        include_superseded: bool,
        *,
        count: bool,
    ) -> list[dict[str, Any]]:
        """A workspace's hits without the lines a newer keyed line superseded, counted:
        index/search/supersession.py, what is known (a dict lookup; never a wait: they are
        read again in the background)."""
        if index is not None and hits:
            sup = self.supersession.current(ws.root, index.line_meta)
            if sup is not None:
                hits = supersession.apply({"results": hits}, sup, include_superseded)["results"]
        if count and self.hits is not None:  # a deque append; counted off the hot path
            self.hits.record(ws.root, query, hits)
        return hits

    async def _fleet_answer(
        self, ref: str | None, req: SearchRequest, include_superseded: bool
    ) -> Answer:
        """Through Postgres (fleet/): this host's own workspaces among the hits are settled
        as a local search's are; another host's lines have no line meta here."""
        if self.fleet is None:
            raise InvalidParams(self.fleet_off or FLEET_OFF, {"param": "fleet"})
        result = await self.fleet.answer_search(
            req,
            ref,
            self.registry.provider,
            self.query_embedder,
            await self.query_for_fleet(req),
        )
        hits: list[dict[str, Any]] = result.get("results", [])
        own: dict[str, list[dict[str, Any]]] = {}
        for hit in hits:
            if hit.get("host") == self.fleet.host:
                own.setdefault(str(hit.get("workspace")), []).append(hit)
        dropped: set[int] = set()
        for name, mine in own.items():
            try:
                ws = self.registry.resolve(name)
            except MemorydError:  # published, since removed here
                continue
            kept = self._settle(ws, ws.index, req.query, mine, include_superseded, count=True)
            dropped.update({id(h) for h in mine} - {id(h) for h in kept})
        if dropped:
            result["results"] = [h for h in hits if id(h) not in dropped]
        return Answer("fleet" if ref is None else ref, mask_snippets(result))

    async def _fresh(
        self, ref: str | None, req: SearchRequest, quick: bool
    ) -> tuple[Workspace, WorkspaceIndex, dict[str, Any]]:
        """Search workspace ``ref`` with read-your-writes."""
        ws, index = self.registry.opened_index(ref)  # no await once opened
        if index is None:
            ws, index = await self.registry.index_of(ref)
        config = self.config()
        notices = search_notices(req, config.index.sessions)
        if notices.nothing_to_search:
            provider = index.queries.provider  # as a search that ran would name it
            return (
                ws,
                index,
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
        left, fresh = budget, index.freshness.folders_known  # no clock read on the hot path
        if not fresh:
            fresh = await self._first_scan(ws, index, budget, quick)
            left = budget - (time.monotonic() - started)
        concerns = None  # which paths concern req: made when a wait or a sync needs it
        if not self.watcher.settled(ws.name):  # else wait_synced is True at once
            concerns = index.freshness.concerns(req)
            fresh = await self.watcher.wait_synced(ws.name, left, concerns, quick) and fresh
        prepared = None
        if index.queries.embeds(req):
            prepared = await asyncio.get_running_loop().run_in_executor(
                self.query_embedder, index.queries.prepare, req
            )

        stale: list[Path] = []
        resp = None
        # may_hold_lock() without a call: ``started`` is on the same clock (time.monotonic)
        if index.freshness.local_until <= started:  # a stat may hang: off the loop, bounded
            checked = await self._check_released(index, budget - (time.monotonic() - started))
            fresh = fresh and checked is not None
            stale, resp = await self._search_checked(
                index, req, prepared, checked or [], cfg.inline_searches
            )
        elif cfg.inline_searches:
            stale, resp = _fresh_then_search(index, req, prepared, True)
        if resp is None and not stale:
            stale, resp = await asyncio.get_running_loop().run_in_executor(
                self.readers, _fresh_then_search, index, req, prepared, False
            )
        if resp is None:  # stale: sync those files first
            left = budget - (time.monotonic() - started)
            concerns = concerns or index.freshness.concerns(req)
            fresh = (
                await self.watcher.sync_now(ws.name, index, stale, left, concerns, quick) and fresh
            )
            if cfg.inline_searches:  # the sync done, the copies may answer now
                with contextlib.suppress(NotInMemory):
                    resp = index.search(req, prepared, in_memory=True)
            if resp is None:
                resp = await asyncio.get_running_loop().run_in_executor(
                    self.readers, index.search, req, prepared
                )
        out = resp.to_dict(maps=False)  # the hits' wire form: answer()
        out["pending_files"] = max(resp.pending_files, self.watcher.pending(ws.name))
        out["waited_ms"] = round((time.monotonic() - started) * 1000, 3)
        if not fresh:
            out["stale"] = True  # a write may be missing: the wait ran out of budget
        if notices.lines:
            out["notices"] = notices.lines
        return ws, index, out

    async def _first_scan(
        self, ws: Workspace, index: WorkspaceIndex, left: float, quick: bool
    ) -> bool:
        """A workspace no whole scan has ended on (just added, or its index made anew):
        the files in its folders come with that scan alone (the check after it knows the
        hot files only). Wait for it, ``left`` seconds at most; whether it ended. A
        ``quick`` request (background work steps aside for it) is not one meanwhile: the
        scan would step aside for the search waiting for it."""
        scan = ws.scan
        if scan is not None and not scan.done() and left > 0:
            ended = asyncio.wrap_future(scan)
            ended.add_done_callback(_retrieved)  # a failed scan says so in status, not here
            with FOREGROUND.aside() if quick else contextlib.nullcontext():
                await asyncio.wait({ended}, timeout=left)
        return index.freshness.folders_known

    async def _check_released(self, index: WorkspaceIndex, left: float) -> list[Path] | None:
        """The stale hot files, checked on a ``memoryd-stat`` thread, the lock given up;
        None if the check did not end within ``left`` seconds (at least STAT_WAIT_MIN_S: a
        file system that hangs).
        One check of a workspace at a time: a search waits for the one in flight (begun
        before it came, so it may have missed a write: it then runs its own)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(left, STAT_WAIT_MIN_S)
        while (busy := self._checks.get(index)) is not None and not busy.done():
            with contextlib.suppress(Exception):  # its own search reports its failure
                await asyncio.wait_for(asyncio.shield(busy), max(deadline - loop.time(), 0.0))
            if not busy.done():
                return None

        def done(check: asyncio.Future[list[Path]]) -> None:
            if self._checks.get(index) is check:
                del self._checks[index]
            if not check.cancelled():
                check.exception()  # retrieved: the search that gave up on it is gone

        check = loop.run_in_executor(self.stats, index.freshness.stale_hot_paths_released)
        self._checks[index] = check
        check.add_done_callback(done)
        try:
            return await asyncio.wait_for(asyncio.shield(check), max(deadline - loop.time(), 0.0))
        except TimeoutError:
            return None

    async def _search_checked(
        self,
        index: WorkspaceIndex,
        req: SearchRequest,
        prepared: PreparedQuery | None,
        stale: list[Path],
        inline: bool,
    ) -> tuple[list[Path], SearchResponse | None]:
        """After a check off the loop: the files to sync first, or the answer, found where a
        search after an inline check would find it."""
        if stale:
            return stale, None
        if inline:
            with contextlib.suppress(NotInMemory):
                return [], index.search(req, prepared, in_memory=True)
        loop = asyncio.get_running_loop()
        return [], await loop.run_in_executor(self.readers, index.search, req, prepared)

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


def _retrieved(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


# A hit's fields by position (SearchHit is a tuple): cheaper than its descriptors in a loop
_SNIPPET = operator.itemgetter(SearchHit._fields.index("snippet"))
_SOURCE = operator.itemgetter(SearchHit._fields.index("source"))


def _masked(hits: list[SearchHit], snippets: list[str]) -> list[SearchHit]:
    """The hits with their snippets' secrets masked (mask_snippets on their maps);
    ``snippets``: theirs, in order."""
    masked = list(map(masked_snippet, snippets))
    if masked == snippets:  # the same strings, as a rule: compared by identity first
        return hits
    return [
        hit if new is hit.snippet else hit._replace(snippet=new)
        for hit, new in zip(hits, masked, strict=True)
    ]


def _memory_snippets(hits: list[SearchHit], snippets: list[str]) -> tuple[str, ...]:
    """What hit counting reads of a search's hits (HitCounter.record on their maps): the
    ``snippets`` of those of memory (not of transcripts), in order."""
    sources = list(map(_SOURCE, hits))
    if sources.count("memory") == len(sources):  # as a rule
        return tuple(snippets)
    return tuple([s for s, source in zip(snippets, sources, strict=True) if source == "memory"])


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
