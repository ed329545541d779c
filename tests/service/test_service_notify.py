"""Readiness for Type=notify: READY=1 once the socket serves, STATUS= while the startup scan
runs, STOPPING=1 on SIGTERM, WATCHDOG=1 when asked; a real ``memoryd run`` and a real
datagram socket standing in for systemd."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, cast

import pytest
from structlog.testing import capture_logs

from daemon_util import short_home
from memoryd.exit_codes import EXIT_OK
from memoryd.index.types import SyncProgress, SyncReport
from memoryd.service.notify import STARTING_STATUS, STATUS_INTERVAL_S, Notifier, startup_status
from memoryd.workspace.served import Workspace
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(90)
FILES = 4000  # a startup scan of 1-2 s here: long enough to be seen scanning


class FakeSystemd:
    """The receiving end of NOTIFY_SOCKET: a datagram socket, by path or abstract name."""

    def __init__(self, directory: Path, abstract: bool = False) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = f"memoryd-test-{uuid.uuid4().hex}"
            self.sock.bind("\0" + name)
            self.address = "@" + name
        else:
            self.sock.bind(str(directory / "notify"))
            self.address = str(directory / "notify")
        self.messages: list[str] = []

    def receive(self, timeout: float = 15.0) -> str:
        self.sock.settimeout(timeout)
        message = self.sock.recv(4096).decode()
        self.messages.append(message)
        return message

    def wait_for(self, line: str, timeout: float = 15.0) -> list[str]:
        """Receive until a message holds ``line``; returns every message received so far."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.receive(max(0.01, deadline - time.monotonic()))
            if line in message.splitlines():
                return self.messages

    def close(self) -> None:
        self.sock.close()


def start(home: Path, notify: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    full = {
        **os.environ,
        "MEMORYD_HOME": str(home),
        "MEMORYD_EMBEDDING_PROVIDER": "none",
        "NOTIFY_SOCKET": notify,
        **(env or {}),
    }
    for key in ("MEMORYD_SOCKET", "MEMORYD_CONFIG", "WATCHDOG_USEC", "WATCHDOG_PID"):
        if key not in (env or {}):
            full.pop(key, None)
    return subprocess.Popen(
        [sys.executable, "-m", "memoryd.cli", "run"],
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture
def home() -> Iterator[Path]:
    with short_home() as h:
        yield h


def test_ready_when_the_socket_serves_status_while_scanning_stopping_on_sigterm(home: Path) -> None:
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    body = "".join(f"line {j} of a note about subject {j % 7}\n" for j in range(30))
    for i in range(FILES):
        (ws / "memory" / f"note-{i:05d}.md").write_text(f"# note {i}\n\n{body}")
    (home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\n')
    systemd = FakeSystemd(home)
    daemon = start(home, systemd.address)
    try:
        first = systemd.receive()
        assert first.splitlines() == ["READY=1", f"STATUS={STARTING_STATUS}"]
        with MemoryClient(home / "run" / "memoryd.sock", timeout=10) as client:
            assert client.connect().pid == daemon.pid  # READY=1 meant it: the socket serves
            messages = systemd.wait_for(f"STATUS=ready: 1 workspace, {FILES} files", 60)
            scan_s = client.status().raw["workspaces"][0]["startup_scan"]["seconds"]
        statuses = [m for m in messages[1:] if m.startswith("STATUS=")]
        assert all(
            re.fullmatch(
                r"STATUS=(indexing \d+/\d+ files|indexing: listing files|"
                r"opening 1 of 1 workspaces|ready: .*)",
                m,
            )
            for m in statuses
        ), statuses
        if scan_s > 2 * STATUS_INTERVAL_S:  # the status loop looked at least once meanwhile
            assert any(m.startswith("STATUS=indexing") for m in statuses), statuses
        daemon.send_signal(signal.SIGTERM)
        assert "STOPPING=1" in systemd.wait_for("STOPPING=1")[-1].splitlines()
        assert daemon.wait(20) == EXIT_OK
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        systemd.close()
    assert not any("READY=1" in m for m in systemd.messages[1:])  # exactly once


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets: Linux")
def test_abstract_namespace_notify_socket(home: Path) -> None:
    systemd = FakeSystemd(home, abstract=True)
    daemon = start(home, systemd.address)
    try:
        assert systemd.receive().startswith("READY=1\n")
        daemon.send_signal(signal.SIGTERM)
        systemd.wait_for("STOPPING=1")
        assert daemon.wait(20) == EXIT_OK
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        systemd.close()


def test_watchdog_pings_at_half_the_interval_only_when_meant_for_us(home: Path) -> None:
    systemd = FakeSystemd(home)
    daemon = start(home, systemd.address, {"WATCHDOG_USEC": "200000"})  # 0.2 s: ping 0.1 s
    try:
        started = time.monotonic()
        while systemd.messages.count("WATCHDOG=1") < 5:
            systemd.receive()
        assert time.monotonic() - started < 10
    finally:
        daemon.kill()
        daemon.wait()
        systemd.close()
    (home / "x").mkdir()
    other = FakeSystemd(home / "x")
    daemon = start(home, other.address, {"WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"})
    try:
        other.receive()  # READY=1
        time.sleep(1.0)
        other.sock.setblocking(False)
        while True:
            try:
                other.messages.append(other.sock.recv(4096).decode())
            except BlockingIOError:
                break
        assert "WATCHDOG=1" not in other.messages
    finally:
        daemon.kill()
        daemon.wait()
        other.close()


# -- the notifier and the status text, in process ----------------------------------------


def test_notifier_is_a_no_op_outside_systemd_and_never_raises(home: Path) -> None:
    assert not Notifier({}).enabled and Notifier({}).ready() is False
    gone = Notifier({"NOTIFY_SOCKET": str(home / "nobody-listens")})
    with capture_logs() as logs:
        assert gone.ready() is False and gone.status("x") is False
    assert [e["event"] for e in logs] == ["notify_failed"]  # once, not per message
    with capture_logs() as logs:
        vsock = Notifier({"NOTIFY_SOCKET": "vsock:2:1234"})
    assert not vsock.enabled and logs[0]["event"] == "notify_socket_unsupported"


def test_status_text_is_one_line_and_watchdog_needs_our_pid(home: Path) -> None:
    systemd = FakeSystemd(home)
    try:
        n = Notifier({"NOTIFY_SOCKET": systemd.address})
        assert n.status("two\nlines  here")
        assert systemd.receive() == "STATUS=two lines here"
    finally:
        systemd.close()
    usec = {"WATCHDOG_USEC": "3000000"}
    assert Notifier(usec).watchdog_interval == 1.5
    assert Notifier({**usec, "WATCHDOG_PID": str(os.getpid())}).watchdog_interval == 1.5
    assert Notifier({**usec, "WATCHDOG_PID": "1"}).watchdog_interval is None
    assert Notifier({"WATCHDOG_USEC": "junk"}).watchdog_interval is None


def workspace(
    name: str,
    *,
    scanning: SyncProgress | None = None,
    scanned: int | None = None,
    broken: bool = False,
) -> Workspace:
    ws = Workspace(name, Path("/w") / name, "config")
    if broken:
        ws.error = "not a directory"
        return ws
    ws.index = cast(Any, object())  # opened
    ws.scan = Future()
    if scanned is not None:
        ws.scan.set_result(SyncReport(files_scanned=scanned))
        ws.scan_report = ws.scan.result()
    ws.scan_progress = scanning
    return ws


def test_startup_status_sums_the_running_scans() -> None:
    assert startup_status([], provider_ready=False) == (STARTING_STATUS, False)
    one = workspace("a", scanning=SyncProgress("indexing", 120, 900))
    assert startup_status([one], True) == ("indexing 120/900 files", False)
    two = workspace("b", scanning=SyncProgress("indexing", 20, 100))
    done = workspace("c", scanned=7)
    assert startup_status([one, two, done], True) == (
        "indexing 140/1000 files in 2 workspaces",
        False,
    )
    assert startup_status([workspace("d")], True) == ("indexing: listing files", False)
    opening = Workspace("e", Path("/w/e"), "config")
    assert startup_status([done, opening], True) == ("opening 1 of 2 workspaces", False)
    assert startup_status([done, workspace("f", scanned=3), workspace("g", broken=True)], True) == (
        "ready: 3 workspaces, 10 files; unavailable: g",
        True,
    )
