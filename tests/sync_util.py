"""Two hosts for the sync tests: two real daemons, two homes, one bare repository as the
remote (file://, or git:// through a real ``git daemon`` on loopback).

Each daemon has its own fake clock (tests/fakes/clock.py): nothing syncs on a schedule or
a debounce unless the test moves a clock; a test syncs with ``sync now``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon_util import DaemonThread, short_tmp, wait_for
from fakes.clock import FakeClock
from memoryd_client import MemoryClient

START = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
DAY = "2026-03-02"
DAILY = f"memory/{DAY}.md"


@dataclass
class Host:
    name: str
    home: Path
    ws: Path
    daemon: DaemonThread
    clock: FakeClock

    def client(self) -> MemoryClient:
        return MemoryClient(socket_path=self.daemon.socket_path, autostart=False, timeout=120)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with self.client() as c:
            return c.call(method, params or {})

    def sync(self) -> dict[str, Any]:
        """``sync.now``: the report of this host's one workspace."""
        with self.client() as c:
            runs = c.sync_now(workspace="notes")
        return runs[0].report

    def status(self) -> dict[str, Any]:
        with self.client() as c:
            return c.sync_status(workspace="notes").workspaces[0].raw

    def append(self, text: str, heading: str | None = None, day: str = DAY) -> None:
        with self.client() as c:
            c.append(text, workspace="notes", heading=heading, date=day)

    def read(self, rel: str) -> str:
        path = self.ws / rel
        return path.read_text() if path.exists() else ""

    def advance(self, seconds: float) -> None:
        self.daemon.call_in_loop(self.clock.advance, dt.timedelta(seconds=seconds))


def make_remote(tmp: Path) -> Path:
    bare = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return bare


@contextlib.contextmanager
def host(
    name: str,
    sync: dict[str, Any] | None = None,
    remote: str = "",
    extra: dict[str, Any] | None = None,
) -> Iterator[Host]:
    """A daemon with workspace "notes"; ``remote``: it syncs there as its config says;
    ``extra``: more config sections (fleet)."""
    home = short_tmp()
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    config = {
        "workspaces": [{"path": str(ws), "name": "notes", "sync_remote": remote}],
        "sync": {"host": name, **(sync or {})},
        **(extra or {}),
    }
    clock = FakeClock(START)
    try:
        with DaemonThread(home, config, clock=clock) as d:
            yield Host(name, home, ws, d, clock)
    finally:
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def two_hosts(remote: str, sync: dict[str, Any] | None = None) -> Iterator[tuple[Host, Host]]:
    """Hosts A and B, each syncing its workspace "notes" with ``remote``."""
    with host("laptop", sync) as a, host("desktop", sync) as b:
        for h in (a, b):
            with h.client() as c:
                c.sync_enable(remote, workspace="notes")
        yield a, b


def settle(a: Host, b: Host, rounds: int = 3) -> None:
    """Sync both hosts in turn until neither has anything to exchange."""
    for _ in range(rounds):
        ra, rb = a.sync(), b.sync()
        if not (ra["pulled"] or ra["pushed"] or rb["pulled"] or rb["pushed"]):
            return
    a.sync()


def remote_files(bare: Path, branch: str = "main") -> dict[str, str]:
    """The files of the remote's branch, as the remote holds them ({}: no branch yet)."""
    listed = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", branch],
        capture_output=True,
        text=True,
    )
    if listed.returncode:
        return {}
    out = listed.stdout.split()
    files = {}
    for rel in out:
        files[rel] = subprocess.run(
            ["git", "--git-dir", str(bare), "show", f"{branch}:{rel}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return files


def remote_history_text(bare: Path) -> str:
    """Every blob the remote holds, whatever commit: what a purge must reach."""
    objs = subprocess.run(
        ["git", "--git-dir", str(bare), "cat-file", "--batch-all-objects", "--batch-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    blobs = [line.split()[0] for line in objs if " blob " in line]
    return "\n".join(
        subprocess.run(
            ["git", "--git-dir", str(bare), "cat-file", "blob", oid],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for oid in blobs
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """A real ``git daemon`` serving ``base`` on loopback, pushes allowed; its URL root."""
    port = free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--export-all",
            "--enable=receive-pack",
            "--reuseaddr",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={base}",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        assert wait_for(listening, 10), "git daemon did not start"
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def lines_of(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip() and not line.startswith("#")]


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000
