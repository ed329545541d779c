"""The daemon process: ``serve()`` is ``startup(); main_loop(); shutdown()``.

Startup only does what is fast (lock, bind, state database, registry from config), so the
socket accepts within milliseconds; the indexes, their startup scans, the watcher and then
the embedding provider come up in the background and ``status`` shows their progress.
Signal handlers only set state; ``main_loop`` acts on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import memoryd
from memoryd import imports_ahead, secret_rules
from memoryd.embeddings import int8_rows
from memoryd.errors import IndexUnavailable, MemorydError
from memoryd.files.locks import FileLocks
from memoryd.jobs.clock import Clock, SystemClock, local_zone
from memoryd.rpc.connection import Limits
from memoryd.rpc.dispatch import Dispatcher
from memoryd.rpc.instance import Instance
from memoryd.rpc.server import Outcome, Request, Server
from memoryd.rpc.wiring import DaemonParts, method_table
from memoryd.runtime import asyncio_ssl, bytecode, heap, logs, short_slice
from memoryd.runtime.config import Config, ServerConfig, load_config
from memoryd.runtime.fdlimit import connection_cap, raise_nofile
from memoryd.runtime.logs import get_logger
from memoryd.runtime.pool import HandoffPool
from memoryd.runtime.priority import run_lowered
from memoryd.service.notify import (
    STARTING_STATUS,
    STATUS_INTERVAL_S,
    Notifier,
    startup_status,
)
from memoryd.services import Services
from memoryd.sqlite import make_private_dir
from memoryd.workspace.registry import Registry
from memoryd.workspace.search_service import STAT_THREADS
from memoryd.workspace.served import Workspace
from memoryd.workspace.watcher import Watcher, WatchTarget
from memoryd_client.paths import Paths

if TYPE_CHECKING:
    from memoryd.files.append import Appender
    from memoryd.jobs.scheduler import Scheduler

log = get_logger("memoryd.daemon")
MiB = 1024 * 1024
SOCKET_CHECK_S = 5.0  # how often the socket file is checked (a deleted one is made again)
WAIT_THREADS = 4  # reindex wait=true calls waiting at once; more queue up
PROVIDER_AFTER_SCANS_S = 2.0  # the provider loads once the startup scans end, or after this
# The start's other work (the watch, the provider, maintenance, and the modules of the
# methods and services a first answer does not use) waits for the first answer to a
# question, or this long: a daemon started by a question answers it sooner.
FIRST_ANSWER_FIRST_S = 1.0


class Daemon:
    def __init__(
        self,
        config: Config,
        *,
        paths: Paths,
        socket_path: Path,
        config_file: Path | None = None,
        env: Mapping[str, str] | None = None,
        handle_signals: bool = False,
        clock: Clock | None = None,
        announce: TextIO | None = None,
    ) -> None:
        """No side effects: everything is acquired in ``startup``. ``clock``: the jobs
        scheduler's (tests pass a fake one; default the system clock in the local zone).
        ``announce``: where to write one line for a person once the socket accepts."""
        self.config = config
        self.paths = paths
        self.socket_path = socket_path
        self.config_file = config_file
        self.env = dict(os.environ) if env is None else dict(env)
        self.handle_signals = handle_signals
        self.announce = announce
        self.started_at = time.monotonic()
        self.ready = asyncio.Event()  # the socket accepts
        self.background_ready = asyncio.Event()  # indexes opened, provider chosen
        self._answered = asyncio.Event()  # a first request (not hello) was answered
        self._later_made = False  # what the first answer did not need (_after_first_answer)
        self._exit = asyncio.Event()
        self._force = asyncio.Event()
        self._wake = asyncio.Event()
        self._reload = False
        self._signals = 0
        self._bg: asyncio.Task[None] | None = None
        self._socket_check: asyncio.Task[None] | None = None
        self.notifier = Notifier(self.env)  # systemd Type=notify; a no-op elsewhere
        self._service_tasks: set[asyncio.Task[None]] = set()
        self.instance = Instance(socket_path)
        self.file_locks = FileLocks()  # every writer of memory files (files/locks.py)
        self.watcher = Watcher(config.server.debounce_ms)
        # Searches and reads: one thread woken per job (runtime/pool.py says why that matters).
        self.readers = HandoffPool(
            config.server.reader_threads, thread_name_prefix="memoryd-reader"
        )
        # Read-your-writes' stats where one may hang (search_service.py): ended with the
        # daemon, which never waits for one stuck in a file server's request.
        self.stat_checks = HandoffPool(STAT_THREADS, thread_name_prefix="memoryd-stat")
        # Embedding a new query (5-20 ms in the model, which releases the GIL) runs here,
        # so it never holds up the reader that serves everyone's searches.
        self.query_embedder = ThreadPoolExecutor(1, thread_name_prefix="memoryd-query-embed")
        # Long waits (reindex wait=true: every vector in) get their own threads: abandoned
        # ones must not starve the default executor, which append and workspace changes use.
        self.waiters = ThreadPoolExecutor(WAIT_THREADS, thread_name_prefix="memoryd-wait")
        self.fd_limit = 0  # the soft RLIMIT_NOFILE, raised in startup
        self.server = Server(self._dispatch, self._limits(config.server))
        self._methods: Dispatcher | None = None
        self._services: Services | None = None
        self.clock: Clock = clock if clock is not None else SystemClock(local_zone(self.env))
        self._openclaw_task: asyncio.Task[None] | None = None
        self._startup_line: dict[str, Any] | None = None  # startup's log line, until logged

    @functools.cached_property
    def appender(self) -> Appender:
        """Every append to memory files (made on first use: an append, or the jobs)."""
        from memoryd.files.append import Appender

        return Appender(self.file_locks)

    def _appender(self) -> Appender:
        return self.appender

    @property
    def services(self) -> Services:
        assert self._services is not None, "startup() first"
        return self._services

    @property
    def registry(self) -> Registry:
        return self.services.registry

    @property
    def methods(self) -> Dispatcher:
        assert self._methods is not None, "startup() first"
        return self._methods

    async def _dispatch(self, req: Request) -> Outcome:
        # The socket accepts only once startup has made the methods' collaborators.
        try:
            return await self.methods.dispatch(req)
        finally:
            if req.method != "hello":  # a client's connect says hello before it asks
                self._answered.set()

    @property
    def scheduler(self) -> Scheduler:
        return self.services.scheduler

    # -- lifecycle ---------------------------------------------------------------------

    async def serve(self) -> int:
        """Run until asked to stop; returns the process exit code."""
        await self.startup()
        try:
            await self.main_loop()
        finally:
            await self.shutdown()
        return 0

    async def startup(self) -> None:
        started = time.perf_counter()
        # What asyncio reports itself (a failing callback, a task never awaited) goes to the
        # log as one JSON line like everything else, not as a bare traceback.
        asyncio.get_running_loop().set_exception_handler(_log_loop_exception)
        if self.handle_signals:
            # Before the socket exists: whoever sees it accept may signal us right away.
            self._install_signals()
        self.fd_limit = raise_nofile()[0]
        self.server.set_limits(self._limits(self.config.server))
        # Before the socket is taken: under socket activation that logs its path, whose
        # digits are masked with the rules the state folder keeps (else a child process
        # reads them from detect-secrets first: ~0.1 s, more on a loaded machine).
        secret_rules.keep_rules_in(self.paths.state_dir)
        sock = self.instance.acquire()
        self.socket_path = self.instance.socket_path  # a socket-activated one may differ
        try:
            for folder in (self.paths.data_dir, self.paths.index_dir, self.paths.state_dir):
                make_private_dir(folder)  # notes live in there: 0700 whatever the umask
            int8_rows.keep_in(self.paths.state_dir / "models")
            self._services = Services.open(
                config=lambda: self.config,
                paths=self.paths,
                env=self.env,
                clock=self.clock,
                watcher=self.watcher,
                appender=self._appender,
                locks=self.file_locks,
                reopened=self.refresh_watch,
            )
            self._methods = self._make_methods(self._services)
            await self.server.start(sock)
        except BaseException:
            self._close_sync()
            raise
        self.ready.set()
        self.notifier.ready(STARTING_STATUS)
        self._bg = asyncio.create_task(self._background_start(), name="memoryd-startup")
        self._socket_check = asyncio.create_task(
            self._check_socket_loop(), name="memoryd-socket-check"
        )
        self._start_service_tasks()
        # Logged once the first question is answered (_after_first_answer, or at shutdown):
        # its socket path has digits, so masking it compiles the secret detectors (~52 M
        # instructions; on a first start, a child process reads them) that the question
        # would otherwise wait for. Without a workspace there is no such question: now, masked
        # off the loop (logs.release_soon), so a first hello or workspace.add never waits.
        self._startup_line = {
            "socket": str(self.socket_path),
            "pid": os.getpid(),
            "ms": round((time.perf_counter() - started) * 1000, 1),
            "workspaces": len(self.registry.list()),
            "config": self.config.source or None,
            "socket_from": self.instance.manager,
            "open_file_limit": self.fd_limit,
            "answer_slice_ms": short_slice.this_thread_ms(),  # on the event loop's thread
        }
        if not self.registry.list():
            logs.release_soon()  # no question to answer first: the held lines (cli.py), now
            self._log_startup()
        if self.announce is not None:
            self.announce.write(ready_line(self.socket_path, self.registry.list()) + "\n")
            self.announce.flush()

    def _start_service_tasks(self) -> None:
        """Under systemd: STATUS= lines while the startup scans run, and watchdog pings."""
        if self.notifier.enabled:
            self._service_tasks = {
                asyncio.create_task(self._report_startup(), name="memoryd-status"),
                asyncio.create_task(self.notifier.watchdog_loop(), name="memoryd-watchdog"),
            }

    async def _report_startup(self) -> None:
        last = STARTING_STATUS  # sent with READY=1
        try:
            while True:
                text, over = startup_status(
                    self.registry.list(), self.registry.provider_ready.is_set()
                )
                if text != last:
                    self.notifier.status(text)
                    last = text
                if over and self.background_ready.is_set():
                    return
                await asyncio.sleep(STATUS_INTERVAL_S)
        except Exception:  # a status line is never worth a crash
            log.exception("status_report_failed")

    def _log_llm_state(self) -> None:
        """Once at start (and after a reload): which LLM jobs will be skipped, and why. The
        skipped runs themselves are then logged at debug level only."""
        from memoryd.jobs.registry import llm_jobs_without_llm

        missing = llm_jobs_without_llm(self.config, self.env)
        if missing is not None:
            jobs, problem = missing
            log.info(
                "llm_not_configured",
                jobs=jobs,
                reason=problem,
                effect="these jobs are skipped until an LLM is configured",
            )

    async def _background_start(self) -> None:
        try:
            # Which imports the engine for a workspace; their copies load after the answer.
            opening = self.registry.open_all(first_answer_first=True)
            if self.registry.list():
                await opening
                # The rest waits for the first answer (or FIRST_ANSWER_FIRST_S): on two
                # cores it took CPU from the question that started the daemon.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._answered.wait(), FIRST_ANSWER_FIRST_S)
            else:  # none yet: the first workspace.add would wait for the engine's imports
                await asyncio.gather(opening, asyncio.to_thread(imports_ahead.engine))
                # ...and for numpy's: once idle (the first answer out, or a second gone)
                self._service_tasks.add(asyncio.create_task(self._warm_numpy()))
            # What the next step makes on the loop imports its modules here, off it
            await asyncio.to_thread(run_lowered, imports_ahead.later)
            self._after_first_answer()
            # After the indexes (keyword search never waits for a model), beside the watch.
            # bytecode: for the next start, what cli.py imported before it could be cached
            cache = asyncio.to_thread(bytecode.cache_early)
            later = (self._watch_late(), self._load_provider(), cache)
            done = await asyncio.gather(*later, return_exceptions=True)
            for failed in done:
                if isinstance(failed, BaseException):
                    raise failed
        except Exception:
            log.exception("background_startup_failed")
        finally:
            if not self._exit.is_set():
                self._after_first_answer()  # if the start failed before it
                self._openclaw_task = asyncio.create_task(
                    self.services.openclaw.run(), name="memoryd-openclaw-sessions"
                )
                # After the indexes (a job's changes are indexed at once), and even when
                # something above failed: maintenance must not silently stop.
                self.scheduler.start()
                self.services.sync.start()  # after the indexes: a merge's files are indexed
            heap.freeze_long_lived()  # full collections walk what came after only
            self.background_ready.set()
            # The start-up's last step: what a measure of the daemon's own memory waits for.
            log.info("background_ready", ms=round((time.monotonic() - self.started_at) * 1000))

    async def _warm_numpy(self) -> None:
        """numpy, for the copies of the first index a workspace.add opens (~0.1 s): once
        idle after the start (never before the first answer), on a lowered thread."""
        from memoryd.runtime.lazy_numpy import np
        from memoryd.runtime.priority import run_lowered

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._answered.wait(), FIRST_ANSWER_FIRST_S)
        try:  # (the first read of the stand-in imports it: lazy_numpy.py)
            await asyncio.to_thread(run_lowered, lambda: np.__name__)
        except Exception as exc:  # the first index's copies will say it again
            log.warning("numpy_import_failed", error=str(exc))

    def _after_first_answer(self) -> None:
        """What the first answer did not need (once): the jobs and git sync (their listeners
        come before the watch), the methods that use them, and the LLM's state in the log."""
        if self._later_made:
            return
        self._later_made = True
        asyncio_ssl.give_ssl()  # before anything that could use TLS (cli.py imported asyncio)
        self.registry.first_answered()  # the indexes' in-memory copies (and numpy) load now
        logs.release_soon()  # the held lines, then the startup line: masked off the loop
        self._log_startup()
        heap.resume_collection()  # paused by `memoryd run` for the start (cli.py)
        self.services.upkeep  # noqa: B018 (made on first use)
        self.methods.load_later()
        self._log_llm_state()

    def _log_startup(self) -> None:
        """The ``startup`` line (once): the socket accepted, ``ms`` after the start began."""
        fields, self._startup_line = self._startup_line, None
        if fields is not None:
            log.info("startup", **fields)

    async def _watch_late(self) -> None:
        """The watch, begun after the startup scans (they may have passed a file that was
        written before the watch began): each index is synced once more, behind its scan
        (an unchanged file costs a stat)."""
        await self.refresh_watch()
        for ws in self.registry.list():
            if ws.index is not None:
                with contextlib.suppress(IndexUnavailable):  # removed meanwhile
                    ws.index.submit_sync(None)

    async def _load_provider(self) -> None:
        # Loading a model takes both cores (and the GIL while onnxruntime is imported) for
        # a second or more: the startup scans first, which make keyword search current (on
        # a restart they take milliseconds; a first index's vectors wait for its scan anyway),
        # and the keyword copies, so that the first searches after a start rank in memory
        # instead of sharing the cores with the model's graph optimisation.
        await self.registry.scans_done(PROVIDER_AFTER_SCANS_S)
        await self.registry.load_provider()

    async def _check_socket_loop(self) -> None:
        while True:
            await asyncio.sleep(SOCKET_CHECK_S)
            await self.check_socket()

    async def check_socket(self) -> None:
        """Make the socket file again if it was deleted (periodically and on SIGHUP)."""
        if self.server.shutting_down or not self.instance.socket_missing():
            return
        try:
            sock = self.instance.rebind()
            await self.server.serve_instead(sock)
        except Exception as exc:  # tried again at the next check
            log.error("socket_recreate_failed", socket=str(self.socket_path), error=str(exc))

    async def main_loop(self) -> None:
        while not self._exit.is_set():
            await self._wake.wait()
            self._wake.clear()
            if self._reload:
                self._reload = False
                await self.reload_config()
        log.info("main_loop_done", reason="exit requested")

    async def shutdown(self) -> None:
        started = time.perf_counter()
        self._log_startup()  # if stopped before its first answer
        self.notifier.stopping()
        for task in self._service_tasks:
            task.cancel()
        await asyncio.gather(*self._service_tasks, return_exceptions=True)
        self.server.stop_accepting()
        if self._socket_check is not None:
            self._socket_check.cancel()
        sv = self._services
        if self._openclaw_task is not None and sv is not None:
            await sv.openclaw.stop(self._openclaw_task)
        upkeep = sv.upkeep_made if sv is not None else None
        if upkeep is not None:
            upkeep.scheduler.begin_stop()  # running jobs stop before their next write
        cancelled = await self.server.drain(self.config.server.shutdown_timeout, self._force)
        if self._bg is not None and not self._bg.done():
            self._bg.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._bg
        if upkeep is not None:
            await upkeep.flushes.stop()
            await upkeep.scheduler.stop(
                0 if self._force.is_set() else self.config.server.shutdown_timeout
            )
            await upkeep.sync.stop()
        await self.watcher.close()
        if sv is not None and sv.fleet is not None:
            await sv.fleet.stop()  # releases its leases: another daemon may take them now
        await self.server.close()
        if sv is not None:
            await sv.registry.close()
        for pool in (self.readers, self.stat_checks, self.query_embedder, self.waiters):
            pool.shutdown(wait=False, cancel_futures=True)
        self._close_sync()
        log.info(
            "shutdown",
            ms=round((time.perf_counter() - started) * 1000, 1),
            cancelled_requests=cancelled,
            forced=self._force.is_set(),
        )

    def _close_sync(self) -> None:
        if self._services is not None:
            self._services.close()
        self.instance.release()

    def _server_status(self) -> dict[str, Any]:
        ms = short_slice.this_thread_ms()  # the event loop's slice (status runs on it)
        return {**self.server.stats(), "open_file_limit": self.fd_limit, "answer_slice_ms": ms}

    def _limits(self, cfg: ServerConfig) -> Limits:
        cap = cfg.max_connections
        if self.fd_limit and connection_cap(cap, self.fd_limit) < cap:
            cap = connection_cap(cap, self.fd_limit)
            log.warning(
                "max_connections_lowered",
                configured=cfg.max_connections,
                max_connections=cap,
                open_file_limit=self.fd_limit,
                fix="raise LimitNOFILE (systemd) or ulimit -n",
            )
        return Limits(
            max_frame_bytes=cfg.max_frame_bytes,
            max_connections=cap,
            connection_bytes=cfg.connection_buffer_mb * MiB,
            total_bytes=cfg.total_buffer_mb * MiB,
            idle_timeout=cfg.idle_timeout,
        )

    # -- requests from signals and methods ---------------------------------------------

    def request_exit(self, force: bool = False) -> None:
        if force:
            self._force.set()
        self._exit.set()
        self.server.shutting_down = True  # answer new requests `shutting_down` right away
        self._wake.set()

    def request_reload(self) -> None:
        self._reload = True
        self._wake.set()

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_exit_signal, sig)
        loop.add_signal_handler(signal.SIGHUP, self.request_reload)

    def _on_exit_signal(self, sig: signal.Signals) -> None:
        self._signals += 1
        force = self._signals > 1  # a second signal skips the drain
        log.info("signal", signal=sig.name, action="force exit" if force else "graceful exit")
        self.request_exit(force=force)

    async def reload_config(self) -> None:
        """SIGHUP: load the config again; a bad one is logged and the old one kept. A
        deleted socket file is made again."""
        await self.check_socket()
        try:
            new = load_config(self.config_file, self.env)
        except MemorydError as exc:
            log.error("config_reload_failed", error=exc.message, action="keeping the old config")
            return
        old, self.config = self.config, new
        self.server.set_limits(self._limits(new.server))
        restart_needed = [s for s in ("embedding", "index") if getattr(old, s) != getattr(new, s)]
        restart_needed += [
            f"server.{k}"
            for k in ("debounce_ms", "reader_threads")
            if getattr(old.server, k) != getattr(new.server, k)
        ]
        added, removed = await self.registry.reconcile_config(new)
        if added or removed:
            await self.refresh_watch()
        self.scheduler.wake()  # schedules may have changed
        if new.llm != old.llm or new.jobs != old.jobs:
            self._log_llm_state()
        log.info(
            "config_reloaded",
            source=new.source,
            workspaces_added=added,
            workspaces_removed=removed,
            needs_restart=restart_needed or None,
        )

    def _make_methods(self, sv: Services) -> Dispatcher:
        """Each group of methods with the pieces it works with (rpc/wiring.py)."""
        return method_table(
            sv,
            DaemonParts(
                config=lambda: self.config,
                clock=self.clock,
                env=self.env,
                watcher=self.watcher,
                readers=self.readers,
                stat_checks=self.stat_checks,
                query_embedder=self.query_embedder,
                waiters=self.waiters,
                appender=self._appender,
                locks=self.file_locks,
                socket_path=self.socket_path,
                started_at=self.started_at,
                server_status=self._server_status,
                degraded=self.degraded,
                workspaces_changed=self.refresh_watch,
                request_exit=self.request_exit,
            ),
        )

    # -- the watch -------------------------------------------------------------------------

    async def refresh_watch(self) -> None:
        """After the set of workspaces changed: the watcher and the scheduler follow (the
        upkeep is made first: its listeners hear every change the watch reports)."""
        upkeep = self._services.upkeep if self._services is not None else None
        await self.watcher.set_targets(
            WatchTarget(w.name, w.root, w.index)
            for w in self.registry.list()
            if w.index is not None
        )
        if upkeep is not None:
            upkeep.scheduler.wake()

    def degraded(self) -> list[str]:
        """What is wrong with the daemon itself (a workspace's own problems are its own)."""
        state = self._services.state if self._services is not None else None
        return [state.recovered] if state is not None and state.recovered else []


def ready_line(socket_path: Path, workspaces: list[Workspace]) -> str:
    """What a person starting ``memoryd run`` in a terminal needs: it works, where, what next."""
    from memoryd_client.command_names import typed  # shutil: not for a daemon spawned

    head = f"memoryd {memoryd.__version__} ready on {socket_path} (pid {os.getpid()})"
    stop = f"Stop: Ctrl-C or {typed('memoryd')} stop"
    if not workspaces:
        return f"{head}; no workspace yet: {typed('memctl')} workspace add PATH. {stop}"
    listed = ", ".join(f"{w.name} ({_home_relative(w.root)})" for w in workspaces[:5])
    more = f" and {len(workspaces) - 5} more" if len(workspaces) > 5 else ""
    return f"{head}; workspaces: {listed}{more}. {stop}"


def _home_relative(path: Path) -> str:
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def _log_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    log.error(
        "asyncio_error",
        message=str(context.get("message", "")),
        error=f"{type(exc).__name__}: {exc}" if exc is not None else None,
        exc_info=exc if isinstance(exc, BaseException) else None,
    )
