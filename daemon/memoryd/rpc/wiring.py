"""Which pieces each group of methods works with: the daemon's method table, made once
its services are open (app.py's startup).

A group takes the named pieces it uses and nothing else; the services several groups share
(a search's answer, a forget's sequence, status) are made here once.

The groups a first keyword answer needs (hello, search, get, append) are made with the
table; ``status``'s report is made by its first call. The workspaces' and recall's groups
are made by the first call of one of their methods, and the rest (jobs, agents' flushes
and observations, the lifecycle, review, git sync) come later (rpc/dispatch.py), with the
modules they import: a daemon started by a question answers it without importing them.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.files.locks import FileLocks
from memoryd.jobs.clock import Clock
from memoryd.records import Record
from memoryd.rpc.daemon_methods import DaemonMethods
from memoryd.rpc.dispatch import Dispatcher, HandlerGroup, OnCall
from memoryd.rpc.memory_methods import MemoryMethods
from memoryd.runtime.config import Config
from memoryd.services import Services
from memoryd.workspace.search_service import SearchService
from memoryd.workspace.watcher import Watcher

if TYPE_CHECKING:
    from dataclasses import dataclass as frozen_record  # records.py says why

    from memoryd.files.append import Appender
    from memoryd.rpc.status import StatusReport
else:
    from memoryd.records import frozen_record


@frozen_record(frozen=True, kw_only=True, eq=False, repr=False)
class DaemonParts(Record):
    """What the daemon process itself holds that methods use (app.py)."""

    config: Callable[[], Config]  # the current one (a reload replaces it)
    clock: Clock
    env: Mapping[str, str]
    watcher: Watcher
    readers: Executor  # searches and reads
    stat_checks: Executor  # read-your-writes' stats where a stat may hang
    query_embedder: Executor  # a new query's embedding
    waiters: Executor  # long waits (reindex wait=true), apart so that they starve nothing
    appender: Callable[[], Appender]  # made on first use (an append, or the jobs)
    locks: FileLocks  # every writer of memory files takes its file's lock here
    socket_path: Path
    started_at: float  # monotonic
    server_status: Callable[[], dict[str, Any]]  # connections, refusals, fd limit
    degraded: Callable[[], list[str]]  # the daemon's own problems
    workspaces_changed: Callable[[], Awaitable[None]]  # the watch follows
    request_exit: Callable[[], None]


def method_table(sv: Services, d: DaemonParts) -> Dispatcher:
    """Every group of methods, each with the pieces it works with."""
    searches = _searches(sv, d)
    return Dispatcher(
        _first(sv, d, searches),
        lambda: _later(sv, d, searches),
        [
            OnCall(
                frozenset({"workspace.add", "workspace.remove", "workspace.list", "reindex"}),
                functools.partial(_workspaces, sv, d),
            ),
            OnCall(
                frozenset({"recall", "stats", "stats.record"}),
                functools.partial(_recall, sv, d, searches),
            ),
        ],
    )


def _searches(sv: Services, d: DaemonParts) -> SearchService:
    return SearchService(
        sv.registry,
        d.watcher,
        d.readers,
        d.stat_checks,
        d.query_embedder,
        d.config,
        hits=sv.hits,
        fleet=sv.fleet,
        fleet_off=sv.fleet_off,
    )


def _status(sv: Services, d: DaemonParts) -> StatusReport:
    from memoryd.rpc.status import StatusReport

    return StatusReport(
        registry=sv.registry,
        scheduler=lambda: sv.scheduler,
        watcher=d.watcher,
        config=d.config,
        socket_path=d.socket_path,
        started_at=d.started_at,
        server=d.server_status,
        degraded=d.degraded,
        fleet=sv.fleet,
        fleet_off=sv.fleet_off,
        hits=sv.hits,
        openclaw=sv.openclaw,
    )


def _first(sv: Services, d: DaemonParts, searches: SearchService) -> list[HandlerGroup]:
    """What a first question needs (a client's hello, a search)."""
    registry, config, clock = sv.registry, d.config, d.clock
    return [
        DaemonMethods(
            registry=registry,
            status=functools.cache(functools.partial(_status, sv, d)),
            request_exit=d.request_exit,
            fleet=sv.fleet,
            fleet_off=sv.fleet_off,
        ),
        MemoryMethods(
            registry=registry,
            searches=searches,
            appender=d.appender,
            watcher=d.watcher,
            trust=lambda: sv.trust,
            clock=clock,
            config=config,
            usage=sv.usage,
            fleet=sv.fleet,
        ),
    ]


def _workspaces(sv: Services, d: DaemonParts) -> HandlerGroup:
    from memoryd.rpc.workspace_methods import WorkspaceMethods

    return WorkspaceMethods(
        registry=sv.registry,
        workspaces_changed=d.workspaces_changed,
        readers=d.readers,
        waiters=d.waiters,
        openclaw=sv.openclaw,
    )


def _recall(sv: Services, d: DaemonParts, searches: SearchService) -> HandlerGroup:
    from memoryd.rpc.recall_methods import RecallMethods

    return RecallMethods(
        registry=sv.registry, searches=searches, usage=sv.usage, clock=d.clock, config=d.config
    )


def _later(sv: Services, d: DaemonParts, searches: SearchService) -> list[HandlerGroup]:
    """The rest, made once the first question is answered (or a method of theirs asked)."""
    from memoryd.lifecycle.forget_service import ForgetService
    from memoryd.rpc.agent_methods import AgentMethods
    from memoryd.rpc.job_methods import JobMethods
    from memoryd.rpc.lifecycle_methods import LifecycleMethods
    from memoryd.rpc.review_methods import ReviewMethods
    from memoryd.rpc.sync_methods import SyncMethods

    registry, config, clock = sv.registry, d.config, d.clock
    forgets = ForgetService(
        state=sv.state,
        locks=d.locks,
        config=config,
        hits=sv.hits,
        sync=sv.sync,
        fleet=sv.fleet,
    )
    return [
        JobMethods(
            registry=registry, scheduler=sv.scheduler, clock=clock, config=config, env=d.env
        ),
        AgentMethods(
            registry=registry,
            flushes=sv.flushes,
            history=sv.history,
            trust=sv.trust,
            clock=clock,
            config=config,
            env=d.env,
        ),
        LifecycleMethods(
            registry=registry,
            state=sv.state,
            searches=searches,
            forgets=forgets,
            history=sv.history,
            locks=d.locks,
            watcher=d.watcher,
            clock=clock,
            config=config,
        ),
        ReviewMethods(
            registry=registry,
            forgets=forgets,
            trust=sv.trust,
            locks=d.locks,
            config=config,
            hits=sv.hits,
        ),
        SyncMethods(registry=registry, config=config, sync=sv.sync),
    ]
