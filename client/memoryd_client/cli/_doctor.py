"""``memctl doctor``: checks with ok/fail and the fix for each.

Local checks first (socket path and directory), then the daemon (reachable, protocol),
then what its ``status`` says (config, provider, vectors, each workspace). When no daemon
answers, ``memoryd doctor --json`` is run as a subprocess (never imported: the client stays
light) and its checks are merged in.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memoryd_client._autostart import find_memoryd
from memoryd_client.client import MemoryClient
from memoryd_client.command_names import typed
from memoryd_client.errors import ClientError, DaemonNotRunning, ProtocolMismatch, StaleSocket
from memoryd_client.paths import check_socket_path_length
from memoryd_client.types import Status


def start_fix() -> str:
    memoryd = typed("memoryd")
    return f"start the daemon: `{memoryd} run` (foreground) or `{memoryd} service install`"


MEMORYD_DOCTOR_TIMEOUT_S = 60.0


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    source: str = "memctl"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Report:
    checks: list[Check]
    daemon_running: bool

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def run_doctor(socket: Path, socket_override: str | None, timeout: float | None) -> Report:
    checks = [_socket_path_check(socket), _socket_dir_check(socket.parent)]
    running = False
    client = MemoryClient(socket_override, timeout=timeout, client_name="memctl doctor")
    try:
        hello = client.connect()
    except StaleSocket:
        detail = f"stale socket: {socket} exists but nobody listens (a daemon died)"
        checks.append(Check("daemon reachable", False, detail, start_fix() + "; it cleans up"))
        checks.extend(_memoryd_doctor(socket_override))
    except DaemonNotRunning:
        detail = f"memoryd is not running (no socket at {socket})"
        checks.append(Check("daemon reachable", False, detail, start_fix()))
        checks.extend(_memoryd_doctor(socket_override))
    except ProtocolMismatch as exc:
        running = True
        checks.append(Check("daemon reachable", True, f"answers at {socket}"))
        checks.append(
            Check("protocol", False, str(exc), "install the same version of memoryd and memctl")
        )
    except ClientError as exc:
        checks.append(Check("daemon reachable", False, str(exc), start_fix()))
    else:
        running = True
        checks.append(
            Check("daemon reachable", True, f"{hello.server} {hello.version}, pid {hello.pid}")
        )
        checks.append(Check("protocol", True, f"protocol {hello.protocol}"))
        try:
            checks.extend(status_checks(client.status()))
        except ClientError as exc:
            checks.append(Check("status", False, str(exc), "see the daemon's log"))
    finally:
        client.close()
    return Report(checks, running)


def _socket_path_check(socket: Path) -> Check:
    problem = check_socket_path_length(socket)
    if problem:
        return Check("socket path", False, problem, "set MEMORYD_SOCKET to a shorter path")
    return Check("socket path", True, str(socket))


def _socket_dir_check(directory: Path) -> Check:
    name = "socket directory"
    try:
        st = directory.stat()
    except FileNotFoundError:
        return Check(name, True, f"{directory} does not exist yet (memoryd creates it, 0700)")
    except OSError as exc:
        return Check(name, False, f"{directory}: {exc.strerror}", "check the path's permissions")
    if not stat.S_ISDIR(st.st_mode):
        return Check(name, False, f"{directory} is not a directory", f"remove {directory}")
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.getuid():
        return Check(
            name,
            False,
            f"{directory} belongs to uid {st.st_uid}, not you ({os.getuid()})",
            "set MEMORYD_SOCKET (or MEMORYD_HOME) to a directory of your own",
        )
    if mode & 0o077:
        return Check(
            name,
            False,
            f"{directory} has mode {mode:04o}: other users can reach the socket",
            f"chmod 700 {directory}",
        )
    return Check(name, True, f"{directory} (mode {mode:04o}, yours)")


def status_checks(status: Status) -> list[Check]:
    """Checks derived from the daemon's ``status``: config, provider, vectors, workspaces."""
    provider = status.provider
    keyword_only = provider.name == "none"
    described = provider.name
    if provider.model:
        described += f" {provider.model}"
    if provider.dims:
        described += f" ({provider.dims} dims)"
    if provider.reason:
        described += f": {provider.reason}"
    checks = [
        Check("config", True, status.config_source or "defaults (no config file)"),
        Check(
            "embedding provider",
            True,
            described + (" (keyword search only)" if keyword_only else ""),
            "configure [embedding] in the config file for vector search" if keyword_only else None,
        ),
        _vector_check(status),
    ]
    if not status.workspaces:
        checks.append(
            Check("workspaces", False, "none registered", f"{typed('memctl')} workspace add PATH")
        )
    for ws in status.workspaces:
        detail = f"{ws.path}: {ws.files} files, {ws.chunks} chunks"
        if ws.pending_files:
            detail += f", {ws.pending_files} files pending"
        if ws.pending_vectors:
            detail += f", {ws.pending_vectors} vectors pending"
        problems = [r for r in ws.degraded if not _expected(r, keyword_only)]
        if problems:
            checks.append(
                Check(
                    f"workspace {ws.name}",
                    False,
                    detail + "; degraded: " + "; ".join(problems),
                    f"fix the cause above, then `{typed('memctl')} reindex --workspace "
                    f"{ws.name}`; `{typed('memoryd')} doctor` checks the provider",
                )
            )
        else:
            checks.append(Check(f"workspace {ws.name}", True, detail))
    return checks


def _expected(reason: str, keyword_only: bool) -> bool:
    """A degraded reason that is the configured state, not a problem (provider none)."""
    return keyword_only and reason.startswith("keyword only")


def _vector_check(status: Status) -> Check:
    name = "vector search (sqlite-vec)"
    if not status.workspaces:
        return Check(name, True, "no workspace yet")
    off = sorted(
        {r for ws in status.workspaces for r in ws.degraded if r.startswith("vectors off")}
    )
    if off:
        return Check(
            name,
            False,
            "; ".join(off),
            "reinstall sqlite-vec in memoryd's environment (pip install --force-reinstall "
            "sqlite-vec) and check that this Python's sqlite3 can load extensions",
        )
    versions = sorted({ws.sqlite_vec for ws in status.workspaces if ws.sqlite_vec})
    loaded = f"sqlite-vec {', '.join(versions)} loaded" if versions else "sqlite-vec loaded"
    if status.provider.name == "none":
        return Check(name, True, f"{loaded}; not used (provider none)")
    waiting = [ws.name for ws in status.workspaces if not ws.vector_ready]
    if not waiting:
        return Check(name, True, f"{loaded}; vectors ready in every workspace")
    return Check(name, True, f"{loaded}; embedding in progress in {', '.join(waiting)}")


def _memoryd_doctor(socket_override: str | None) -> list[Check]:
    """The daemon-side checks, run as ``memoryd doctor --json`` (when installed)."""
    exe = find_memoryd()
    if exe is None:
        return [
            Check(
                "memoryd installed",
                False,
                "no `memoryd` executable next to this Python or on PATH",
                "install the daemon from a memoryd checkout: pip install ./client . "
                "(or point --socket at a daemon that runs elsewhere)",
            )
        ]
    env = dict(os.environ)
    if socket_override:
        env["MEMORYD_SOCKET"] = socket_override
    try:
        proc = subprocess.run(
            [exe, "doctor", "--json"],
            capture_output=True,
            text=True,
            timeout=MEMORYD_DOCTOR_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return [_doctor_failed(exe, str(exc))]
    try:
        raw_checks = json.loads(proc.stdout)["checks"]
        if not isinstance(raw_checks, list):
            raise TypeError("checks is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        lines = proc.stderr.strip().splitlines()
        why = f"exit {proc.returncode}: {lines[-1]}" if lines else f"unreadable output: {exc}"
        return [_doctor_failed(exe, why)]
    merged = []
    for item in raw_checks:
        if not isinstance(item, dict):
            continue
        fix = item.get("fix")
        merged.append(
            Check(
                name=str(item.get("name", "?")),
                ok=bool(item.get("ok")),
                detail=str(item.get("detail", "")),
                fix=None if fix is None else str(fix),
                source="memoryd doctor",
            )
        )
    return merged


def _doctor_failed(exe: str, why: str) -> Check:
    return Check(
        "memoryd doctor",
        False,
        f"`{exe} doctor --json` did not report ({why})",
        f"run `{exe} doctor` yourself",
    )
