"""The maintenance jobs' methods: ``jobs.list`` and ``jobs.run`` (docs/jobs.md)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidParams
from memoryd.jobs.clock import Clock, zone_name
from memoryd.jobs.flush_queue import FLUSH
from memoryd.jobs.llm_config import llm_status
from memoryd.jobs.scheduler import Scheduler
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.runtime.config import Config
from memoryd.workspace.registry import Registry

if TYPE_CHECKING:
    from memoryd.rpc.dispatch import Handler

JOB_HEARTBEAT_S = 5.0  # jobs.run: a progress event at least this often, for the client


class JobMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        scheduler: Scheduler,
        clock: Clock,
        config: Callable[[], Config],
        env: Mapping[str, str],
    ) -> None:
        self.registry = registry
        self.scheduler = scheduler
        self.clock = clock
        self.config = config
        self.env = env

    def table(self) -> dict[str, Handler]:
        return {"jobs.list": self.jobs_list, "jobs.run": self.jobs_run}

    async def jobs_list(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        jobs = self.scheduler.listed
        name = p.choice("name", tuple(jobs))
        history = p.integer("history", lo=0, hi=100, default=0) or 0
        p.done()
        items = [self.registry.resolve(ref)] if ref is not None else self.registry.list()
        names = [name] if name else list(jobs)
        return {
            "timezone": zone_name(self.clock.tz),
            "llm": llm_status(self.config().llm, self.env),
            "jobs": [self.scheduler.describe(n, ws, history) for ws in items for n in names],
        }

    async def jobs_run(self, p: Params, req: Request) -> dict[str, Any]:
        """Run a job now and answer its run record (a failed run is a result, not an error).

        Progress events carry the job's phase, and a heartbeat every few seconds keeps the
        client waiting through long LLM calls.
        """
        name = p.required_text("name")
        ref = p.path("workspace")
        dry_run = p.flag("dry_run")
        force = p.flag("force")
        p.done()
        if name == FLUSH.name:  # listed by jobs.list, but it needs a transcript
            raise InvalidParams(
                "flush runs on a transcript: use the flush method (memctl flush PATH)",
                {"param": "name"},
            )
        self.scheduler.spec(name)  # unknown job: invalid_params before anything else
        ws = self.registry.resolve(ref)
        req.log_fields.update(workspace=ws.name, job=name)
        await ws.opened.wait()  # so that the run's changes reach the index at once
        phase = ["starting"]
        started = time.monotonic()

        def tell(text: str) -> None:
            phase[0] = text
            req.emit(
                "progress", {"phase": text, "done": int(time.monotonic() - started), "total": None}
            )

        async def heartbeat() -> None:
            while True:
                await asyncio.sleep(JOB_HEARTBEAT_S)
                tell(phase[0])

        beat = asyncio.create_task(heartbeat())
        try:
            record = await self.scheduler.run_now(
                name, ws, dry_run=dry_run, force=force, on_progress=tell
            )
        finally:
            beat.cancel()
        return record.to_dict(self.clock.tz)
