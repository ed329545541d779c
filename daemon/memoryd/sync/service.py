"""When sync runs, in the daemon: a commit after writes settle, pulls and pushes on an
interval and on demand, and an unreachable remote retried with backoff.

One asyncio task sleeps until the earliest due time (the daemon's clock: tests move a fake
one) or a wake-up (a write, a sync asked for, a workspace enabled). The git work runs in a
thread, one at a time per workspace (the engine's lock); it never holds a lock an append
waits for, except while merged files are written (apply.py). A write never waits for the
network: commits are local, and an offline remote only makes the pushes wait.

- a write (seen by the watcher, or an append) marks the workspace dirty; ``debounce_seconds``
  after the last one, its files are committed (with ``interval_seconds = 0``, also pulled
  and pushed at once);
- every ``interval_seconds`` (and at start) a sync: commit, pull and merge, push;
- a sync that cannot reach the remote is tried again after ``retry_min_seconds``, doubling
  up to ``retry_max_seconds``; ``sync now`` tries at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memoryd.errors import InvalidParams, MemorydError, Unavailable
from memoryd.runtime.config import Config
from memoryd.runtime.logs import get_logger
from memoryd.sync import purge
from memoryd.sync import settings as saved
from memoryd.sync.apply import LockPaths, SecureWrites
from memoryd.sync.engine import Engine, Report
from memoryd.sync.snapshot import uncommitted
from memoryd.sync.status import Recorded, conflicts_in, display_remote, iso, waiting
from memoryd.sync.workspace_repo import open_engine
from memoryd_client.agents.project import normalize_remote

__all__ = ["SyncService"]

log = get_logger("memoryd.sync.service")
WALK_S = 3600.0  # the commit step looks at every file at least this often
STATUS_WAIT_S = 5.0  # status waits this long for a running sync to count what waits


class SyncClock(Protocol):
    @property
    def tz(self) -> dt.tzinfo: ...

    def now(self) -> dt.datetime: ...

    async def sleep_until(self, when: dt.datetime) -> None: ...


@dataclass
class _Ws:
    name: str
    root: Path
    folder: Path
    settings: saved.Settings
    engine: Engine | None = None
    problem: str | None = None  # why it cannot sync (git missing, a bad repository)
    recorded: Recorded | None = None
    dirty_at: float | None = None  # a write not committed yet (when first seen)
    last_write: float = 0.0
    next_sync: float = 0.0
    failures: int = 0
    task: asyncio.Task[Report | None] | None = None
    seen: dict[Path, tuple[int, int]] = field(default_factory=dict)  # (mtime_ns, size) told
    walked_at: float = 0.0  # the last commit step that looked at every file


class SyncService:
    def __init__(
        self,
        state_dir: Path,
        workspaces: Callable[[], Iterable[tuple[str, Path]]],
        config: Callable[[], Config],
        clock: SyncClock,
        locked: LockPaths,
        written: Callable[[str, list[Path]], None],
        secure: SecureWrites | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.workspaces = workspaces
        self.config = config
        self.clock = clock
        self.locked = locked
        self.written = written  # after a merge wrote files: the index picks them up
        self.secure = secure  # forgets that travel: deleted from the index securely
        self._ws: dict[Path, _Ws] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def _now(self) -> float:
        return self.clock.now().timestamp()

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="memoryd-sync")

    def wake(self) -> None:
        self._wake.set()

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        running = [w.task for w in self._ws.values() if w.task is not None]
        if running:  # a git call in its thread ends on its own; its outcome is kept
            await asyncio.wait(running, timeout=10)

    def notify(self, name: str, paths: Iterable[Path]) -> None:
        """A write in workspace ``name`` (the watcher's batches and appends). The watcher's
        echo of a write already told (an append's, a merge's own) is not a new write: the
        debounce is not started again by it."""
        for ws in self._ws.values():
            if ws.name == name and _changed(ws, paths):
                now = self._now()
                ws.dirty_at = ws.dirty_at or now
                ws.last_write = now
                self._wake.set()

    # -- which workspaces ----------------------------------------------------------------

    def _reconcile(self) -> None:
        cfg = self.config()
        wanted: dict[Path, tuple[str, saved.Settings]] = {}
        for name, root in self.workspaces():
            s = saved.load(self.state_dir, cfg, root)
            if s is not None:
                wanted[root] = (name, s)
        for root in [r for r in self._ws if r not in wanted]:
            del self._ws[root]
        for root, (name, s) in wanted.items():
            ws = self._ws.get(root)
            if ws is not None and ws.settings == s:
                ws.name = name
                continue
            ws = _Ws(name, root, saved.folder_of(self.state_dir, root), s)
            ws.dirty_at = ws.next_sync = self._now()  # what was written while we were down
            self._ws[root] = ws
            self._open(ws, cfg)

    def _open(self, ws: _Ws, cfg: Config) -> None:
        ws.recorded = Recorded(ws.folder)
        try:
            ws.engine = open_engine(
                ws.folder, ws.root, ws.settings, cfg, self.locked, self._now, self.secure
            )
            ws.problem = None
        except MemorydError as exc:
            ws.engine, ws.problem = None, exc.message
            log.error("sync_unavailable", workspace=ws.name, error=exc.message)

    def of(self, root: Path) -> _Ws | None:
        self._reconcile()
        return self._ws.get(root)

    # -- the loop ------------------------------------------------------------------------

    async def _loop(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                self._reconcile()
                now = self._now()
                for ws in self._ws.values():
                    what = self._due(ws, now)
                    if what is not None and ws.task is None and ws.engine is not None:
                        self._start(ws, what)
            except Exception:  # a bad settings file must not end syncing for good
                log.exception("sync_loop_error")
            await self._sleep(self._next_due())

    def _due(self, ws: _Ws, now: float) -> str | None:
        cfg = self.config().sync
        if ws.next_sync and now >= ws.next_sync and (cfg.interval_seconds or ws.failures):
            return "schedule" if not ws.failures else "retry"
        if ws.dirty_at is not None and now >= ws.last_write + cfg.debounce_seconds:
            return "write"
        return None

    def _next_due(self) -> float | None:
        cfg = self.config().sync
        times = []
        for ws in self._ws.values():
            if ws.task is not None or ws.engine is None:
                continue
            if ws.next_sync and (cfg.interval_seconds or ws.failures):
                times.append(ws.next_sync)
            if ws.dirty_at is not None:
                times.append(ws.last_write + cfg.debounce_seconds)
        return min(times) if times else None

    async def _sleep(self, until: float | None) -> None:
        waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(self._wake.wait())}
        if until is not None:
            when = dt.datetime.fromtimestamp(until, self.clock.tz)
            waits.add(asyncio.ensure_future(self.clock.sleep_until(when)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    def _start(self, ws: _Ws, trigger: str) -> asyncio.Task[Report | None]:
        cfg = self.config().sync
        full = trigger != "write" or cfg.interval_seconds == 0
        now = self._now()
        # The files are walked when a write was seen, when asked, and at least hourly (a
        # write the watcher could not see); else a sync is a fetch and a look at the refs.
        walk = ws.dirty_at is not None or trigger == "manual" or now - ws.walked_at > WALK_S
        if walk:
            ws.walked_at = now
        ws.dirty_at = None  # writes from now on make it dirty again
        ws.task = asyncio.create_task(self._run(ws, trigger, full, walk))
        return ws.task

    async def _run(self, ws: _Ws, trigger: str, full: bool, walk: bool) -> Report | None:
        engine = ws.engine
        assert engine is not None and ws.recorded is not None
        report: Report | None = None
        try:
            if full:
                report = await asyncio.to_thread(engine.sync, walk)
            else:
                snap = await asyncio.to_thread(engine.commit)
                report = Report(committed=snap.commit, held=snap.held)
            self._after(ws, report, trigger, full)
        except Exception as exc:
            message = (
                exc.message if isinstance(exc, MemorydError) else f"{type(exc).__name__}: {exc}"
            )
            log.error("sync_failed", workspace=ws.name, trigger=trigger, error=message)
            ws.recorded.failed(message, self._now(), trigger)
            self._backoff(ws)
        finally:
            ws.task = None
            self._wake.set()
        return report

    def _after(self, ws: _Ws, report: Report, trigger: str, full: bool) -> None:
        assert ws.recorded is not None
        now = self._now()
        ws.recorded.record(report, now, trigger)
        if report.written:
            paths = [ws.root / p for p in report.written]
            _changed(ws, paths)  # our own writes: their echo is no new write
            self.written(ws.name, paths)
        if not full:
            return
        if report.offline or report.error:
            log.warning("sync_offline", workspace=ws.name, error=report.offline or report.error)
            self._backoff(ws)
        else:
            ws.failures = 0
            ws.next_sync = now + self.config().sync.interval_seconds
        log.info(
            "sync_done",
            workspace=ws.name,
            trigger=trigger,
            pulled=report.pulled,
            pushed=report.pushed,
            written=len(report.written),
            held=len(report.held),
        )

    def _backoff(self, ws: _Ws) -> None:
        cfg = self.config().sync
        ws.failures += 1
        wait = min(cfg.retry_max_seconds, cfg.retry_min_seconds * 2 ** (ws.failures - 1))
        ws.next_sync = self._now() + wait

    # -- what the methods ask ------------------------------------------------------------

    async def sync_now(self, root: Path) -> tuple[Report | None, _Ws]:
        """A sync at once (after the one running, if any, so it sees the latest writes)."""
        ws = self.of(root)
        if ws is None:
            raise InvalidParams("sync is not enabled for this workspace (memctl sync enable)")
        if ws.engine is None:
            self._open(ws, self.config())
            if ws.engine is None:
                raise Unavailable(f"sync cannot run: {ws.problem}")
        while ws.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(ws.task)
        ws.failures = 0
        task = self._start(ws, "manual")
        report = await asyncio.shield(task)
        return report, ws

    def purge_plan(self, root: Path) -> dict[str, Any] | None:
        """What a purge of this workspace does to its sync (None: it does not sync)."""
        s = saved.load(self.state_dir, self.config(), root)
        return None if s is None else purge.describe(display_remote(s.remote))

    async def purge(self, root: Path, keys: set[str], paths: set[str]) -> dict[str, Any] | None:
        """After ``forget --purge``: memoryd's history rewritten without ``keys`` (and the
        whole files ``paths``) and force-pushed (purge.py); None when it does not sync."""
        ws = self.of(root)
        if ws is None or not (keys or paths):
            return None
        if ws.engine is None:
            self._open(ws, self.config())
        engine = ws.engine
        plan = self.purge_plan(root) or {}
        if engine is None:
            return {**plan, "done": False, "error": f"sync cannot run: {ws.problem}"}
        report = await asyncio.to_thread(engine.purge, keys, paths)
        assert ws.recorded is not None
        ws.recorded.record(report, self._now(), "purge")
        pending = report.offline is not None or report.error is not None
        return {
            **plan,
            "done": not pending,
            "force_pushed": report.pushed,
            "file_versions_rewritten": report.purged_versions,
            "pending": report.offline or report.error,
        }

    def sync_id(self, root: Path) -> str:
        """The workspace's identity across the hosts that sync it ('' when it does not):
        its remote (normalised: ssh and https URLs of one repository agree) and branch.
        Fleet mode publishes it so that fleet search reads one copy (docs/sync.md)."""
        s = saved.load(self.state_dir, self.config(), root)
        if s is None:
            return ""
        return f"{normalize_remote(s.remote) or s.remote.rstrip('/')}#{s.branch}"

    def enable(self, root: Path, settings: saved.Settings) -> None:
        saved.save(self.state_dir, root, settings)
        self._wake.set()

    def disable(self, root: Path) -> None:
        saved.remove(self.state_dir, root)
        self._reconcile()
        self._wake.set()

    def describe(self, root: Path, name: str) -> dict[str, Any]:
        """``sync.status`` of one workspace (blocking: git and the files are read)."""
        ws = self.of(root)
        if ws is None:
            return {"workspace": name, "enabled": False}
        cfg = self.config()
        rec = ws.recorded.data if ws.recorded is not None else {}
        out: dict[str, Any] = {
            "workspace": ws.name,
            "enabled": True,
            **describe_settings(ws.settings, ws.folder),
            "host": saved.default_host(cfg),
            "running": ws.task is not None,
            "problem": ws.problem,
            "last_commit_at": iso(rec.get("last_commit_at")),
            "last_pull_at": iso(rec.get("last_pull_at")),
            "last_push_at": iso(rec.get("last_push_at")),
            "offline_since": iso(rec.get("offline_since")),
            "last_sync": _last(rec.get("last_sync")),
            "next_sync_at": iso(ws.next_sync) if cfg.sync.interval_seconds or ws.failures else None,
            "failures": ws.failures,
            "held": rec.get("held", []),
            "purge_pending": _pending(ws),
            "conflicts": conflicts_in(ws.root, saved.scope_of(cfg)),
        }
        engine = ws.engine
        if engine is not None and engine.lock.acquire(timeout=STATUS_WAIT_S):
            try:
                head, _, seen = engine.repo.tips()
                out["waiting"] = {
                    **waiting(engine.repo, head, seen),
                    "files": uncommitted(engine.repo, ws.root, engine.scope, head),
                }
            except MemorydError as exc:
                out["problem"] = out["problem"] or exc.message
            finally:
                engine.lock.release()
        if out.get("waiting"):
            out["waiting"]["oldest_at"] = iso(out["waiting"]["oldest_at"])
        return out


def _changed(ws: _Ws, paths: Iterable[Path]) -> bool:
    """Whether any of ``paths`` changed since last told (and remember them as they are)."""
    changed = False
    for path in paths:
        try:
            st = os.stat(path)
            now = (st.st_mtime_ns, st.st_size)
        except OSError:
            now = (-1, -1)  # gone: a change once
        if ws.seen.get(path) != now:
            ws.seen[path] = now
            changed = True
    return changed


def _pending(ws: _Ws) -> dict[str, Any] | None:
    if ws.engine is None:
        return None
    p = purge.Pending.read(ws.engine.repo.git.git_dir)
    return None if p is None else {"since": iso(p.since), "lines": len(p.keys)}


def describe_settings(s: saved.Settings, folder: Path) -> dict[str, Any]:
    return {
        "remote": display_remote(s.remote),
        "branch": s.branch,
        "repo": s.repo,
        "repository": str(folder / "repo.git") if s.repo == "memoryd" else None,
        "from_config": s.from_config,
    }


def _last(last: Any) -> dict[str, Any] | None:
    if not isinstance(last, dict):
        return None
    return {**last, "at": iso(last.get("at"))}
