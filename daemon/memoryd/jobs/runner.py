"""Runs one job for one workspace: single-flight, in a thread, recorded from start to end.

The event loop never waits on a job: the job function runs in its own daemon thread and
the loop awaits a future. Daemon threads, because a job may sit in an LLM call for minutes
and must not hold the process at exit; what it could still do then is guarded (the cancel
flag before every write, MEMORY.md's atomic replace), and shutdown records the run as
interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from memoryd.errors import InvalidParams, MemorydError, Unavailable
from memoryd.files.append import Appender
from memoryd.files.locks import FileLocks
from memoryd.jobs.base import JobContext, JobOutcome, JobSpec, LlmNotConfigured
from memoryd.jobs.clock import Clock
from memoryd.jobs.history import History, RunRecord
from memoryd.jobs.registry import JOBS
from memoryd.runtime.config import Config
from memoryd.runtime.logs import get_logger
from memoryd.runtime.usage import Usage
from memoryd.workspace.served import Workspace

log = get_logger("memoryd.jobs")

T = TypeVar("T")
MAX_MESSAGE = 500


class AlreadyRunning(Unavailable):
    """A run of this job for this workspace is in progress (single-flight)."""


@dataclass
class Running:
    task: asyncio.Task[RunRecord]
    trigger: str
    started_at: float


def in_thread(fn: Callable[[], T], name: str) -> asyncio.Future[T]:
    """``fn()`` in a new daemon thread; its result (or exception) in an asyncio future."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.done():
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def target() -> None:
        try:
            value: Any = fn()
            ok = True
        except BaseException as exc:
            value, ok = exc, False
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=target, name=f"memoryd-job-{name}", daemon=True).start()
    return fut


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 3] + "..."


class Runner:
    def __init__(
        self,
        history: History,
        clock: Clock,
        config: Callable[[], Config],
        appender: Appender,
        env: Mapping[str, str],
        jobs: Mapping[str, JobSpec] = JOBS,
        *,
        locks: FileLocks,
        usage: Usage | None = None,
    ) -> None:
        """``locks``: the daemon's file locks (files/locks.py), which ``appender`` takes
        too; ``usage``: the runs' LLM tokens, per agent (runtime/usage.py)."""
        self.history = history
        self.clock = clock
        self.config = config
        self.appender = appender
        self.env = env
        self.jobs = jobs
        self.locks = locks
        self.cancelled = threading.Event()
        self.usage = usage
        self._running: dict[tuple[str, Path], Running] = {}

    def spec(self, name: str) -> JobSpec:
        spec = self.jobs.get(name)
        if spec is None:
            raise InvalidParams(
                f"unknown job {name!r} (jobs: {', '.join(self.jobs)})", {"param": "name"}
            )
        return spec

    def running(self, job: str, root: Path) -> Running | None:
        return self._running.get((job, root))

    def tasks(self) -> list[asyncio.Task[RunRecord]]:
        """The runs in progress."""
        return [r.task for r in self._running.values()]

    def start(
        self,
        job: str,
        ws: Workspace,
        *,
        trigger: str,
        scheduled_for: float | None,
        dry_run: bool = False,
        force: bool = False,
        on_progress: Callable[[str], None] | None = None,
        params: Mapping[str, Any] | None = None,
        spec: JobSpec | None = None,
    ) -> asyncio.Task[RunRecord]:
        """Start a run now; AlreadyRunning when one is in progress for (job, workspace).
        ``spec`` runs a job that is not scheduled (flush), with its ``params``."""
        spec = spec or self.spec(job)
        key = (job, ws.root)
        if self.cancelled.is_set():
            raise Unavailable("the daemon is shutting down: no new job runs")
        current = self._running.get(key)
        if current is not None:
            raise AlreadyRunning(
                f"{job} is already running for workspace {ws.name} (a {current.trigger} run "
                f"started {time.time() - current.started_at:.0f}s ago)",
                {"job": job, "workspace": ws.name},
            )
        started = self.clock.now()
        run_id: int | None = None
        try:
            run_id = self.history.start(
                job,
                ws.root,
                ws.name,
                trigger=trigger,
                dry_run=dry_run,
                scheduled_for=scheduled_for,
                started_at=started.timestamp(),
            )
        except Exception:  # the state database failing must not cost the run itself
            log.exception("job_record_error", job=job, workspace=ws.name, phase="start")
        loop = asyncio.get_running_loop()

        def progress(phase: str) -> None:  # called from the job's thread
            if on_progress is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(on_progress, phase)

        ctx = JobContext(
            job=job,
            workspace=ws.name,
            root=ws.root,
            index=ws.index,
            config=self.config(),
            now=started,
            dry_run=dry_run,
            force=force,
            appender=self.appender,
            locks=self.locks,
            history=self.history,
            env=self.env,
            cancelled=self.cancelled,
            trigger=trigger,
            progress=progress,
            params=dict(params or {}),
            run_id=run_id,
            usage=self.usage,
        )
        task = asyncio.create_task(
            self._execute(spec, ctx, run_id, scheduled_for), name=f"job-{job}-{ws.name}"
        )
        self._running[key] = Running(task, trigger, time.time())
        task.add_done_callback(lambda _: self._running.pop(key, None))
        return task

    def record_skip(
        self, job: str, ws: Workspace, *, trigger: str, scheduled_for: float | None, message: str
    ) -> RunRecord:
        """A run that did not start (e.g. the previous one still runs), recorded as such."""
        now = self.clock.now().timestamp()
        run_id = self.history.start(
            job,
            ws.root,
            ws.name,
            trigger=trigger,
            dry_run=False,
            scheduled_for=scheduled_for,
            started_at=now,
        )
        log.info(
            "job_run",
            job=job,
            workspace=ws.name,
            trigger=trigger,
            status="skipped",
            message=message,
        )
        return self.history.finish(run_id, "skipped", message, {}, now)

    async def _execute(
        self, spec: JobSpec, ctx: JobContext, run_id: int | None, scheduled_for: float | None
    ) -> RunRecord:
        t0 = time.monotonic()
        report: dict[str, Any] = {}
        quiet = False
        try:
            result = await in_thread(lambda: spec.load()(ctx), spec.name)
            status, message, report = "ok", result.message, result.report
        except JobOutcome as exc:
            status, message, report = exc.status, exc.message, exc.report
            # Said once at start (llm_not_configured); a scheduled skip every 15 minutes
            # per workspace would bury everything else at info level.
            quiet = isinstance(exc, LlmNotConfigured) and ctx.trigger != "manual"
        except MemorydError as exc:  # e.g. the daily file resolves outside the workspace
            status, message = "failed", exc.message
        except asyncio.CancelledError:
            self._finish(
                ctx,
                run_id,
                scheduled_for,
                "failed",
                "interrupted: the daemon shut down during the run",
                {},
                t0,
            )
            raise
        except Exception as exc:
            log.exception("job_error", job=spec.name, workspace=ctx.workspace)
            status, message = "failed", f"internal error: {type(exc).__name__}: {exc}"
        if ctx.dry_run:
            report["dry_run"] = True
        return self._finish(ctx, run_id, scheduled_for, status, message, report, t0, quiet=quiet)

    def _finish(
        self,
        ctx: JobContext,
        run_id: int | None,
        scheduled_for: float | None,
        status: str,
        message: str,
        report: dict[str, Any],
        t0: float,
        *,
        quiet: bool = False,
    ) -> RunRecord:
        seconds = time.monotonic() - t0
        ended = ctx.now.timestamp() + seconds
        tokens = sum(c.tokens for c in ctx.llm_clients)
        if tokens and self.usage is not None:  # what the run's LLM calls cost, and for whom
            agent = str(ctx.params.get("agent") or "memoryd")
            day = ctx.now.date().isoformat()
            self.usage.add(day, agent, ctx.workspace, f"llm_tokens_{ctx.job}", tokens)
        record: RunRecord | None = None
        if run_id is not None:
            try:
                record = self.history.finish(run_id, status, _one_line(message), report, ended)
            except Exception:  # logged below all the same; the caller still gets the record
                log.exception(
                    "job_record_error", job=ctx.job, workspace=ctx.workspace, phase="finish"
                )
        if record is None:  # not recorded: the run's outcome as it would have been
            record = RunRecord(
                run_id or 0,
                ctx.job,
                str(ctx.root),
                ctx.workspace,
                ctx.trigger,
                ctx.dry_run,
                scheduled_for,
                ctx.now.timestamp(),
                ended,
                status,
                _one_line(message),
                report,
            )
        (log.debug if quiet else log.info)(
            "job_run",
            job=ctx.job,
            workspace=ctx.workspace,
            trigger=ctx.trigger,
            dry_run=ctx.dry_run or None,
            status=status,
            message=record.message,
            seconds=round(seconds, 3),
        )
        return record

    async def stop(self, timeout: float) -> None:
        """No new runs; wait up to ``timeout`` for the running ones, then record them
        interrupted (their threads see the cancel flag before any write)."""
        self.cancelled.set()
        tasks = [r.task for r in self._running.values()]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
