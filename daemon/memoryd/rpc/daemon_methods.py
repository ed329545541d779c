"""The daemon's own methods: ``hello``, ``status``, ``fleet.status``, ``shutdown``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import memoryd
from memoryd.errors import InvalidParams
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.workspace.registry import Registry
from memoryd.workspace.search_service import FLEET_OFF
from memoryd_client import protocol

if TYPE_CHECKING:
    from memoryd.fleet.service import FleetService  # psycopg: imported only in fleet mode
    from memoryd.rpc.dispatch import Handler
    from memoryd.rpc.status import StatusReport


class DaemonMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        status: Callable[[], StatusReport],  # made by the first status (its modules too)
        request_exit: Callable[[], None],
        fleet: FleetService | None = None,  # fleet mode when [fleet] is set...
        fleet_off: str | None = None,  # ...else why not
    ) -> None:
        self.registry = registry
        self.status_report = status
        self.request_exit = request_exit
        self.fleet = fleet
        self.fleet_off = fleet_off

    def table(self) -> dict[str, Handler]:
        return {
            "hello": self.hello,
            "status": self.status,
            "fleet.status": self.fleet_status,
            "shutdown": self.shutdown,
        }

    async def hello(self, p: Params, req: Request) -> dict[str, Any]:
        client = p.text("client", allow_empty=True)
        p.integer("protocol", lo=0)  # the client decides whether it can talk to us
        p.done()
        if client:
            req.log_fields["client"] = client[:80]
            if req.conn is not None:
                req.conn.client = client[:80]
        return {
            "server": "memoryd",
            "version": memoryd.__version__,
            "protocol": protocol.PROTOCOL_VERSION,
            "pid": os.getpid(),
            "features": list(protocol.FEATURES),  # what a client may ask beyond version 1
        }

    async def status(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        p.done()
        items = [self.registry.resolve(ref)] if ref is not None else self.registry.list()
        if ref is not None:
            req.log_fields["workspace"] = items[0].name
        return await self.status_report().build(items)

    async def fleet_status(self, p: Params, req: Request) -> dict[str, Any]:
        p.done()
        if self.fleet is None:
            raise InvalidParams(self.fleet_off or FLEET_OFF, {"param": "fleet"})
        return await self.fleet.status()

    async def shutdown(self, p: Params, req: Request) -> dict[str, Any]:
        p.done()
        self.request_exit()  # the drain waits for this very request to be answered
        return {"ok": True}
