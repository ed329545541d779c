"""What a running daemon is made of besides its socket: the state database and what keeps its
tables (hit counting, usage, what each agent session read), the workspaces' registry,
OpenClaw's session copies, and its upkeep: the jobs (runner, scheduler, flush queue), git
sync and the transcripts' watch; and fleet mode.

``Services.open`` makes them, in order, once the socket is held (app.py's startup); the
forgets and imports a kill interrupted are finished before anything reads the files. The
upkeep is made (and its modules imported) on first use: the daemon asks for it once the
first question is answered, before the watch begins, so a daemon started by a question does
not import the jobs and git sync before answering it; nor what each agent session read
(``trust``: made by a first append, or with the upkeep). The daemon starts, stops and closes
them (app.py); the methods get the pieces they use (rpc/wiring.py).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.files.layout import CHANGES_DIR
from memoryd.files.locks import FileLocks
from memoryd.fleet.configured import fleet_configured
from memoryd.jobs.clock import Clock
from memoryd.lifecycle.hits import HitCounter
from memoryd.records import Fields, Record
from memoryd.runtime.config import Config
from memoryd.runtime.logs import get_logger
from memoryd.runtime.state import StateDB
from memoryd.runtime.usage import Usage
from memoryd.workspace.openclaw_sessions import OpenClawSessions
from memoryd.workspace.registry import Registry
from memoryd.workspace.watcher import Watcher
from memoryd_client.paths import Paths

if TYPE_CHECKING:
    from dataclasses import dataclass as fields_record
    from dataclasses import dataclass as frozen_record  # records.py says why

    from memoryd.files.append import Appender
    from memoryd.fleet.service import FleetService  # psycopg: imported only in fleet mode
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.jobs.flush_queue import FlushQueue
    from memoryd.jobs.history import History
    from memoryd.jobs.scheduler import Scheduler
    from memoryd.jobs.session_trust import SessionTrust
    from memoryd.sync.service import SyncService
else:
    from memoryd.records import fields_record, frozen_record

log = get_logger("memoryd.daemon")


@frozen_record(frozen=True, eq=False, repr=False)
class Upkeep(Record):
    """What keeps memory up while nobody asks: the jobs and git sync."""

    history: History  # the jobs' runs
    scheduler: Scheduler
    flushes: FlushQueue
    sync: SyncService  # git sync of the workspaces that opt in


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Services(Fields):
    """The daemon's services besides its socket (module docstring), some made on first use."""

    state: StateDB
    hits: HitCounter  # how often search and recall returned each line
    usage: Usage  # what memory costs each agent
    registry: Registry
    openclaw: OpenClawSessions  # OpenClaw's session stores, copied
    make_trust: Callable[[], SessionTrust]  # once, on first use (``trust``)
    make_upkeep: Callable[[Services], Upkeep]  # once, on first use (``upkeep``)
    fleet: FleetService | None = None  # [fleet] dsn set (docs/fleet.md)...
    fleet_off: str | None = None  # ...else why fleet mode is configured but not running
    _upkeep: Upkeep | None = None
    _trust: SessionTrust | None = None

    @property
    def trust(self) -> SessionTrust:
        """What each agent session read (observe), made on first use: its old rows pruned."""
        if self._trust is None:
            self._trust = self.make_trust()
        return self._trust

    @property
    def upkeep(self) -> Upkeep:
        """The jobs and git sync, made (their modules imported) on first use."""
        if self._upkeep is None:
            self._upkeep = self.make_upkeep(self)
        return self._upkeep

    @property
    def upkeep_made(self) -> Upkeep | None:
        """The upkeep if it was made (what shutdown stops), without making it."""
        return self._upkeep

    @property
    def history(self) -> History:
        return self.upkeep.history

    @property
    def scheduler(self) -> Scheduler:
        return self.upkeep.scheduler

    @property
    def flushes(self) -> FlushQueue:
        return self.upkeep.flushes

    @property
    def sync(self) -> SyncService:
        return self.upkeep.sync

    @classmethod
    def open(
        cls,
        *,
        config: Callable[[], Config],
        paths: Paths,
        env: Mapping[str, str],
        clock: Clock,
        watcher: Watcher,
        appender: Callable[[], Appender],  # made on first use
        locks: FileLocks,
        reopened: Callable[[], Awaitable[None]],
    ) -> Services:
        """Blocking but fast (no index is opened here: ``registry.open_all`` does, in the
        background). ``reopened``: after a workspace came back from a failed open."""
        state = StateDB(paths.state_db)
        hits, usage = HitCounter(state), Usage(state)
        try:
            registry = Registry(
                config(),
                paths.index_dir,
                state,
                before_serving=_catch_up_index,  # a forget a kill interrupted is indexed first
                reopened=reopened,
            )
            registry.load()
            openclaw = OpenClawSessions(state, registry, watcher, lambda: config().index.sessions)
            _finish_changes(registry, config().forget.keep_days)
            services = cls(
                state=state,
                hits=hits,
                usage=usage,
                registry=registry,
                openclaw=openclaw,
                make_trust=functools.partial(_make_trust, state, env, clock, registry),
                make_upkeep=functools.partial(
                    _make_upkeep,
                    state=state,
                    usage=usage,
                    registry=registry,
                    config=config,
                    paths=paths,
                    env=env,
                    clock=clock,
                    watcher=watcher,
                    appender=appender,
                    locks=locks,
                ),
            )
            services._start_fleet(config, paths, env)
        except BaseException:
            hits.close()
            usage.close()
            state.close()
            raise
        return services

    def _start_fleet(
        self, config: Callable[[], Config], paths: Paths, env: Mapping[str, str]
    ) -> None:
        """Fleet mode when [fleet] has a DSN; psycopg is imported only then (memoryd[fleet])."""
        if not fleet_configured(config().fleet, env):
            return
        try:
            from memoryd.fleet.lease import holder_id
            from memoryd.fleet.service import FleetService
            from memoryd.fleet.settings import fleet_settings
        except ImportError as exc:
            self.fleet_off = (
                f"fleet mode needs psycopg ({exc}): install the daemon with "
                "its fleet extra (pip install '.[fleet]' in its checkout)"
            )
            log.error("fleet_off", error=self.fleet_off)
            return
        settings = fleet_settings(config().fleet, env)  # a bad DSN: ConfigError
        self.fleet = FleetService(
            settings,
            holder_id(paths.state_db.parent),
            self.registry.list,
            config,
            self.sync.sync_id,
        )
        self.fleet.start()

    def close(self) -> None:
        """The state database last: hit counting and usage write what is queued first."""
        self.hits.close()
        self.usage.close()
        self.state.close()


def _make_trust(
    state: StateDB, env: Mapping[str, str], clock: Clock, registry: Registry
) -> SessionTrust:
    from memoryd.jobs.session_trust import SessionTrust
    from memoryd.jobs.transcript_folders import TranscriptPlaces

    # the agents' transcript folders, and the workspaces' (a transcript is read too)
    places = TranscriptPlaces(env, lambda: [w.root for w in registry.list()])
    trust = SessionTrust(state, lambda: clock.now().timestamp(), places)
    trust.prune()
    return trust


def _make_upkeep(
    services: Services,
    *,
    state: StateDB,
    usage: Usage,
    registry: Registry,
    config: Callable[[], Config],
    paths: Paths,
    env: Mapping[str, str],
    clock: Clock,
    watcher: Watcher,
    appender: Callable[[], Appender],
    locks: FileLocks,
) -> Upkeep:
    """The jobs and git sync, and their listeners on the watch (which begins after this)."""
    from memoryd.jobs.flush_queue import FlushQueue
    from memoryd.jobs.history import History
    from memoryd.jobs.runner import Runner
    from memoryd.jobs.scheduler import Scheduler
    from memoryd.jobs.transcript_watch import TranscriptWatch
    from memoryd.sync.service import SyncService
    from memoryd.workspace.sync_forgets import SecureSyncWrites

    history = History(state)
    runner = Runner(history, clock, config, appender(), env, locks=locks, usage=usage)
    scheduler = Scheduler(history, clock, config, registry.list, runner)
    scheduler.recover()  # runs a kill interrupted are marked failed
    sync = SyncService(
        paths.state_dir,
        lambda: [(w.name, w.root) for w in registry.list()],
        config,
        clock,
        locks.locked,
        watcher.submit,
        SecureSyncWrites(registry.list),  # forgets that travel: secure deletes
    )
    watcher.listeners.append(sync.notify)
    watcher.listeners.append(TranscriptWatch(services.trust, registry).notify)
    return Upkeep(history, scheduler, FlushQueue(runner), sync)


def _changes_in(root: Path) -> bool:
    """Whether the workspace holds any change of the journal's (lifecycle/journal.py): most
    never had a forget or an import, and then its module is not even imported."""
    return os.path.isdir(root / CHANGES_DIR)


def _catch_up_index(root: Path, index: WorkspaceIndex) -> None:
    """lifecycle/forget_run.catch_up_index; its modules (a forget's) load only when a
    forget a kill interrupted waits for the index."""
    if not _changes_in(root):
        return
    from memoryd.lifecycle import journal

    if journal.unindexed(root):
        from memoryd.lifecycle.forget_run import catch_up_index

        catch_up_index(root, index)


def _redo_meta(root: Path, meta: dict[str, Any]) -> None:
    """lifecycle/forget_run.redo_meta: journal.recover calls it only for a change to redo."""
    from memoryd.lifecycle.forget_run import redo_meta

    redo_meta(root, meta)


def _finish_changes(registry: Registry, keep_days: float) -> None:
    """Finish the forgets and imports a kill interrupted, before anything reads the files
    (lifecycle/journal.py); drop the pre-images older than forget.keep_days."""
    now = time.time()
    for ws in registry.list():
        root = ws.root
        if not _changes_in(root):
            continue
        try:
            from memoryd.lifecycle import journal

            journal.recover(root, after=functools.partial(_redo_meta, root))
            journal.prune(root, keep_days, now)
        except Exception:  # one workspace's journal must not stop the daemon
            log.exception("change_recovery_failed", workspace=ws.name)
