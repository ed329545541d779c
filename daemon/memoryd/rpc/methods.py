"""The method table (docs/protocol.md) and the mapping of failures to wire errors.

Each handler validates its params strictly (params.py), then does its work; engine calls
block, so they run in threads. Our own errors carry their wire code; anything else is an
``internal`` error with a logged traceback, and the daemon keeps serving.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import memoryd
from memoryd.errors import InvalidParams, MemorydError
from memoryd.files.append import Appender, normalise_heading
from memoryd.files.injected import injectable_text, injected_copy
from memoryd.files.layout import Layout
from memoryd.files.provenance import (
    APPEND_VIAS,
    ORIGINS,
    SESSION_KINDS,
    check_provenance,
    ledger_for,
)
from memoryd.files.reader import read_lines
from memoryd.index.types import Fusion, Mode, SearchRequest, SyncProgress, SyncReport
from memoryd.jobs.clock import Clock, zone_name
from memoryd.jobs.flush_queue import FLUSH
from memoryd.jobs.llm_config import llm_status
from memoryd.jobs.scheduler import Scheduler
from memoryd.jobs.session_trust import SessionTrust
from memoryd.lifecycle.hits import HitCounter
from memoryd.rpc.failures import known_failure
from memoryd.rpc.params import Params
from memoryd.rpc.server import Emit, Outcome, Request
from memoryd.rpc.status import StatusReport
from memoryd.runtime.config import Config
from memoryd.runtime.foreground import FOREGROUND
from memoryd.runtime.logs import get_logger
from memoryd.runtime.usage import Usage
from memoryd.secrets import mask_text_of
from memoryd.workspace.openclaw_sessions import OpenClawSessions, set_home
from memoryd.workspace.registry import Registry, Workspace
from memoryd.workspace.search_service import SearchService
from memoryd.workspace.watcher import Watcher
from memoryd_client import protocol
from memoryd_client.protocol import ErrorCode
from memoryd_client.search_terms import (
    DEFAULT_MODE,
    FUSIONS,
    MAX_RESULTS,
    MIN_SCORE_RANGE,
    MODES,
    SOURCES,
)

if TYPE_CHECKING:  # psycopg is imported only in fleet mode
    from memoryd.fleet.service import FleetService
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.jobs.flush_queue import FlushQueue
    from memoryd.sync.service import SyncService

log = get_logger("memoryd.rpc.methods")

Handler = Callable[[Params, Request], Awaitable[dict[str, Any]]]
PROGRESS_INTERVAL_S = 0.1
# Answered in milliseconds from what is in memory: background threads step aside while one
# runs. Not the ones that wait (reindex, a first index, jobs): they would slow what they
# wait for.
QUICK_METHODS = frozenset({"hello", "search", "get", "recall", "status", "workspace.list"})
HEARTBEAT_S = 1.0
JOB_HEARTBEAT_S = 5.0  # jobs.run: a progress event at least this often, for the client


def progress_callback(emit: Emit) -> Callable[[SyncProgress], None]:
    """A progress callback for engine threads: throttled there, then hopped to the loop.

    News goes out at most every 0.1 s (a new phase or the last step at once); a repeat of
    the same numbers only once a second, as a heartbeat for the client's timeout.
    """
    loop = asyncio.get_running_loop()
    last: list[Any] = [0.0, None]  # when, (phase, done, total)
    guard = threading.Lock()

    def callback(p: SyncProgress) -> None:
        now, key = time.monotonic(), (p.phase, p.done, p.total)
        with guard:
            age, prev = now - last[0], last[1]
            if key == prev and age < HEARTBEAT_S:
                return
            if (
                prev is not None
                and p.phase == prev[0]
                and p.done < p.total
                and age < PROGRESS_INTERVAL_S
            ):
                return
            last[0], last[1] = now, key
        loop.call_soon_threadsafe(emit, "progress", p.to_dict())

    return callback


class Methods:
    """The handlers, each with the parts it works with (made in ``Daemon.startup``)."""

    def __init__(
        self,
        *,
        registry: Registry,
        searches: SearchService,
        status: StatusReport,
        appender: Appender,
        watcher: Watcher,
        scheduler: Scheduler,
        clock: Clock,
        readers: Executor,
        waiters: Executor,
        config: Callable[[], Config],
        env: Mapping[str, str],
        workspaces_changed: Callable[[], Awaitable[None]],
        request_exit: Callable[[], None],
        fleet: FleetService | None = None,
        fleet_off: str | None = None,
        flushes: FlushQueue | None = None,
        trust: SessionTrust,
    ) -> None:
        """``readers``: searches and reads; ``waiters``: long waits (reindex wait=true),
        apart so that abandoned ones starve nothing; ``config``: the current one;
        ``workspaces_changed``: after a workspace was added or removed (the watch follows);
        ``fleet``: fleet mode when [fleet] is set, else why not (``fleet_off``)."""
        self.registry = registry
        self.searches = searches
        self.status_report = status
        self.appender = appender
        self.watcher = watcher
        self.scheduler = scheduler
        self.clock = clock
        self.readers = readers
        self.waiters = waiters
        self.config = config
        self.env = env
        self.workspaces_changed = workspaces_changed
        self.request_exit = request_exit
        self.fleet = fleet
        self.fleet_off = fleet_off
        self.flushes = flushes  # flush's queue (agent_methods.py)
        self.trust = trust  # what each agent session read (observe, append)
        self.openclaw: OpenClawSessions | None = None  # OpenClaw's session stores
        self.hits: HitCounter | None = None  # set by the daemon (app.py)
        self.usage: Usage | None = None  # what memory costs each agent (app.py)
        self.sync: SyncService | None = None  # set by the daemon (app.py)
        self.table: dict[str, Handler] = {
            "hello": self.hello,
            "status": self.status,
            "workspace.add": self.workspace_add,
            "workspace.remove": self.workspace_remove,
            "workspace.list": self.workspace_list,
            "search": self.search,
            "get": self.get,
            "append": self.append,
            "reindex": self.reindex,
            "jobs.list": self.jobs_list,
            "jobs.run": self.jobs_run,
            "fleet.status": self.fleet_status,
            "shutdown": self.shutdown,
        }

    async def dispatch(self, req: Request) -> Outcome:
        handler = self.table.get(req.method)
        if handler is None:
            known = ", ".join(sorted(self.table))
            return Outcome(
                protocol.error(
                    req.id,
                    ErrorCode.UNKNOWN_METHOD,
                    f"unknown method {req.method!r} (known: {known})",
                ),
                ErrorCode.UNKNOWN_METHOD,
            )
        quick = req.method in QUICK_METHODS
        if quick:  # background threads step aside while it runs (runtime/foreground.py)
            FOREGROUND.begin()
        try:
            if not isinstance(req.params, dict):
                raise InvalidParams("params must be a map", {"param": "params"})
            result = await handler(Params(req.method, req.params), req)
        except MemorydError as exc:
            return Outcome(protocol.error(req.id, exc.code, exc.message, exc.data), exc.code)
        except Exception as exc:
            failure = known_failure(exc)
            if failure is not None:
                log.warning("request_failed", method=req.method, id=req.id, error=failure.message)
                return Outcome(protocol.error(req.id, failure.code, failure.message), failure.code)
            log.exception("internal_error", method=req.method, id=req.id)
            text = f"{type(exc).__name__}: {exc}"
            return Outcome(
                protocol.error(
                    req.id, ErrorCode.INTERNAL, f"internal error in {req.method}: {text[:300]}"
                ),
                ErrorCode.INTERNAL,
            )
        finally:
            if quick:
                FOREGROUND.end()
        return Outcome(protocol.response(req.id, result), "ok")

    # -- methods -----------------------------------------------------------------------

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
        }

    async def status(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        p.done()
        items = [self.registry.resolve(ref)] if ref is not None else self.registry.list()
        if ref is not None:
            req.log_fields["workspace"] = items[0].name
        return await self.status_report.build(items)

    async def workspace_add(self, p: Params, req: Request) -> dict[str, Any]:
        path = p.required_path("path")
        name = p.text("name")
        wait = p.flag("wait")
        openclaw_home = p.path("openclaw_home")
        p.done()
        if openclaw_home is not None and not Path(openclaw_home).expanduser().is_absolute():
            raise InvalidParams(
                f"openclaw_home must be absolute, got {openclaw_home!r}",
                {"param": "openclaw_home"},
            )
        ws, added = await self.registry.add(path, name)
        req.log_fields["workspace"] = ws.name
        if openclaw_home is not None and self.openclaw is not None:
            # OpenClaw's workspace: its home's session stores are copied and indexed
            home = Path(openclaw_home).expanduser()
            await asyncio.to_thread(set_home, self.openclaw.state, ws.root, home)
            self.openclaw.poke()
        if added:
            await self.workspaces_changed()
        out: dict[str, Any] = {"name": ws.name, "path": str(ws.root), "added": added}
        if wait and added and openclaw_home is None:  # a first index in one round trip
            out["indexed"] = await self._first_scan(ws, req)
        elif wait:  # reindex wait=true in the same call
            out["indexed"] = await self._sync(ws.name, req, full=False, wait=True)
        return out

    async def _first_scan(self, ws: Workspace, req: Request) -> dict[str, Any]:
        """Wait on a workspace's first scan itself, as reindex wait=true would answer: a
        sync queued after it would only stat every file again."""
        await ws.opened.wait()
        scan, index = ws.scan, ws.index
        if scan is None or index is None:
            return await self._sync(ws.name, req, full=False, wait=True)
        progress = progress_callback(req.emit)
        ws.scan_listeners.append(progress)
        try:
            report = await asyncio.wrap_future(scan)
        except Exception:  # it is tried again later: a sync now says why, or indexes
            return await self._sync(ws.name, req, full=False, wait=True)
        finally:
            ws.scan_listeners.remove(progress)
        return await self._embedded(index, report, progress, wait=True)

    async def workspace_remove(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.required_path("workspace")
        delete_index = p.flag("delete_index")
        p.done()
        ws = await self.registry.remove(ref, delete_index)
        req.log_fields["workspace"] = ws.name
        await self.workspaces_changed()
        return {"name": ws.name, "path": str(ws.root), "removed": True}

    async def workspace_list(self, p: Params, req: Request) -> dict[str, Any]:
        p.done()
        return {"workspaces": [w.info() for w in self.registry.list()]}

    async def search(self, p: Params, req: Request) -> dict[str, Any]:
        query = p.required_text("query")
        ref = p.path("workspace")
        sreq = SearchRequest(
            query=query,
            max_results=p.integer("max_results", lo=1, hi=MAX_RESULTS),
            min_score=p.number("min_score", lo=MIN_SCORE_RANGE[0], hi=MIN_SCORE_RANGE[1]),
            sources=p.choice_list("sources", SOURCES, default=self.config().search.sources),
            mode=cast(Mode, p.choice("mode", MODES, default=DEFAULT_MODE)),
            fusion=cast("Fusion | None", p.choice("fusion", FUSIONS)),
            path_prefix=p.path("path_prefix"),
            since=_iso(p.date("since")),
            until=_iso(p.date("until")),
            projects=p.text_list("project"),
            today=(p.date("now") or self.clock.now().date()).isoformat(),
        )
        everywhere = p.flag("fleet")
        include_superseded = p.flag("include_superseded")
        p.done()
        answer = await self.searches.answer(
            ref, sreq, everywhere=everywhere, include_superseded=include_superseded
        )
        req.log_fields["workspace"] = answer.workspace
        if self.usage is not None and answer.index is not None:  # a local workspace's
            today = self.clock.now().date().isoformat()
            self.usage.searched(today, answer.workspace, answer.result["results"])
        return answer.result

    async def get(self, p: Params, req: Request) -> dict[str, Any]:
        path = p.required_path("path")
        ref = p.path("workspace")
        from_line = p.integer("from", lo=1)
        lines = p.integer("lines", lo=1)
        raw = p.flag("raw")
        # What may be put before a model as it is (the session-start digest): lines of
        # untrusted or system origin left out, annotation comments removed.
        injectable = p.flag("injectable")
        p.done()
        answer = await self._get(req, path, ref, from_line, lines)
        if injectable and not self.searches.remote(ref):
            ledger = ledger_for(self.registry.resolve(ref).root.resolve())
            answer["text"] = await asyncio.to_thread(
                injectable_text, answer["text"], ledger, str(answer["path"])
            )
        return answer if raw else mask_text_of(answer)

    async def _get(
        self, req: Request, path: str, ref: str | None, from_line: int | None, lines: int | None
    ) -> dict[str, Any]:
        if self.fleet is not None and (remote := self.fleet.split_ref(ref)):
            req.log_fields["workspace"] = ref
            return await self.fleet.get(*remote, path, from_line, lines)
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        config = self.config()
        cfg = config.index
        # The most a get can answer, reserved before the file is read: pipelined gets from
        # a peer that does not read wait here instead of each holding a file's text.
        await req.reserve(min(config.server.max_frame_bytes, cfg.max_file_bytes))
        layout = Layout(ws.root, cfg.sessions, cfg.extra_paths)
        result = await asyncio.to_thread(
            read_lines, layout, path, from_line, lines, cfg.max_file_bytes
        )
        return result.to_dict()

    async def append(self, p: Params, req: Request) -> dict[str, Any]:
        text = p.required_text("text")
        ref = p.path("workspace")
        date = p.date("date") or dt.date.today()
        heading = normalise_heading(p.text("heading", allow_empty=True))
        # The daemon decides provenance, never the text (docs/provenance.md): a caller that
        # says nothing is an agent.
        prov = check_provenance(
            p.choice("origin", ORIGINS),
            p.text("session_id"),
            p.choice("session_kind", SESSION_KINDS),
            default_origin="agent",
        )
        # How it came (an MCP tool call, an agent's flush of its session) and the agent's
        # tool-use id: the session's observed trust lowers the origin (session_trust.py).
        via = p.choice("via", APPEND_VIAS, default="append") or "append"
        call_id = p.text("call_id")
        p.done()
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        config = self.config()
        hold = "untrusted" if via == "mcp" and config.mcp.append_origin == "untrusted" else None
        prov, observed = await asyncio.to_thread(
            self.trust.for_write, prov, via, call_id, hold, ws.root
        )
        layout = Layout(ws.root, config.index.sessions, config.index.extra_paths)
        if await asyncio.to_thread(injected_copy, text, layout):
            raise InvalidParams(
                "text is only a copy of memory memoryd injected (recall or digest): "
                "it is in memory already, nothing appended",
                {"param": "text", "reason": "recalled"},
            )
        result = await asyncio.to_thread(
            self.appender.append,
            ws.root,
            text,
            date,
            heading,
            config.index.max_file_bytes,
            prov,
            via,
        )
        self.watcher.submit(ws.name, [result.abs_path])  # searchable without waiting for inotify
        if via == "flush" and prov.session_id and not result.duplicate:
            self.trust.flushed(prov.session_id)
        out = result.to_dict()
        out["origin"] = prov.origin
        if prov.session_id:
            out["session_observed"] = observed is not None
        return out

    async def reindex(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        full = p.flag("full")
        wait = p.flag("wait")
        p.done()
        return await self._sync(ref, req, full, wait)

    async def _sync(self, ref: str | None, req: Request, full: bool, wait: bool) -> dict[str, Any]:
        """A sync of workspace ``ref`` now (after its first scan, on the same writer),
        with ``wait`` until every vector is embedded: reindex's answer."""
        ws, index = await self.registry.index_of(ref)
        req.log_fields["workspace"] = ws.name
        progress = progress_callback(req.emit)
        report = await asyncio.wrap_future(index.submit_sync(None, full=full, progress=progress))
        return await self._embedded(index, report, progress, wait)

    async def _embedded(
        self,
        index: WorkspaceIndex,
        report: SyncReport,
        progress: Callable[[SyncProgress], None],
        wait: bool,
    ) -> dict[str, Any]:
        """A sync's answer, with ``wait`` once every vector is embedded."""
        loop = asyncio.get_running_loop()
        out = report.to_dict()
        if wait:  # its own executor: an abandoned long wait must not starve append
            started = time.monotonic()
            await loop.run_in_executor(self.waiters, index.wait_embedded, None, progress)
            out["vectors_seconds"] = round(time.monotonic() - started, 3)
        status = await loop.run_in_executor(self.readers, index.status)
        out["vectors_pending"] = int(status.get("pending_vectors", 0))
        return out

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
        self.scheduler.runner.spec(name)  # unknown job: invalid_params before anything else
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

    def _fleet(self) -> FleetService:
        if self.fleet is None:
            raise InvalidParams(
                self.fleet_off or "fleet mode is off: set [fleet] dsn (docs/fleet.md)",
                {"param": "fleet"},
            )
        return self.fleet

    async def fleet_status(self, p: Params, req: Request) -> dict[str, Any]:
        p.done()
        return await self._fleet().status()

    async def shutdown(self, p: Params, req: Request) -> dict[str, Any]:
        p.done()
        self.request_exit()  # the drain waits for this very request to be answered
        return {"ok": True}


def _iso(day: dt.date | None) -> str | None:
    return day.isoformat() if day is not None else None
