"""The review queue's methods (lifecycle/review.py): ``review.list``, ``review.approve``
(the line is the owner's from then on: an ``approve`` record in the ledger, and its file's
line meta read again so its annotations apply) and ``review.reject`` (the line is forgotten
as ``forget`` by path and line forgets it, lifecycle/forget_service.py, its pre-image kept)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd.errors import NotFound
from memoryd.files.layout import Layout
from memoryd.files.locks import FileLocks
from memoryd.files.provenance import ledger_for
from memoryd.jobs.session_trust import SessionTrust
from memoryd.lifecycle import forget, review
from memoryd.lifecycle.forget_service import ForgetService
from memoryd.lifecycle.hits import HitCounter
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.runtime.config import Config
from memoryd.workspace.registry import Registry
from memoryd.workspace.served import Workspace

if TYPE_CHECKING:
    from memoryd.rpc.dispatch import Handler


class ReviewMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        forgets: ForgetService,
        trust: SessionTrust,
        locks: FileLocks,
        config: Callable[[], Config],
        hits: HitCounter | None = None,
    ) -> None:
        """``forgets``: reject's forget (lifecycle/forget_service.py); ``trust``: what an
        item's session read; ``locks``: the file's, while its approval is recorded;
        ``hits``: how often search and recall returned each waiting line."""
        self.registry = registry
        self.forgets = forgets
        self.trust = trust
        self.locks = locks
        self.config = config
        self.hits = hits

    def table(self) -> dict[str, Handler]:
        return {
            "review.list": self.list_,
            "review.approve": self.approve,
            "review.reject": self.reject,
        }

    async def _items(self, ref: str | None, req: Request) -> tuple[Workspace, list[review.Waiting]]:
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        cfg = self.config()
        layout = Layout(ws.root, cfg.index.sessions, cfg.index.extra_paths)
        hits = self.hits

        def counts(keys: Any) -> dict[str, tuple[int, int]]:
            return hits.counts(ws.root, keys) if hits is not None else {}

        items = await asyncio.to_thread(review.waiting, ledger_for(ws.root), layout, counts)
        return ws, items

    async def _shown(self, item: review.Waiting) -> dict[str, Any]:
        """An item as the owner reads it: with what its session read, when an observer said."""
        out = item.to_wire()
        if item.session_id:
            state = await asyncio.to_thread(self.trust.get, item.session_id)
            if state is not None and state.what:
                out["session_read"] = state.what
        return out

    async def _one(self, p: Params, req: Request) -> tuple[Workspace, review.Waiting]:
        ref = p.path("workspace")
        wanted = p.required_text("id")
        p.done()
        ws, items = await self._items(ref, req)
        item = review.find(items, wanted)
        if item is None:
            raise NotFound(
                f"nothing waits for review as {wanted!r} in {ws.name} "
                "(memctl review lists the ids; an item leaves once approved, rejected, or "
                "edited by hand)",
                {"param": "id"},
            )
        return ws, item

    async def list_(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        p.done()
        ws, items = await self._items(ref, req)
        return {"workspace": ws.name, "items": [await self._shown(i) for i in items]}

    async def approve(self, p: Params, req: Request) -> dict[str, Any]:
        ws, item = await self._one(p, req)
        path = ws.root / item.path

        def record() -> None:
            with self.locks.lock_for(path):
                ledger_for(ws.root).approve(item.path, item.key)

        await asyncio.to_thread(record)
        if ws.index is not None:  # its annotations apply from now on: the meta read again
            await asyncio.wrap_future(ws.index.submit_sync([path], full=True))
        return {"workspace": ws.name, "approved": await self._shown(item)}

    async def reject(self, p: Params, req: Request) -> dict[str, Any]:
        ws, item = await self._one(p, req)
        shown = await self._shown(item)
        _, index = await self.registry.index_of(ws.name)
        cfg = self.config()
        layout = Layout(ws.root, cfg.index.sessions, cfg.index.extra_paths)
        sel = await asyncio.to_thread(forget.by_range, layout, item.path, item.line, item.line)
        forgot = await self.forgets.forget(ws.name, ws.root, index, sel)
        return {"workspace": ws.name, "rejected": shown, "forget": forgot}
