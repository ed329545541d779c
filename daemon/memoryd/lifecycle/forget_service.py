"""A forget from its selection to its answer: the sequence ``forget`` and ``review.reject``
share (the RPC handlers only choose the lines, lifecycle/forget.py).

In order: every copy of the lines joins the selection (purge); a dry run answers what would
go; the embedding cache's keys of the chunks holding them are read (before the change);
the files change under their locks (forget_run.apply_forget, the journal); the index
follows before the answer (a search right after never finds a forgotten line), the cached
vectors and the lines' hit counts go, the fleet is told; with purge, every other copy goes
(lifecycle/purge.py) and a synced workspace's history is rewritten.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.files.layout import Layout
from memoryd.files.lines import line_key
from memoryd.files.locks import FileLocks
from memoryd.lifecycle import forget as select
from memoryd.lifecycle import journal
from memoryd.lifecycle import purge as purging
from memoryd.lifecycle.forget_run import ForgetConflict, apply_forget, describe
from memoryd.lifecycle.hits import HitCounter
from memoryd.runtime.config import Config
from memoryd.runtime.state import StateDB

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex


class SyncPurge(Protocol):
    """What a purge asks of git sync (``sync.service.SyncService``, a room above)."""

    def purge_plan(self, root: Path) -> dict[str, Any] | None: ...

    async def purge(self, root: Path, keys: set[str], paths: set[str]) -> dict[str, Any] | None: ...


class FleetPublish(Protocol):
    """What a forget asks of fleet mode (``fleet.service.FleetService``, a room above)."""

    async def publish_now(self, name: str, index: WorkspaceIndex) -> str: ...


class ForgetService:
    def __init__(
        self,
        *,
        state: StateDB,  # hit counts, outside exports (purge)
        locks: FileLocks,  # every writer of memory files takes its file's lock here
        config: Callable[[], Config],  # the current one
        hits: HitCounter | None = None,
        sync: SyncPurge | None = None,
        fleet: FleetPublish | None = None,
    ) -> None:
        self.state = state
        self.locks = locks
        self.config = config
        self.hits = hits
        self.sync = sync
        self.fleet = fleet

    async def forget(
        self,
        name: str,
        root: Path,
        index: WorkspaceIndex,
        sel: select.Selection,
        *,
        purge: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Forget ``sel`` from workspace ``name`` (at ``root``): the answer lists exactly what
        left the disk (docs/lifecycle.md); lines that could not go: ``conflict``."""
        cfg = self.config()
        if purge:  # every copy of the lines in the memory files goes too
            layout = Layout(root, cfg.index.sessions, cfg.index.extra_paths)
            sel = await asyncio.to_thread(select.with_copies, layout, sel)
        synced = self.sync.purge_plan(root) if purge and self.sync is not None else None
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
        run = functools.partial(
            apply_forget, root, sel, self.locks, purge=purge, keep_days=cfg.forget.keep_days
        )
        # Until the index has followed, these files' deletes are FTS5 secure ones (the
        # watch's sync of them too); then the WAL is truncated (index/secure_delete.py).
        hold = index.secure.hold(root / p for r in sel.removals for p in (r.rel, *r.aliases))
        try:
            try:
                done = await asyncio.to_thread(run)
            except ForgetConflict as exc:  # what did go leaves the index before the error
                left = {str(r["path"]) for r in (exc.data or {}).get("not_removed", ())}
                keys = _keys([r for r in sel.removals if r.rel not in left])
                await self._indexed(
                    name, root, index, exc.paths, exc.folder, hashes or [], {}, keys
                )
                raise
            keys = _keys(sel.removals)
            answer = done.answer
            await self._indexed(
                name, root, index, done.paths, done.folder, hashes or [], answer, keys
            )
        finally:
            await asyncio.wrap_future(hold.release())
        if purge:
            answer["purged"] = await self._purge(root, index, sel, keys, answer)
        if synced is not None and self.sync is not None:  # memoryd's history and the remote
            whole = {r.rel for r in sel.removals if r.whole_file}
            answer["sync"] = await self.sync.purge(root, keys, whole)
        return answer

    async def _indexed(
        self,
        name: str,
        root: Path,
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
        from memoryd.index.forget_cache import drop_kept_text, purge_cache

        if not paths:
            await asyncio.to_thread(journal.mark_indexed, root, folder)
            return
        await asyncio.wrap_future(index.submit_sync(paths))
        await asyncio.to_thread(journal.mark_indexed, root, folder)
        gone = await asyncio.wrap_future(index.on_writer(lambda c: purge_cache(c, hashes)))
        answer["cache_entries_removed"] = gone or 0
        drop_kept_text(index)  # after the sync: what a search keeps in memory, re-read
        await asyncio.to_thread(purging.forget_hits, self.state, root, keys)
        if self.fleet is not None:  # fleet search drops the lines now, not next pass
            answer["fleet"] = await self.fleet.publish_now(name, index)

    async def _purge(
        self,
        root: Path,
        index: WorkspaceIndex,
        sel: select.Selection,
        keys: set[str],
        answer: dict[str, Any],
    ) -> dict[str, Any]:
        """Every other copy (lifecycle/purge.py); what it could not reach is named."""
        report = purging.Purge(
            root,
            keys,
            purging.cores_of(t for r in sel.removals for t in r.lines.values()),
            {r.rel for r in sel.removals if r.whole_file},
        )
        purged = await asyncio.to_thread(
            purging.run, report, index, self.state, self.locks, self.hits
        )
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


def _keys(removals: list[select.Removal]) -> set[str]:
    """The removed lines' keys: their hit counts go with them."""
    return {line_key(t) for r in removals for t in r.lines.values()} - {""}
