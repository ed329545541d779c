"""``memoryd service install | uninstall | status``: what the user sees, and the exit codes.

Errors are one line on stderr (``memoryd: ...``) with a named exit code from ``memoryd.cli``.
Without a service manager (a container, WSL without systemd, an ssh-only macOS session)
every action says so and points to ``memoryd run``; ``--dry-run`` still prints the plan.
"""

from __future__ import annotations

import contextlib
import json
import os
import plistlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from memoryd.exit_codes import EXIT_ERROR, EXIT_NO_SERVICE_MANAGER, EXIT_OK, EXIT_SERVICE_FAILED
from memoryd.service.manager import (
    IGNORED_ENV,
    Availability,
    CommandFailed,
    NoServiceManager,
    Plan,
    Runner,
    ServiceError,
    availability,
    execute,
    ignored_env_notes,
    launch_agents_dir,
    launchd_install,
    launchd_job,
    launchd_uninstall,
    private_tmp_notes,
    run_command,
    systemd_install,
    systemd_uninstall,
    systemd_units,
    user_unit_dir,
)
from memoryd.service.render import PLIST, SERVICE_UNIT, SOCKET_UNIT, RenderError, find_memoryd
from memoryd_client.paths import default_paths, socket_path

FOREGROUND = "run the daemon in the foreground with `memoryd run` instead"


def main(
    action: str,
    *,
    socket_activation: bool = False,
    dry_run: bool = False,
    as_json: bool = False,
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    runner: Runner = run_command,
    platform: str = sys.platform,
    avail: Availability | None = None,
) -> int:
    """Run one action; ``runner``, ``platform`` and ``avail`` are there for tests."""
    env = dict(os.environ) if env is None else dict(env)
    out, err = out or sys.stdout, err or sys.stderr
    try:
        avail = avail or availability(runner, platform)
        if action == "status":
            return _status(avail, env, as_json, runner, out)
        plan = _plan(action, avail, env, socket_activation)
        if dry_run:
            _print_dry_run(plan, avail, action, socket_activation, out)
            return EXIT_OK
        if not avail.ok:
            raise NoServiceManager(f"{avail.detail}: cannot {action} the service; {FOREGROUND}")
        if not plan.steps:  # nothing to do, and the notes say why
            for note in plan.notes:
                print(note, file=out)
            return EXIT_OK
        execute(plan, runner, echo=lambda line: print(line, file=out))
        if action == "install":
            _after_install(plan, env, out)
        else:
            print(
                f"memoryd is uninstalled ({plan.manager}); your config, indexes and memory "
                "files are left as they are",
                file=out,
            )
        return EXIT_OK
    except NoServiceManager as exc:
        print(f"memoryd: {exc}", file=err)
        return EXIT_NO_SERVICE_MANAGER
    except CommandFailed as exc:
        print(f"memoryd: {exc}", file=err)
        return EXIT_SERVICE_FAILED
    except (ServiceError, RenderError, OSError) as exc:
        print(f"memoryd: {exc}", file=err)
        return EXIT_ERROR


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def _default_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment the service will run with, as far as paths go."""
    return {k: v for k, v in env.items() if k not in IGNORED_ENV}


def _service_workspaces(env: Mapping[str, str]) -> list[Path]:
    """The workspaces the service's daemon will watch, as far as files tell: the config's
    and the registered ones (``workspaces.json``, the registry's plain copy), at the default
    locations the service uses."""
    from memoryd.errors import ConfigError
    from memoryd.runtime.config import load_config
    from memoryd.runtime.state import REGISTRY_COPY

    service_env = _default_env(env)
    found: list[Path] = []
    with contextlib.suppress(ConfigError):  # the daemon reports a bad config at start
        found += [Path(w.path).expanduser() for w in load_config(env=service_env).workspaces]
    copy = default_paths(service_env).state_dir / REGISTRY_COPY
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        found += [Path(w["path"]) for w in json.loads(copy.read_text("utf-8"))["workspaces"]]
    return list(dict.fromkeys(found))


def _plan(
    action: str, avail: Availability, env: Mapping[str, str], socket_activation: bool
) -> Plan:
    if avail.manager is None:
        raise NoServiceManager(f"{avail.detail}; {FOREGROUND}")
    home = _home(env)
    if avail.manager == "systemd":
        unit_dir = user_unit_dir(env, home)
        if action == "uninstall":
            return systemd_uninstall(unit_dir)
        exe = find_memoryd()
        plan = systemd_install(exe, unit_dir, socket_activation)
        plan.notes += private_tmp_notes(exe, _service_workspaces(env))
        if not env.get("XDG_RUNTIME_DIR"):
            plan.notes.append(
                "XDG_RUNTIME_DIR is not set in this shell: memctl here will not "
                "find the service's socket in $XDG_RUNTIME_DIR/memoryd"
            )
    else:
        if action == "uninstall":
            return launchd_uninstall(home, os.getuid())
        paths = default_paths(_default_env(env))
        plan = launchd_install(
            find_memoryd(), home, os.getuid(), paths.socket, paths.log_dir, socket_activation
        )
    plan.notes += ignored_env_notes(env)
    return plan


def _print_dry_run(
    plan: Plan, avail: Availability, action: str, socket_activation: bool, out: TextIO
) -> None:
    flag = " --socket-activation" if socket_activation and action == "install" else ""
    print(f"# memoryd service {action}{flag} --dry-run: nothing is changed", file=out)
    if avail.ok:
        print(f"# service manager: {avail.detail}", file=out)
    else:
        print(
            f"# service manager: {avail.detail}; these commands would fail here: {FOREGROUND}",
            file=out,
        )
    for note in plan.notes:
        print(f"# note: {note}", file=out)
    if plan.steps:
        print(plan.describe(), file=out)


def _after_install(plan: Plan, env: Mapping[str, str], out: TextIO) -> None:
    for note in plan.notes:
        print(f"note: {note}", file=out)
    logs = (
        "journalctl --user -u memoryd"
        if plan.manager == "systemd"
        else "~/Library/Logs/memoryd/memoryd.log"
    )
    if plan.socket_activation:
        print(
            f"memoryd is installed ({plan.manager}, socket activation: the daemon starts on "
            f"the first connection); logs: {logs}",
            file=out,
        )
    else:
        daemon = _daemon(env)
        state = (
            f"running, pid {daemon['pid']}"
            if daemon["running"]
            else f"not answering yet: {daemon['error']}"
        )
        print(f"memoryd is installed ({plan.manager}) and {state}; logs: {logs}", file=out)
    user = env.get("USER") or env.get("LOGNAME")
    if plan.manager == "systemd" and user and not Path("/var/lib/systemd/linger", user).exists():
        print(
            "to keep it running while you are logged out (and start it at boot): "
            "loginctl enable-linger $USER",
            file=out,
        )


# -- status -----------------------------------------------------------------------------


def _service_socket(env: Mapping[str, str]) -> Path:
    """Where the service's daemon listens: the default socket, whatever MEMORYD_* says."""
    return socket_path(_default_env(env))


def _daemon(env: Mapping[str, str]) -> dict[str, Any]:
    """The daemon's own view: ``hello`` over the service's socket."""
    from memoryd_client import MemoryClient
    from memoryd_client.errors import ClientError

    path = _service_socket(env)
    try:
        with MemoryClient(path, timeout=5.0, client_name="memoryd-service") as client:
            hello = client.connect()
    except ClientError as exc:
        return {"running": False, "socket": str(path), "error": str(exc)}
    return {
        "running": True,
        "socket": str(path),
        "version": hello.version,
        "pid": hello.pid,
        "protocol": hello.protocol,
    }


def _status(
    avail: Availability, env: Mapping[str, str], as_json: bool, runner: Runner, out: TextIO
) -> int:
    manager: dict[str, Any] = {"name": avail.manager, "available": avail.ok, "detail": avail.detail}
    waiting = False  # socket-activated and idle: connecting would start the daemon
    if avail.ok and avail.manager == "systemd":
        units = systemd_units(runner)
        manager["units"] = units
        sock, svc = units.get(SOCKET_UNIT, {}), units.get(SERVICE_UNIT, {})
        waiting = sock.get("ActiveState") == "active" and svc.get("ActiveState") != "active"
    elif avail.ok and avail.manager == "launchd":
        job = launchd_job(os.getuid(), runner)
        plist = launch_agents_dir(_home(env)) / PLIST
        job["plist"] = str(plist) if plist.exists() else None
        job["socket_activation"] = plist.exists() and "Sockets" in plistlib.loads(
            plist.read_bytes()
        )
        manager["job"] = job
        waiting = bool(job["loaded"] and job["socket_activation"] and job.get("state") != "running")
    if waiting:
        daemon: dict[str, Any] = {
            "running": False,
            "waiting": True,
            "socket": str(_service_socket(env)),
        }
    else:
        daemon = _daemon(env)
    healthy = daemon["running"] or waiting
    if as_json:
        print(json.dumps({"manager": manager, "daemon": daemon}, indent=2), file=out)
    else:
        for line in _status_lines(manager, daemon):
            print(line, file=out)
    return EXIT_OK if healthy else EXIT_ERROR


def _status_lines(manager: dict[str, Any], daemon: dict[str, Any]) -> list[str]:
    if not manager["available"]:
        lines = [f"service manager: none: {manager['detail']}; {FOREGROUND}"]
    else:
        lines = [f"service manager: {manager['detail']}"]
    for unit, props in manager.get("units", {}).items():
        lines.append(f"{unit}: {_unit_line(props)}")
    job = manager.get("job")
    if job is not None:
        if not job["loaded"]:
            lines.append(f"{PLIST}: not loaded" + ("" if job["plist"] else " (not installed)"))
        else:
            extra = [
                f"pid {job['pid']}" if job.get("pid") else "",
                f"last exit code {job['last_exit_code']}" if job.get("last_exit_code") else "",
                "socket activation" if job["socket_activation"] else "",
            ]
            lines.append(
                f"{PLIST}: {job.get('state', 'loaded')}" + "".join(f", {e}" for e in extra if e)
            )
    if daemon.get("waiting"):
        lines.append(f"daemon: not running; starts on the first connection to {daemon['socket']}")
    elif daemon["running"]:
        lines.append(
            f"daemon: memoryd {daemon['version']}, pid {daemon['pid']}, protocol "
            f"{daemon['protocol']}, on {daemon['socket']}"
        )
    else:
        lines.append(f"daemon: {daemon['error']}")
    return lines


def _unit_line(props: Mapping[str, str]) -> str:
    load = props.get("LoadState", "")
    if load in ("not-found", ""):
        return "not installed"
    if load == "error":
        return f"unknown ({props.get('error', '')})"
    text = f"{props.get('ActiveState', '?')} ({props.get('SubState', '?')})"
    if props.get("UnitFileState"):
        text += f", {props['UnitFileState']}"
    if props.get("MainPID", "0") not in ("0", ""):
        text += f", pid {props['MainPID']}"
    if props.get("NRestarts", "0") not in ("0", ""):
        text += f", {props['NRestarts']} restarts"
    if props.get("Result", "success") not in ("success", ""):
        text += f", last result {props['Result']}"
    if props.get("StatusText"):
        text += f": {props['StatusText']}"
    return text
