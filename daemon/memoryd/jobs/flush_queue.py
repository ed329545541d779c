"""Flush requests, one run at a time per workspace, in the order they came.

A hook's ``flush`` returns at once; the run waits here for the previous flush of the same
workspace (the job runner is single-flight per job and workspace) and is then recorded like
any job run. Several sessions ending together are all flushed, one after the other.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from memoryd.jobs.base import JobFn, JobSettings, JobSpec
from memoryd.jobs.history import RunRecord
from memoryd.jobs.runner import Runner
from memoryd.runtime.config import Config
from memoryd.runtime.logs import get_logger
from memoryd.workspace.served import Workspace

log = get_logger("memoryd.jobs")


def _load_flush() -> JobFn:
    from memoryd.jobs import flush

    return flush.run


def _no_settings(_: Config) -> JobSettings:
    raise AssertionError("flush runs when asked, never on a schedule")


FLUSH = JobSpec(
    "flush",
    "a transcript's durable facts into the daily file (LLM)",
    True,
    _no_settings,
    _load_flush,
)


class FlushQueue:
    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self._locks: dict[Path, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[RunRecord]] = set()

    def submit(
        self,
        ws: Workspace,
        transcript: Path,
        session_id: str,
        trigger: str = "hook",
        session_kind: str | None = None,
        agent: str | None = None,
    ) -> asyncio.Task[RunRecord]:
        task = asyncio.create_task(
            self._run(ws, transcript, session_id, trigger, session_kind, agent),
            name=f"flush-{ws.name}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    async def _run(
        self,
        ws: Workspace,
        transcript: Path,
        session_id: str,
        trigger: str,
        session_kind: str | None = None,
        agent: str | None = None,
    ) -> RunRecord:
        lock = self._locks.setdefault(ws.root, asyncio.Lock())
        async with lock:
            await ws.opened.wait()  # so that the notes reach the index at once
            run = self.runner.start(
                "flush",
                ws,
                trigger=trigger,
                scheduled_for=None,
                params={
                    "transcript": str(transcript),
                    "session_id": session_id,
                    **({"session_kind": session_kind} if session_kind else {}),
                    **({"agent": agent} if agent else {}),  # whose LLM tokens (usage)
                },
                spec=FLUSH,
            )
            return await asyncio.shield(run)

    def _done(self, task: asyncio.Task[RunRecord]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.warning("flush_not_run", error=f"{type(exc).__name__}: {exc}")

    async def stop(self) -> None:
        """Flushes still waiting for their turn are dropped (the offset did not move: the
        next flush of the session covers their lines)."""
        waiting = [t for t in self._tasks if not t.done()]
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
