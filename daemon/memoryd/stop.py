"""``memoryd stop``: ask the running daemon to shut down, then wait until its process is gone.

The daemon drains in-flight requests first (``server.shutdown_timeout``), so the wait is
bounded by the caller's timeout. Done means the process has exited, not only that the
socket closed: the daemon closes its indexes after it stops listening.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from memoryd_client import DaemonNotRunning, MemoryClient

POLL_S = 0.05


class StopTimeout(Exception):
    """The daemon accepted the request but was still running when the timeout ran out."""


@dataclass(frozen=True)
class Stopped:
    pid: int | None  # None: no daemon answered on the socket
    seconds: float


def stop_daemon(socket_path: Path, timeout: float) -> Stopped:
    """Stop the daemon at ``socket_path`` and wait for it; raises ClientError subclasses
    when the socket cannot be used, StopTimeout when it outlives ``timeout``."""
    started = time.monotonic()
    try:
        with MemoryClient(socket_path, timeout=timeout, client_name="memoryd stop") as client:
            pid = client.connect().pid
            client.shutdown()
    except DaemonNotRunning:
        return Stopped(None, 0.0)
    deadline = started + timeout
    while not _gone(pid, socket_path):
        if time.monotonic() > deadline:
            raise StopTimeout(
                f"memoryd (pid {pid}) accepted the stop request but is still running after "
                f"{timeout:g}s (it lets open requests finish first); wait longer with "
                f"--timeout, or end it at once with kill -9 {pid}"
            )
        time.sleep(POLL_S)
    return Stopped(pid, time.monotonic() - started)


def _gone(pid: int | None, socket_path: Path) -> bool:
    if pid is None:  # a daemon that did not say its pid: its socket stops accepting
        return not _accepts(socket_path)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: ours has gone and the pid was reused
        return True
    return _zombie(pid)


def _zombie(pid: int) -> bool:
    """Exited but not yet reaped by its parent (e.g. a client that autostarted it).

    Every thread must have ended: the main thread shows Z as soon as it exits, while the
    process's other threads may still be ending (or blocked in a system call), and until
    they have, its parent cannot reap it and it still holds its files."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # no /proc (macOS), or it went meanwhile
        return False
    fields = dict(line.partition(":")[::2] for line in status.splitlines())
    return (
        fields.get("State", "").strip().startswith("Z") and fields.get("Threads", "").strip() == "1"
    )


def _accepts(socket_path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(socket_path))
        except OSError:
            return False
    return True
