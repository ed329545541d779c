"""Helpers to run a real memoryd on a real short socket, and to talk raw protocol to it.

``run_daemon`` runs the daemon as a task in the caller's event loop; ``DaemonThread``
runs it in a thread with its own loop, for tests that use blocking sockets (Hypothesis,
the sync client). Socket paths live under /tmp so they stay short (macOS allows ~104
bytes).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from log_sink import log_to_the_tests_stderr
from memoryd.app import Daemon
from memoryd.runtime.config import config_from_mapping
from memoryd_client import cli, protocol
from memoryd_client.paths import default_paths

log_to_the_tests_stderr()


def short_tmp() -> Path:
    return Path(tempfile.mkdtemp(dir="/tmp", prefix="md"))


@contextlib.contextmanager
def short_home() -> Iterator[Path]:
    home = short_tmp()
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def make_daemon(
    home: Path,
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    socket_path: Path | None = None,
    clock: Any = None,
) -> Daemon:
    full_env = {"MEMORYD_HOME": str(home), "MEMORYD_EMBEDDING_PROVIDER": "none", **(env or {})}
    cfg = config_from_mapping(config or {}, full_env, source=str(home / "config.toml"))
    paths = default_paths(full_env)
    return Daemon(
        cfg,
        paths=paths,
        socket_path=socket_path or paths.socket,
        config_file=home / "config.toml",
        env=full_env,
        clock=clock,
    )


@contextlib.asynccontextmanager
async def run_daemon(
    home: Path,
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    wait_background: bool = True,
    clock: Any = None,
    ask: bool = True,
) -> AsyncIterator[Daemon]:
    """A started daemon (socket accepting; indexes open unless wait_background=False).
    ``clock``: the jobs scheduler's (tests/fakes/clock.py), default the real one.
    ``ask`` (with wait_background): a first question (``status``) once the socket accepts,
    as the client that starts a daemon asks one; with a workspace the rest of the background
    start waits for the first answer, and without one for app.FIRST_ANSWER_FIRST_S (1 s a
    start). False: a start nobody asks."""
    daemon = make_daemon(home, config, env, clock=clock)
    task = asyncio.create_task(daemon.serve())
    ready = asyncio.create_task(daemon.ready.wait())
    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED, timeout=10)
    if task.done():
        ready.cancel()
        task.result()  # raises the startup error
    if ask and wait_background:
        await asyncio.wait_for(_first_question(daemon.socket_path), 30)
    if wait_background:
        await asyncio.wait_for(daemon.background_ready.wait(), 30)
    try:
        yield daemon
    finally:
        daemon.request_exit()
        await asyncio.wait_for(task, 30)


async def _first_question(path: Path) -> None:
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(protocol.pack(protocol.request(1, "status")))
        await writer.drain()
        while True:  # events of the request come before its answer
            body = await reader.readexactly(protocol.frame_length(await reader.readexactly(4)))
            frame = protocol.unpack(body)
            if frame.get("id") == 1 and "event" not in frame:
                assert frame["ok"], frame
                return
    finally:
        writer.close()
        await writer.wait_closed()


class DaemonThread:
    """A daemon in a background thread: ``with DaemonThread(home) as d: d.socket_path``."""

    def __init__(
        self,
        home: Path,
        config: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        clock: Any = None,
        ask: bool = True,
    ) -> None:
        """``ask``: run_daemon's."""
        self.home, self.config, self.env, self.clock = home, config, env, clock
        self.ask = ask
        self.daemon: Daemon | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="test-daemon", daemon=True)

    @property
    def socket_path(self) -> Path:
        assert self.daemon is not None
        return self.daemon.socket_path

    def _main(self) -> None:
        async def body() -> None:
            self.loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            async with run_daemon(
                self.home, self.config, self.env, clock=self.clock, ask=self.ask
            ) as d:
                self.daemon = d
                self._started.set()
                await self._stop.wait()

        try:
            asyncio.run(body())
        except BaseException as exc:
            self._error = exc
        finally:
            self._started.set()

    def __enter__(self) -> DaemonThread:
        self._thread.start()
        self._started.wait(30)
        if self._error is not None:
            raise self._error
        return self

    def call_in_loop(self, fn: Any, *args: Any) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(fn, *args)

    def __exit__(self, *exc: object) -> None:
        if self.loop is not None and self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "daemon thread did not stop"
        if self._error is not None:
            raise self._error


class Proc:
    """A ``memoryd run`` subprocess with its stderr (JSON log lines) in a file."""

    def __init__(
        self, home: Path, *args: str, env: dict[str, str] | None = None, preexec_fn: Any = None
    ) -> None:
        self.home = home
        self.socket = home / "run" / "memoryd.sock"
        self.log_path = home / f"daemon-{time.monotonic_ns()}.log"
        full_env = {
            **os.environ,
            "MEMORYD_HOME": str(home),
            "MEMORYD_EMBEDDING_PROVIDER": "none",
            **(env or {}),
        }
        full_env.pop("MEMORYD_SOCKET", None)
        full_env.pop("MEMORYD_CONFIG", None)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in wait()
        self.started = time.monotonic()
        self.p = subprocess.Popen(
            [sys.executable, "-m", "memoryd.cli", "run", *args],
            env=full_env,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            preexec_fn=preexec_fn,
        )

    def ready(self, timeout: float = 15.0) -> float:
        """Seconds from spawn until the socket accepts (measured, never asserted)."""

        def accepts() -> bool:
            assert self.p.poll() is None, self.logs()
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(self.socket))
                return True
            except OSError:
                return False

        assert wait_for(accepts, timeout, interval=0.002), self.logs()
        return time.monotonic() - self.started

    def logs(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                out.append({"event": "raw", "line": line})
        return out

    def events(self) -> list[str]:
        return [e.get("event", "") for e in self.logs()]

    def wait(self, timeout: float = 20.0) -> int:
        try:
            return self.p.wait(timeout)
        finally:
            self._log.close()

    def rss_bytes(self) -> int:
        """The daemon's resident memory now (Linux /proc)."""
        for line in Path(f"/proc/{self.p.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def settled_rss_bytes(self, timeout: float = 10.0) -> int:
        """The daemon's resident memory once it stops growing by itself: after "ready" it
        still imports in the background (the file watcher's backend, the model's runtime),
        which a test that measures what a request holds must not count."""
        # The background start-up is done first (its last step logs it); then the imports
        # it set off settle. Waiting for the event, not for quiet samples alone: on a loaded
        # machine an import can pause longer than any quiet spell (a 41 MiB flake).
        wait_for(lambda: "background_ready" in self.events(), 60, 0.1)
        deadline = time.monotonic() + timeout
        last = self.rss_bytes()
        steady = 0
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.rss_bytes()
            # Five still samples in a row (1.5 s): on a loaded machine the background
            # imports pause longer than one interval between two steps of growth.
            steady = steady + 1 if abs(now - last) < (1 << 20) else 0
            if steady >= 5:
                return now
            last = now
        return last

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.wait()


class RawConn:
    """A blocking raw-protocol connection: frames out, frames in, nothing hidden."""

    def __init__(self, path: Path, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self._buf = b""
        self._ids = iter(range(1, 1 << 30))

    def send(self, msg: dict[str, Any]) -> None:
        self.sock.sendall(protocol.pack(msg))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> dict[str, Any] | None:
        """The next frame, or None on end of stream."""
        while True:
            if len(self._buf) >= 4:
                n = protocol.frame_length(self._buf[:4], 1 << 31)
                if len(self._buf) >= 4 + n:
                    body, self._buf = self._buf[4 : 4 + n], self._buf[4 + n :]
                    return protocol.unpack(body)
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return None
            self._buf += chunk

    def frame(self) -> dict[str, Any]:
        """The next frame; the connection must not end first."""
        frame = self.recv()
        assert frame is not None, "the daemon closed the connection"
        return frame

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        events: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Send one request and return its final frame (events collected if asked)."""
        req_id = next(self._ids)
        self.send(protocol.request(req_id, method, params))
        while True:
            frame = self.recv()
            assert frame is not None, f"connection closed while waiting for {method}"
            if frame.get("id") != req_id:
                continue
            if "event" in frame:
                if events is not None:
                    events.append(frame)
                continue
            return frame

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        frame = self.call(method, params)
        assert frame["ok"], frame
        return frame["result"]

    def closed_by_peer(self) -> bool:
        """True when the daemon closed the connection (after reading what is left)."""
        return self.recv() is None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def accepts(path: Path) -> bool:
    """Whether a Unix socket at ``path`` accepts a connection: its file appears at bind(),
    before listen(), so a file that exists may still refuse."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
        return True


def wait_for(predicate: Any, timeout: float = 5.0, interval: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def error_code(frame: dict[str, Any] | None) -> str | None:
    if frame is None or frame.get("ok", True):
        return None
    return str(frame["error"]["code"])


def memctl(daemon: DaemonThread, *argv: str) -> tuple[int, str, str]:
    """``memctl ARGV --socket`` the daemon's, in process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([*argv, "--socket", str(daemon.socket_path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()
