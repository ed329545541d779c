"""sd_notify(3) without libsystemd: ``READY=1``, ``STATUS=...``, ``STOPPING=1``, ``WATCHDOG=1``.

systemd (``Type=notify``) puts the address of its notification socket in ``NOTIFY_SOCKET``:
a file-system path, or a Linux abstract socket written with a leading ``@``. Each message is
one datagram of newline-separated assignments. With ``WatchdogSec=`` it also sets
``WATCHDOG_USEC`` (and ``WATCHDOG_PID``: the watchdog is ours only if that is our pid, or
unset) and expects ``WATCHDOG=1`` at least that often; we ping twice as often, from the
event loop, so a stuck loop stops the pings and systemd restarts the daemon.

Outside systemd every call is a no-op. Sending never raises: the daemon must not fail
because its service manager went away.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from memoryd.runtime.logs import get_logger

if TYPE_CHECKING:
    from memoryd.workspace.served import Workspace

log = get_logger("memoryd.notify")

STATUS_INTERVAL_S = 0.5  # how often the startup STATUS= line is refreshed (when it changed)
STARTING_STATUS = "starting: loading the embedding provider"


class Notifier:
    def __init__(self, env: Mapping[str, str], pid: int | None = None) -> None:
        """Reads the environment only; no socket is opened until something is sent."""
        self.address = _address(env.get("NOTIFY_SOCKET", ""))
        self.watchdog_interval = _watchdog_interval(env, os.getpid() if pid is None else pid)
        self._failed = False

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *assignments: str) -> bool:
        """One datagram with these ``KEY=value`` lines; False when nothing was delivered."""
        if self.address is None or not assignments:
            return False
        data = "\n".join(assignments).encode("utf-8", "replace")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto(data, self.address)
        except OSError as exc:
            if not self._failed:  # once: a manager that went away would repeat this forever
                self._failed = True
                log.warning("notify_failed", socket=os.fsdecode(self.address), error=str(exc))
            return False
        return True

    def ready(self, status: str | None = None) -> bool:
        return self.send("READY=1", *([_status_line(status)] if status else []))

    def status(self, text: str) -> bool:
        return self.send(_status_line(text))

    def stopping(self, status: str | None = "shutting down") -> bool:
        return self.send("STOPPING=1", *([_status_line(status)] if status else []))

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    async def watchdog_loop(self) -> None:
        """Ping until cancelled; returns at once when systemd expects no pings."""
        interval = self.watchdog_interval
        if interval is None or self.address is None:
            return
        while True:
            self.watchdog()
            await asyncio.sleep(interval)


def _address(value: str) -> str | bytes | None:
    if value.startswith("@"):  # abstract namespace: a leading NUL byte on the wire
        return b"\0" + os.fsencode(value[1:])
    if value.startswith("/"):
        return value
    if value:  # e.g. vsock:CID:PORT (systemd in a VM): not something we can reach
        log.warning("notify_socket_unsupported", notify_socket=value)
    return None


def _watchdog_interval(env: Mapping[str, str], pid: int) -> float | None:
    """Seconds between two ``WATCHDOG=1`` (half of ``WATCHDOG_USEC``), or None when off."""
    try:
        usec = int(env.get("WATCHDOG_USEC", "0"))
        owner = int(env["WATCHDOG_PID"]) if env.get("WATCHDOG_PID") else pid
    except ValueError:
        return None
    if usec <= 0 or owner != pid:
        return None
    return usec / 2 / 1_000_000


def _status_line(text: str) -> str:
    return "STATUS=" + " ".join(text.split())  # one line, whatever the text holds


def startup_status(workspaces: Iterable[Workspace], provider_ready: bool) -> tuple[str, bool]:
    """The ``STATUS=`` text while the daemon starts, and whether the startup is over.

    "indexing 120/900 files" sums the startup scans still running (their progress comes in
    steps of 20 files); "ready: ..." once every workspace was opened and scanned.
    """
    items = list(workspaces)
    if not provider_ready:
        return STARTING_STATUS, False
    opening = [w for w in items if w.index is None and w.error is None]
    scanning = [w for w in items if w.scan is not None and not w.scan.done()]
    if scanning:
        progress = [w.scan_progress for w in scanning if w.scan_progress is not None]
        where = f" in {len(scanning)} workspaces" if len(scanning) > 1 else ""
        if not progress:
            return f"indexing: listing files{where}", False
        done, total = sum(p.done for p in progress), sum(p.total for p in progress)
        return f"indexing {done}/{total} files{where}", False
    if opening:
        return f"opening {len(opening)} of {len(items)} workspaces", False
    files = sum(w.scan_report.files_scanned for w in items if w.scan_report is not None)
    broken = [w.name for w in items if w.index is None]
    text = f"ready: {len(items)} workspace{'' if len(items) == 1 else 's'}, {files} files"
    if broken:
        text += f"; unavailable: {', '.join(broken)}"
    return text, True
