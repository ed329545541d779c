"""When jobs run: cron schedules per (job, workspace), evaluated in the local time zone.

One asyncio task sleeps until the earliest due time (or a wake-up: config reload,
workspace added or removed), starts what is due through the Runner (single-flight), and
sleeps again. There is no polling: with nothing due it sleeps until the next slot.

Catch-up: each (job, workspace) has an *anchor* in the state database, the last schedule
slot handled (or when the pair was first seen). At start, a slot after the anchor that is
already past (the daemon was down) is run once, now, whatever the number of slots missed;
likewise a wake-up long after the due time (the machine slept) runs once. A job disabled
and enabled again in one daemon's life starts afresh instead of catching up.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memoryd.cron import latest_at_or_before, next_after
from memoryd.jobs.base import JobSpec
from memoryd.jobs.clock import Clock
from memoryd.jobs.flush_queue import FLUSH
from memoryd.jobs.history import History, RunRecord, iso
from memoryd.jobs.registry import JOBS
from memoryd.jobs.runner import AlreadyRunning, Runner
from memoryd.runtime.config import Config
from memoryd.runtime.logs import get_logger
from memoryd.workspace.served import Workspace

log = get_logger("memoryd.scheduler")

LATE_S: Final = 120.0  # woken this long after a slot: the machine slept, it is a catch-up

Key = tuple[str, Path]  # (job, workspace root)


@dataclass
class Plan:
    schedule: str
    due: dt.datetime  # when to start
    slot: dt.datetime  # the schedule slot the run stands for
    trigger: str  # schedule | catch-up


class Scheduler:
    def __init__(
        self,
        history: History,
        clock: Clock,
        config: Callable[[], Config],
        workspaces: Callable[[], list[Workspace]],
        runner: Runner,
        jobs: Mapping[str, JobSpec] = JOBS,
    ) -> None:
        self.history = history
        self.clock = clock
        self.config = config
        self.workspaces = workspaces
        self.runner = runner
        self.jobs = jobs
        self.plans: dict[Key, Plan] = {}
        self._ws: dict[Key, Workspace] = {}
        self._dropped: set[Key] = set()  # disabled or removed meanwhile: no catch-up
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.sleeping = False  # waiting for the next due time or a wake-up (tests watch it)

    def spec(self, name: str) -> JobSpec:
        """The job ``name`` runs (``invalid_params`` naming the jobs when there is none)."""
        return self.runner.spec(name)

    @property
    def listed(self) -> dict[str, JobSpec]:
        """The jobs ``jobs.list`` and ``status`` show: the scheduled ones, then flush (run
        when an agent or a person asks, with no schedule)."""
        return {**self.jobs, FLUSH.name: FLUSH}

    @property
    def tz(self) -> dt.tzinfo:
        return self.clock.tz

    # -- lifecycle ---------------------------------------------------------------------

    def recover(self) -> None:
        """At startup, before any run: runs a previous daemon left ``running`` failed."""
        interrupted = self.history.mark_interrupted(self.clock.now().timestamp())
        if interrupted:
            log.warning(
                "job_runs_interrupted", runs=interrupted, reason="the daemon stopped during them"
            )

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="memoryd-scheduler")

    def wake(self) -> None:
        """Look at the config and the workspaces again (after a reload or a change)."""
        self._wake.set()

    def begin_stop(self) -> None:
        """No new runs from now on; running ones see the cancel flag."""
        self._stopping = True
        self.runner.cancelled.set()
        self._wake.set()

    async def stop(self, timeout: float) -> None:
        self.begin_stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.runner.stop(timeout)

    async def _loop(self) -> None:
        while not self._stopping:
            self._wake.clear()
            now = self.clock.now()
            try:
                self._refresh(now)
                for key, plan in list(self.plans.items()):
                    if plan.due.timestamp() <= now.timestamp():
                        self._fire(key, plan, now)
            except Exception:  # a bad state row must not end scheduling for good
                log.exception("scheduler_error")
            nxt = min(
                (p.due for p in self.plans.values()), key=lambda d: d.timestamp(), default=None
            )
            await self._sleep(nxt)

    async def _sleep(self, until: dt.datetime | None) -> None:
        waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(self._wake.wait())}
        if until is not None:
            waits.add(asyncio.ensure_future(self.clock.sleep_until(until)))
        self.sleeping = not self._wake.is_set()
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.sleeping = False
            for w in waits:
                w.cancel()

    # -- planning ----------------------------------------------------------------------

    def _wanted(self) -> dict[Key, tuple[str, Workspace]]:
        cfg = self.config()
        out: dict[Key, tuple[str, Workspace]] = {}
        for ws in self.workspaces():
            for name, spec in self.jobs.items():
                settings = spec.settings(cfg)
                if settings.enabled:
                    out[(name, ws.root)] = (settings.schedule, ws)
        return out

    def _refresh(self, now: dt.datetime) -> None:
        wanted = self._wanted()
        for key in [k for k in self.plans if k not in wanted]:
            del self.plans[key]
            self._dropped.add(key)
        for key, (schedule, ws) in wanted.items():
            self._ws[key] = ws
            plan = self.plans.get(key)
            if plan is None:
                self.plans[key] = self._first_plan(key, schedule, now)
            elif plan.schedule != schedule:  # a reload changed it: from now on, no catch-up
                due = next_after(schedule, now, self.tz)
                self.plans[key] = Plan(schedule, due, due, "schedule")

    def _first_plan(self, key: Key, schedule: str, now: dt.datetime) -> Plan:
        job, root = key
        anchor = None if key in self._dropped else self.history.anchor(job, root)
        if anchor is None:
            self.history.set_anchor(job, root, now.timestamp())
            due = next_after(schedule, now, self.tz)
            return Plan(schedule, due, due, "schedule")
        missed = next_after(schedule, dt.datetime.fromtimestamp(anchor, self.tz), self.tz)
        if missed.timestamp() > now.timestamp():
            return Plan(schedule, missed, missed, "schedule")
        slot = latest_at_or_before(schedule, now, self.tz) or missed
        return Plan(schedule, now, slot, "catch-up")

    def _fire(self, key: Key, plan: Plan, now: dt.datetime) -> None:
        job, root = key
        ws = self._ws[key]
        trigger, slot = plan.trigger, plan.slot
        if trigger == "schedule" and now.timestamp() - plan.due.timestamp() > LATE_S:
            trigger = "catch-up"  # woke long after the slot (asleep): one run for all missed
            slot = latest_at_or_before(plan.schedule, now, self.tz) or plan.slot
        due = next_after(plan.schedule, now, self.tz)
        self.plans[key] = Plan(plan.schedule, due, due, "schedule")
        try:
            self.history.set_anchor(job, root, slot.timestamp())
        except Exception:  # the run still happens (a restart may then catch it up again)
            log.exception("job_anchor_error", job=job, workspace=ws.name)
        if self._stopping:
            return
        try:
            self.runner.start(job, ws, trigger=trigger, scheduled_for=slot.timestamp())
        except AlreadyRunning as exc:
            try:
                self.runner.record_skip(
                    job,
                    ws,
                    trigger=trigger,
                    scheduled_for=slot.timestamp(),
                    message=f"not started: {exc.message}",
                )
            except Exception:
                log.exception("job_record_error", job=job, workspace=ws.name, phase="skip")

    # -- what the methods show ---------------------------------------------------------

    def next_run(self, job: str, ws: Workspace) -> dt.datetime | None:
        plan = self.plans.get((job, ws.root))
        if plan is not None:
            return plan.due
        settings = self.runner.spec(job).settings(self.config())
        if not settings.enabled:
            return None
        return next_after(settings.schedule, self.clock.now(), self.tz)

    def describe(self, job: str, ws: Workspace, history: int = 0) -> dict[str, Any]:
        spec = self.listed[job]
        scheduled = job in self.jobs
        settings = spec.settings(self.config()) if scheduled else None
        running = self.runner.running(job, ws.root)
        runs = self.history.recent(job, ws.root, max(1, history))
        last = runs[0] if runs else None
        out: dict[str, Any] = {
            "name": job,
            "workspace": ws.name,
            "path": str(ws.root),
            "summary": spec.summary,
            "schedule": settings.schedule if settings else "",  # "": when asked
            "enabled": settings.enabled if settings else True,
            "uses_llm": spec.uses_llm,
            "next_run": _iso(self.next_run(job, ws)) if scheduled else None,
            "running": running is not None,
            "last_run": self._brief(last),
        }
        if history:
            out["history"] = [r.to_dict(self.tz) for r in runs[:history]]
        return out

    def _brief(self, record: RunRecord | None) -> dict[str, Any] | None:
        if record is None:
            return None
        return {
            "status": record.status,
            "message": record.message,
            "trigger": record.trigger,
            "dry_run": record.dry_run,
            "started_at": iso(record.started_at, self.tz),
            "ended_at": iso(record.ended_at, self.tz),
        }

    def status_of(self, ws: Workspace) -> list[dict[str, Any]]:
        """Each job's schedule, next run and last result, for ``status``."""
        out = []
        for job in self.listed:
            d = self.describe(job, ws)
            out.append(
                {
                    k: d[k]
                    for k in ("name", "enabled", "schedule", "next_run", "running", "last_run")
                }
            )
        return out

    async def run_now(
        self,
        job: str,
        ws: Workspace,
        *,
        dry_run: bool,
        force: bool,
        on_progress: Callable[[str], None] | None = None,
    ) -> RunRecord:
        """A run by hand (``jobs.run``); the run goes on if the caller goes away."""
        task = self.runner.start(
            job,
            ws,
            trigger="manual",
            scheduled_for=None,
            dry_run=dry_run,
            force=force,
            on_progress=on_progress,
        )
        return await asyncio.shield(task)


def _iso(when: dt.datetime | None) -> str | None:
    return None if when is None else when.isoformat(timespec="seconds")
