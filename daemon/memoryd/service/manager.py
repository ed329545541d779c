"""``memoryd service``: plans for install/uninstall, the service manager's view, the runner.

A plan is a list of steps (make a folder, write a file, remove a file, run a command) built
from the current state without changing anything; ``--dry-run`` prints it, otherwise
``execute`` runs it in order and stops at the first failure. Commands run through a
``Runner`` (``subprocess.run`` by default) so the service manager is the only boundary.

systemd: user units in ``$XDG_CONFIG_HOME/systemd/user`` (``~/.config/systemd/user``), driven
with ``systemctl --user``. Without socket activation memoryd.service is enabled (started at
login, restarted after a crash); with it, memoryd.socket is enabled and the service starts
on the first connection. launchd: a LaunchAgent in ``~/Library/LaunchAgents``, loaded with
``launchctl bootstrap gui/<uid>``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memoryd.service.render import (
    LAUNCHD_LABEL,
    PLIST,
    SERVICE_UNIT,
    SOCKET_UNIT,
    render_launchd_plist,
    render_systemd_service,
    render_systemd_socket,
)

Manager = Literal["systemd", "launchd"]
Runner = Callable[[Sequence[str]], subprocess.CompletedProcess[str]]
#: `systemctl --user is-system-running` states in which the user manager takes orders.
USABLE_STATES = frozenset({"initializing", "starting", "running", "degraded", "maintenance"})
IGNORED_ENV = ("MEMORYD_HOME", "MEMORYD_SOCKET", "MEMORYD_CONFIG")
#: What the unit's PrivateTmp=yes replaces with empty folders of the service's own.
PRIVATE_TMP = (Path("/tmp"), Path("/var/tmp"))


class ServiceError(Exception):
    """``memoryd service`` cannot do what was asked; the message says why and what to do."""


class NoServiceManager(ServiceError):
    pass


class CommandFailed(ServiceError):
    pass


# -- steps and plans --------------------------------------------------------------------


@dataclass(frozen=True)
class MakeDir:
    path: Path
    mode: int = 0o700


@dataclass(frozen=True)
class WriteFile:
    path: Path
    text: str


@dataclass(frozen=True)
class RemoveFile:
    path: Path


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    check: bool = True  # False: a failure is expected at times (bootout of a job not loaded)
    attempts: int = 1  # launchctl bootstrap right after bootout can fail while it settles

    def __str__(self) -> str:
        return shlex.join(self.argv)


Step = MakeDir | WriteFile | RemoveFile | Run


@dataclass
class Plan:
    manager: Manager
    action: str
    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    socket_activation: bool = False  # install: the daemon starts on the first connection

    def describe(self) -> str:
        """The plan as a reader (and a test) sees it: files in full, commands after ``$``."""
        out: list[str] = []
        for step in self.steps:
            if isinstance(step, MakeDir):
                out.append(f"$ mkdir -p -m {step.mode:o} {shlex.quote(str(step.path))}")
            elif isinstance(step, WriteFile):
                out += ["", f"# write {step.path}", step.text.rstrip("\n"), ""]
            elif isinstance(step, RemoveFile):
                out.append(f"$ rm {shlex.quote(str(step.path))}")
            else:
                out.append(f"$ {step}" + ("" if step.check else "    # may fail: ignored"))
        return "\n".join(out)


def systemctl(*args: str) -> Run:
    return Run(("systemctl", "--user", *args))


def user_unit_dir(env: Mapping[str, str], home: Path) -> Path:
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "systemd" / "user"


def systemd_install(exe: Path, unit_dir: Path, socket_activation: bool) -> Plan:
    plan = Plan("systemd", "install", socket_activation=socket_activation)
    service, sock = unit_dir / SERVICE_UNIT, unit_dir / SOCKET_UNIT
    plan.steps.append(WriteFile(service, render_systemd_service(exe)))
    if socket_activation:
        plan.steps += [
            WriteFile(sock, render_systemd_socket()),
            systemctl("daemon-reload"),
            # The socket unit must own the path: no daemon bound to it, none started at login.
            systemctl("disable", SERVICE_UNIT),
            systemctl("stop", SERVICE_UNIT),
            systemctl("enable", "--now", SOCKET_UNIT),
        ]
    else:
        if sock.exists():  # switching back from socket activation
            plan.steps += [systemctl("disable", "--now", SOCKET_UNIT), RemoveFile(sock)]
        plan.steps += [
            systemctl("daemon-reload"),
            systemctl("enable", SERVICE_UNIT),
            systemctl("restart", SERVICE_UNIT),  # picks up a new ExecStart after an upgrade
        ]
    return plan


def systemd_uninstall(unit_dir: Path) -> Plan:
    plan = Plan("systemd", "uninstall")
    present = [
        unit_dir / name for name in (SOCKET_UNIT, SERVICE_UNIT) if (unit_dir / name).exists()
    ]
    if not present:
        plan.notes.append(
            f"memoryd is not installed as a systemd user service (no {SERVICE_UNIT} in {unit_dir})"
        )
        return plan
    plan.steps += [systemctl("disable", "--now", p.name) for p in present]
    plan.steps += [RemoveFile(p) for p in present]
    plan.steps.append(systemctl("daemon-reload"))
    return plan


def launch_agents_dir(home: Path) -> Path:
    return home / "Library" / "LaunchAgents"


def launchd_install(
    exe: Path, home: Path, uid: int, socket: Path, log_dir: Path, socket_activation: bool
) -> Plan:
    plan = Plan("launchd", "install", socket_activation=socket_activation)
    plist = launch_agents_dir(home) / PLIST
    target = f"gui/{uid}/{LAUNCHD_LABEL}"
    plan.steps.append(MakeDir(log_dir))
    if socket_activation:  # launchd binds the socket but does not create its folder
        plan.steps.append(MakeDir(socket.parent))
    plan.steps += [
        MakeDir(plist.parent, 0o755),
        WriteFile(
            plist, render_launchd_plist(exe, socket, log_dir / "memoryd.log", socket_activation)
        ),
        Run(("launchctl", "bootout", target), check=False),  # an older version, if loaded
        Run(("launchctl", "enable", target)),  # undo an earlier `launchctl disable`
        Run(("launchctl", "bootstrap", f"gui/{uid}", str(plist)), attempts=3),
    ]
    return plan


def launchd_uninstall(home: Path, uid: int) -> Plan:
    plan = Plan("launchd", "uninstall")
    plist = launch_agents_dir(home) / PLIST
    if not plist.exists():
        plan.notes.append(f"memoryd is not installed as a LaunchAgent (no {plist})")
        return plan
    plan.steps += [
        Run(("launchctl", "bootout", f"gui/{uid}/{LAUNCHD_LABEL}"), check=False),
        RemoveFile(plist),
    ]
    return plan


def private_tmp_notes(exe: Path, workspaces: Sequence[Path]) -> list[str]:
    """The unit's PrivateTmp=yes gives the service an empty /tmp and /var/tmp of its own: a
    ``memoryd`` (its venv) there cannot start, a workspace there is an empty folder."""
    notes: list[str] = []
    if _in_tmp(exe):
        notes.append(
            f"this memoryd is under a temporary folder ({exe}), which the unit's PrivateTmp=yes "
            "hides from the service: it would not start. Install memoryd outside /tmp (e.g. "
            "python3 -m venv ~/.venvs/memoryd && ~/.venvs/memoryd/bin/pip install ./client .) "
            "and run `service install` with that memoryd, or keep running `memoryd run` yourself"
        )
    notes += [
        f"the workspace {ws} is under a temporary folder, which the unit's PrivateTmp=yes hides "
        "from the service (it would find it empty): move it under your home folder and add it "
        "there (memctl workspace remove, then memctl workspace add), or lift the sandbox's "
        "/tmp with `systemctl --user edit memoryd`: [Service] PrivateTmp=no"
        for ws in workspaces
        if _in_tmp(ws)
    ]
    return notes


def _in_tmp(path: Path) -> bool:
    seen = {Path(os.path.abspath(path)), Path(os.path.realpath(path))}
    return any(p.is_relative_to(tmp) for p in seen for tmp in PRIVATE_TMP)


def ignored_env_notes(env: Mapping[str, str]) -> list[str]:
    return [
        f"{name} is set in this shell, but the service does not see it: it uses the "
        "default locations (memctl in this shell will look elsewhere)"
        for name in IGNORED_ENV
        if env.get(name)
    ]


# -- running ----------------------------------------------------------------------------


def run_command(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, check=False)
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]}: not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", "timed out after 120 s")


def execute(
    plan: Plan, runner: Runner = run_command, echo: Callable[[str], None] = lambda line: None
) -> None:
    """Run the steps in order; CommandFailed at the first command that fails."""
    for step in plan.steps:
        if isinstance(step, MakeDir):
            step.path.mkdir(mode=step.mode, parents=True, exist_ok=True)
        elif isinstance(step, WriteFile):
            step.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = step.path.with_name(f".{step.path.name}.tmp")
            tmp.write_text(step.text, encoding="utf-8")
            os.chmod(tmp, 0o644)
            os.replace(tmp, step.path)
            echo(f"wrote {step.path}")
        elif isinstance(step, RemoveFile):
            step.path.unlink(missing_ok=True)
            echo(f"removed {step.path}")
        else:
            _run_step(step, runner, echo)


def _run_step(step: Run, runner: Runner, echo: Callable[[str], None]) -> None:
    echo(f"$ {step}")
    for attempt in range(1, step.attempts + 1):
        done = runner(step.argv)
        if done.returncode == 0 or not step.check:
            return
        if attempt < step.attempts:
            time.sleep(0.5 * attempt)
    why = (done.stderr or done.stdout).strip().splitlines()
    raise CommandFailed(
        f"`{step}` failed (exit {done.returncode})" + (f": {why[-1]}" if why else "")
    )


# -- the service manager ----------------------------------------------------------------


@dataclass(frozen=True)
class Availability:
    manager: Manager | None
    ok: bool
    detail: str


def platform_manager(platform: str = sys.platform) -> Manager | None:
    if platform.startswith("linux"):
        return "systemd"
    if platform == "darwin":
        return "launchd"
    return None


def availability(
    runner: Runner = run_command,
    platform: str = sys.platform,
    uid: int | None = None,
    systemd_booted: Path = Path("/run/systemd/system"),
) -> Availability:
    manager = platform_manager(platform)
    if manager is None:
        return Availability(
            None,
            False,
            f"no supported service manager on {platform} (systemd on Linux, launchd on macOS)",
        )
    if manager == "launchd":
        if shutil.which("launchctl") is None:
            return Availability(manager, False, "launchctl is not installed")
        uid = os.getuid() if uid is None else uid
        done = runner(("launchctl", "print", f"gui/{uid}"))
        if done.returncode != 0:
            return Availability(
                manager, False, f"no launchd GUI session for uid {uid} (logged in over ssh only?)"
            )
        return Availability(manager, True, f"launchd, domain gui/{uid}")
    if shutil.which("systemctl") is None:
        return Availability(manager, False, "systemctl is not installed")
    if not systemd_booted.is_dir():  # sd_booted(3)
        return Availability(
            manager, False, "systemd is not running here (a container, or WSL without systemd)"
        )
    done = runner(("systemctl", "--user", "is-system-running"))
    state = done.stdout.strip()
    if state in USABLE_STATES:
        return Availability(manager, True, f"systemd user instance ({state})")
    why = state or (done.stderr.strip().splitlines() or ["no answer"])[-1]
    return Availability(
        manager, False, f"no systemd user instance (systemctl --user is-system-running: {why})"
    )


def systemd_units(runner: Runner = run_command) -> dict[str, dict[str, str]]:
    """``systemctl --user show`` for both units: LoadState, ActiveState, SubState, ..."""
    props = (
        "LoadState,ActiveState,SubState,UnitFileState,MainPID,NRestarts,Result,"
        "StatusText,FragmentPath"
    )
    units: dict[str, dict[str, str]] = {}
    for unit in (SERVICE_UNIT, SOCKET_UNIT):
        done = runner(("systemctl", "--user", "show", unit, f"--property={props}"))
        if done.returncode != 0:
            units[unit] = {"LoadState": "error", "error": done.stderr.strip()}
            continue
        units[unit] = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return units


def launchd_job(uid: int, runner: Runner = run_command) -> dict[str, Any]:
    """What ``launchctl print gui/<uid>/<label>`` says: loaded, state, pid, last exit code."""
    done = runner(("launchctl", "print", f"gui/{uid}/{LAUNCHD_LABEL}"))
    if done.returncode != 0:
        return {"loaded": False}
    info: dict[str, Any] = {"loaded": True}
    for line in done.stdout.splitlines():
        if not line.startswith("\t") or line.startswith("\t\t") or " = " not in line:
            continue  # only the job's own top-level keys
        key, value = (part.strip() for part in line.split(" = ", 1))
        if key in ("state", "pid", "last exit code", "runs", "path"):
            info[key.replace(" ", "_")] = value
    return info
