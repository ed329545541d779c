"""The daemon process: ``serve()`` is ``startup(); main_loop(); shutdown()``.

Startup only does what is fast (lock, bind, state database, registry from config), so the
socket accepts within milliseconds; the embedding provider, the indexes, their startup
scans and the watcher come up in the background and ``status`` shows their progress.
Signal handlers only set state; ``main_loop`` acts on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memoryd.append import Appender
from memoryd.config import Config, load_config
from memoryd.errors import MemorydError
from memoryd.handlers import Methods
from memoryd.instance import Instance
from memoryd.logs import get_logger
from memoryd.server import Server
from memoryd.state import StateDB
from memoryd.watcher import Watcher, WatchTarget
from memoryd.workspaces import Registry, Workspace
from memoryd_client.paths import Paths

log = get_logger("memoryd.daemon")


class Daemon:
    def __init__(self, config: Config, *, paths: Paths, socket_path: Path,
                 config_file: Path | None = None, env: Mapping[str, str] | None = None,
                 handle_signals: bool = False) -> None:
        """No side effects: everything is acquired in ``startup``."""
        self.config = config
        self.paths = paths
        self.socket_path = socket_path
        self.config_file = config_file
        self.env = dict(os.environ) if env is None else dict(env)
        self.handle_signals = handle_signals
        self.started_at = time.monotonic()
        self.ready = asyncio.Event()  # the socket accepts
        self.background_ready = asyncio.Event()  # provider chosen, indexes opened
        self._exit = asyncio.Event()
        self._force = asyncio.Event()
        self._wake = asyncio.Event()
        self._reload = False
        self._signals = 0
        self._bg: asyncio.Task[None] | None = None
        self.instance = Instance(socket_path)
        self.appender = Appender()
        self.watcher = Watcher(config.server.debounce_ms)
        self.readers = ThreadPoolExecutor(config.server.reader_threads,
                                          thread_name_prefix="memoryd-reader")
        self.methods = Methods(self)
        self.server = Server(self.methods.dispatch,
                             max_frame_bytes=config.server.max_frame_bytes)
        self.state: StateDB | None = None
        self._registry: Registry | None = None

    @property
    def registry(self) -> Registry:
        assert self._registry is not None, "startup() first"
        return self._registry

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
        if self.handle_signals:
            # Before the socket exists: whoever sees it accept may signal us right away.
            self._install_signals()
        sock = self.instance.acquire()
        try:
            self.state = StateDB(self.paths.state_db)
            self._registry = Registry(self.config, self.paths.index_dir, self.state)
            self._registry.load()
            await self.server.start(sock)
        except BaseException:
            self._close_sync()
            raise
        self.ready.set()
        _sd_notify("READY=1")
        self._bg = asyncio.create_task(self._background_start(), name="memoryd-startup")
        log.info("startup", socket=str(self.socket_path), pid=os.getpid(),
                 ms=round((time.perf_counter() - started) * 1000, 1),
                 workspaces=len(self.registry.list()), config=self.config.source or None)

    async def _background_start(self) -> None:
        try:
            await self.registry.open_all()
            await self.refresh_watch()
        except Exception:
            log.exception("background_startup_failed")
        finally:
            self.background_ready.set()

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
        _sd_notify("STOPPING=1")
        self.server.stop_accepting()
        cancelled = await self.server.drain(self.config.server.shutdown_timeout, self._force)
        if self._bg is not None and not self._bg.done():
            self._bg.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._bg
        await self.watcher.stop()
        await self.server.close()
        if self._registry is not None:
            await self._registry.close()
        self.readers.shutdown(wait=False, cancel_futures=True)
        self._close_sync()
        log.info("shutdown", ms=round((time.perf_counter() - started) * 1000, 1),
                 cancelled_requests=cancelled, forced=self._force.is_set())

    def _close_sync(self) -> None:
        if self.state is not None:
            self.state.close()
            self.state = None
        self.instance.release()

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
        """SIGHUP: load the config again; a bad one is logged and the old one kept."""
        try:
            new = load_config(self.config_file, self.env)
        except MemorydError as exc:
            log.error("config_reload_failed", error=exc.message, action="keeping the old config")
            return
        old, self.config = self.config, new
        self.server.max_frame_bytes = new.server.max_frame_bytes
        restart_needed = [s for s in ("embedding", "index", "search")
                          if getattr(old, s) != getattr(new, s)]
        restart_needed += [f"server.{k}" for k in ("debounce_ms", "reader_threads")
                           if getattr(old.server, k) != getattr(new.server, k)]
        added, removed = await self.registry.reconcile_config(new)
        if added or removed:
            await self.refresh_watch()
        log.info("config_reloaded", source=new.source, workspaces_added=added,
                 workspaces_removed=removed, needs_restart=restart_needed or None)

    # -- shared helpers for the handlers ------------------------------------------------

    async def refresh_watch(self) -> None:
        await self.watcher.set_targets(
            WatchTarget(w.name, w.root, w.index) for w in self.registry.list()
            if w.index is not None)

    def provider_status(self) -> dict[str, Any]:
        reg = self.registry
        if reg.choice is None:
            return {"name": "loading", "model": "", "dims": None,
                    "reason": f"choosing {self.config.embedding.provider} provider"}
        p = reg.choice.provider
        return {"name": p.name if p else "none", "model": p.model if p else "",
                "dims": p.dims if p else None, "reason": reg.choice.reason}

    async def workspace_status(self, ws: Workspace) -> dict[str, Any]:
        out: dict[str, Any] = {"name": ws.name, "path": str(ws.root), "source": ws.source}
        if ws.index is None:
            out.update(files=0, chunks=0, pending_vectors=0, pending_files=0, last_sync=None,
                       index_generation=0, vector_ready=False, skipped={},
                       degraded=[ws.error or "opening the index"], watcher="not watched")
            return out
        loop = asyncio.get_running_loop()
        status = await loop.run_in_executor(self.readers, ws.index.status)
        out.update({k: v for k, v in status.items() if k not in out})
        out["pending_files"] = max(int(status.get("pending_files", 0)),
                                   self.watcher.pending(ws.name))
        out["watcher"] = self.watcher.describe(ws.name)
        scanning = ws.scan is not None and not ws.scan.done()
        scan: dict[str, Any] = {"running": scanning}
        if ws.scan_progress is not None and scanning:
            scan.update(ws.scan_progress.to_dict())
        if ws.scan_report is not None:
            scan["seconds"] = round(ws.scan_report.seconds, 3)
        out["startup_scan"] = scan
        return out


def _sd_notify(state: str) -> None:
    """Tell systemd (Type=notify) about readiness; a no-op outside systemd."""
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.connect(addr)
        s.sendall(state.encode())
