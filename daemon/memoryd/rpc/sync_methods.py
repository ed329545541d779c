"""The ``sync.*`` methods (docs/sync.md, docs/protocol.md): enable, disable, status, now."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidParams, Unavailable
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.runtime.config import Config
from memoryd.sync import settings as saved
from memoryd.sync.service import SyncService
from memoryd.workspace.registry import Registry
from memoryd.workspace.served import Workspace

if TYPE_CHECKING:
    from memoryd.rpc.dispatch import Handler


class SyncMethods:
    def __init__(
        self, *, registry: Registry, config: Callable[[], Config], sync: SyncService | None
    ) -> None:
        """``sync``: None when it does not run in this daemon (the methods say so)."""
        self.registry = registry
        self.config = config
        self.sync = sync

    def table(self) -> dict[str, Handler]:
        return {
            "sync.enable": self.enable,
            "sync.disable": self.disable,
            "sync.status": self.status,
            "sync.now": self.now,
        }

    @property
    def service(self) -> SyncService:
        if self.sync is None:
            raise Unavailable("sync is not running in this daemon")
        return self.sync

    def _named(self, ref: str | None) -> list[Workspace]:
        return [self.registry.resolve(ref)] if ref is not None else self.registry.list()

    async def enable(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        remote = saved.check_remote(p.required_text("remote"))
        branch = saved.check_branch(p.text("branch") or "main")
        repo = p.choice("repo", saved.REPOS, default="memoryd")
        p.done()
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        current = saved.load(self.service.state_dir, self.config(), ws.root)
        if current is not None and current.from_config:
            raise InvalidParams(
                f"{ws.name} syncs as the config file says ([[workspaces]] sync_remote): "
                "change it there"
            )
        assert repo is not None
        self.service.enable(ws.root, saved.Settings(remote, branch, repo))
        report, _ = await self.service.sync_now(ws.root)
        return {
            "workspace": ws.name,
            "enabled": True,
            "report": report.to_dict() if report is not None else None,
            "status": await asyncio.to_thread(self.service.describe, ws.root, ws.name),
        }

    async def disable(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        p.done()
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        current = saved.load(self.service.state_dir, self.config(), ws.root)
        if current is None:
            return {"workspace": ws.name, "enabled": False, "was_enabled": False}
        if current.from_config:
            raise InvalidParams(
                f"{ws.name} syncs as the config file says ([[workspaces]] sync_remote): "
                "remove it there"
            )
        self.service.disable(ws.root)
        folder = saved.folder_of(self.service.state_dir, ws.root)
        return {
            "workspace": ws.name,
            "enabled": False,
            "was_enabled": True,
            "repository": str(folder / "repo.git") if current.repo == "memoryd" else None,
        }

    async def status(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        p.done()
        out = []
        for ws in self._named(ref):
            out.append(await asyncio.to_thread(self.service.describe, ws.root, ws.name))
        return {"workspaces": out}

    async def now(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        p.done()
        targets = self._named(ref)
        state = self.service.state_dir
        if ref is None:  # every workspace that syncs
            targets = [w for w in targets if saved.load(state, self.config(), w.root)]
        out = []
        for ws in targets:
            report, _ = await self.service.sync_now(ws.root)
            status = await asyncio.to_thread(self.service.describe, ws.root, ws.name)
            out.append(
                {
                    "workspace": ws.name,
                    "report": report.to_dict() if report is not None else None,
                    "status": status,
                }
            )
        return {"workspaces": out}
