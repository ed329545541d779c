"""``memoryd service install | uninstall | status``: the dry run, the plans, what is run and
written, exit codes, and no service manager. systemctl and launchctl are the boundary: a
recording runner stands in for them, except in the opt-in real install at the end."""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from daemon_util import accepts, short_home, wait_for
from memoryd.exit_codes import (
    EXIT_ERROR,
    EXIT_NO_SERVICE_MANAGER,
    EXIT_OK,
    EXIT_SERVICE_FAILED,
    EXIT_USAGE,
)
from memoryd.service import command
from memoryd.service.manager import (
    Availability,
    CommandFailed,
    MakeDir,
    Plan,
    RemoveFile,
    Run,
    WriteFile,
    availability,
    execute,
    launchd_install,
    launchd_uninstall,
    private_tmp_notes,
    systemd_install,
    systemd_uninstall,
)
from memoryd.service.render import find_memoryd

pytestmark = pytest.mark.timeout(60)
README = Path(__file__).resolve().parents[2] / "README.md"
SYSTEMD = Availability("systemd", True, "systemd user instance (running)")


class Recorder:
    """Stands in for systemctl/launchctl: records argv, answers from a script."""

    def __init__(self, answers: dict[str, tuple[int, str, str]] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.answers = answers or {}

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        joined = " ".join(argv)
        for pattern, (code, out, err) in self.answers.items():
            if pattern in joined:
                return subprocess.CompletedProcess(list(argv), code, out, err)
        return subprocess.CompletedProcess(list(argv), 0, "", "")

    def commands(self) -> list[str]:
        return [" ".join(c) for c in self.calls]


def run_cli(
    *args: str, home: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    full.update(HOME=str(home), XDG_RUNTIME_DIR=str(home / "xdg"), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "memoryd.cli", "service", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )


def commands_of(output: str) -> list[str]:
    return [line[2:].split("    #")[0] for line in output.splitlines() if line.startswith("$ ")]


def test_install_dry_run_prints_the_unit_and_the_commands_and_changes_nothing(
    tmp_path: Path,
) -> None:
    done = run_cli("install", "--dry-run", home=tmp_path)
    assert done.returncode == EXIT_OK, done.stderr
    out = done.stdout
    assert out.startswith("# memoryd service install --dry-run: nothing is changed\n")
    assert re.search(r"^# service manager: .+", out, re.M)
    unit = tmp_path / ".config" / "systemd" / "user" / "memoryd.service"
    assert f"\n# write {unit}\n" in out
    assert f"\nExecStart={find_memoryd()} run --socket %t/memoryd/memoryd.sock\n" in out
    assert "\nType=notify\n" in out and "\nMemoryDenyWriteExecute=yes\n" in out
    assert commands_of(out) == [
        "systemctl --user daemon-reload",
        "systemctl --user enable memoryd.service",
        "systemctl --user restart memoryd.service",
    ]
    assert not (tmp_path / ".config").exists()


def test_install_dry_run_with_socket_activation_enables_the_socket_unit(tmp_path: Path) -> None:
    done = run_cli(
        "install",
        "--socket-activation",
        "--dry-run",
        home=tmp_path,
        env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")},
    )
    assert done.returncode == EXIT_OK, done.stderr
    out = done.stdout
    units = tmp_path / "cfg" / "systemd" / "user"
    assert f"# write {units / 'memoryd.service'}\n" in out
    assert f"# write {units / 'memoryd.socket'}\n" in out
    assert "\nListenStream=%t/memoryd/memoryd.sock\n" in out
    assert commands_of(out) == [
        "systemctl --user daemon-reload",
        "systemctl --user disable memoryd.service",
        "systemctl --user stop memoryd.service",
        "systemctl --user enable --now memoryd.socket",
    ]
    assert not units.exists()


def test_dry_run_notes_what_the_service_will_not_see(tmp_path: Path) -> None:
    done = run_cli(
        "install", "--dry-run", home=tmp_path, env={"MEMORYD_HOME": str(tmp_path / "portable")}
    )
    assert (
        "# note: MEMORYD_HOME is set in this shell, but the service does not see it" in done.stdout
    )


def test_dry_run_warns_that_private_tmp_hides_workspaces_under_tmp(tmp_path: Path) -> None:
    # Registered (the registry's plain copy) and configured ones; the paths need not exist.
    state = tmp_path / ".local" / "state" / "memoryd"
    state.mkdir(parents=True)
    (state / "workspaces.json").write_text(
        '{"workspaces": [{"name": "a", "path": "/tmp/memoryd-h37/alice"},'
        ' {"name": "c", "path": "/srv/memoryd-h37/carol"}]}'
    )
    config = tmp_path / ".config" / "memoryd"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[[workspaces]]\npath = "/var/tmp/memoryd-h37/bob"\n')
    done = run_cli("install", "--dry-run", home=tmp_path)
    assert done.returncode == EXIT_OK, done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("# note: the workspace")]
    assert [n.split()[4] for n in notes] == ["/var/tmp/memoryd-h37/bob", "/tmp/memoryd-h37/alice"]
    assert all("PrivateTmp=no" in n and "memctl workspace add" in n for n in notes)


def test_a_memoryd_under_tmp_is_told_it_would_not_start_as_a_service() -> None:
    (note,) = private_tmp_notes(Path("/tmp/try/.venv/bin/memoryd"), [Path("/home/me/alice")])
    assert "would not start" in note and "Install memoryd outside /tmp" in note
    assert private_tmp_notes(Path("/home/me/.venv/bin/memoryd"), [Path("/home/me/a")]) == []


def test_uninstall_dry_run_with_nothing_installed_says_so(tmp_path: Path) -> None:
    done = run_cli("uninstall", "--dry-run", home=tmp_path)
    assert done.returncode == EXIT_OK
    assert "# note: memoryd is not installed as a systemd user service" in done.stdout
    assert commands_of(done.stdout) == []


def test_service_needs_an_action() -> None:
    for args in ([], ["restart"]):
        done = subprocess.run(
            [sys.executable, "-m", "memoryd.cli", "service", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == EXIT_USAGE


# -- plans ------------------------------------------------------------------------------


def test_reinstalling_without_socket_activation_retires_the_socket_unit_first(
    tmp_path: Path,
) -> None:
    (tmp_path / "memoryd.socket").write_text("[Socket]\n")
    plan = systemd_install(find_memoryd(), tmp_path, socket_activation=False)
    kinds = [(type(s).__name__, str(s) if isinstance(s, Run) else "") for s in plan.steps]
    assert kinds == [
        ("WriteFile", ""),
        ("Run", "systemctl --user disable --now memoryd.socket"),
        ("RemoveFile", ""),
        ("Run", "systemctl --user daemon-reload"),
        ("Run", "systemctl --user enable memoryd.service"),
        ("Run", "systemctl --user restart memoryd.service"),
    ]


def test_uninstall_disables_then_removes_both_units(tmp_path: Path) -> None:
    for name in ("memoryd.service", "memoryd.socket"):
        (tmp_path / name).write_text("")
    plan = systemd_uninstall(tmp_path)
    assert [str(s) for s in plan.steps if isinstance(s, Run)] == [
        "systemctl --user disable --now memoryd.socket",
        "systemctl --user disable --now memoryd.service",
        "systemctl --user daemon-reload",
    ]
    assert {s.path.name for s in plan.steps if isinstance(s, RemoveFile)} == {
        "memoryd.service",
        "memoryd.socket",
    }


def test_launchd_plans_bootstrap_and_bootout_in_the_gui_domain(tmp_path: Path) -> None:
    sock = tmp_path / "rt" / "memoryd.sock"
    plan = launchd_install(find_memoryd(), tmp_path, 501, sock, tmp_path / "logs", True)
    plist = tmp_path / "Library" / "LaunchAgents" / "dev.memoryd.memoryd.plist"
    runs = [s for s in plan.steps if isinstance(s, Run)]
    assert [str(r) for r in runs] == [
        "launchctl bootout gui/501/dev.memoryd.memoryd",
        "launchctl enable gui/501/dev.memoryd.memoryd",
        f"launchctl bootstrap gui/501 {plist}",
    ]
    assert not runs[0].check and runs[2].attempts > 1
    made = [s.path for s in plan.steps if isinstance(s, MakeDir)]
    assert made[:2] == [tmp_path / "logs", sock.parent]  # launchd creates neither
    assert launchd_uninstall(tmp_path, 501).steps == []
    execute(Plan("launchd", "install", [s for s in plan.steps if not isinstance(s, Run)]))
    bootout, remove = launchd_uninstall(tmp_path, 501).steps
    assert str(bootout) == "launchctl bootout gui/501/dev.memoryd.memoryd"
    assert remove == RemoveFile(plist)


def test_execute_writes_runs_in_order_and_stops_at_the_first_failure(tmp_path: Path) -> None:
    runner = Recorder({"enable": (1, "", "Failed to enable unit: Access denied\n")})
    plan = Plan(
        "systemd",
        "install",
        [
            WriteFile(tmp_path / "a" / "memoryd.service", "[Unit]\n"),
            Run(("systemctl", "--user", "daemon-reload")),
            Run(("systemctl", "--user", "enable", "memoryd.service")),
            Run(("systemctl", "--user", "restart", "memoryd.service")),
        ],
    )
    with pytest.raises(CommandFailed) as info:
        execute(plan, runner)
    assert str(info.value) == (
        "`systemctl --user enable memoryd.service` failed (exit 1): "
        "Failed to enable unit: Access denied"
    )
    assert runner.commands() == [
        "systemctl --user daemon-reload",
        "systemctl --user enable memoryd.service",
    ]
    written = tmp_path / "a" / "memoryd.service"
    assert written.read_text() == "[Unit]\n" and written.stat().st_mode & 0o777 == 0o644


def test_execute_ignores_expected_failures_and_retries_when_asked() -> None:
    runner = Recorder(
        {
            "bootout": (3, "", "Boot-out failed: 3: No such process"),
            "bootstrap": (5, "", "Bootstrap failed: 5: Input/output error"),
        }
    )
    execute(Plan("launchd", "x", [Run(("launchctl", "bootout", "gui/1/x"), check=False)]), runner)
    with pytest.raises(CommandFailed, match="Input/output error"):
        execute(
            Plan("launchd", "x", [Run(("launchctl", "bootstrap", "gui/1", "p"), attempts=2)]),
            runner,
        )
    assert runner.commands().count("launchctl bootstrap gui/1 p") == 2


# -- detecting the service manager --------------------------------------------------------


@pytest.mark.skipif(
    not Path("/usr/bin/systemctl").exists() and not Path("/bin/systemctl").exists(),
    reason="systemctl is not installed",
)
def test_a_usable_systemd_user_instance_is_told_from_an_absent_one(tmp_path: Path) -> None:
    booted = tmp_path / "run-systemd-system"
    assert (
        "systemd is not running here"
        in availability(Recorder(), "linux", systemd_booted=booted).detail
    )
    booted.mkdir()
    for state, ok in [("running", True), ("degraded", True), ("offline", False)]:
        got = availability(
            Recorder({"is-system-running": (0 if ok else 1, state + "\n", "")}),
            "linux",
            systemd_booted=booted,
        )
        assert got.ok is ok and state in got.detail
    down = availability(
        Recorder({"is-system-running": (1, "", "Failed to connect to bus: No medium found\n")}),
        "linux",
        systemd_booted=booted,
    )
    assert not down.ok and "Failed to connect to bus" in down.detail


def test_other_platforms_have_no_service_manager() -> None:
    got = availability(Recorder(), "freebsd14")
    assert got.manager is None and not got.ok and "systemd on Linux" in got.detail


# -- the command as the user sees it -----------------------------------------------------


def main(*args: str, **kwargs: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = command.main(*args, out=out, err=err, **kwargs)  # type: ignore[arg-type]
    return code, out.getvalue(), err.getvalue()


def test_without_a_service_manager_install_points_to_memoryd_run(tmp_path: Path) -> None:
    for action in ("install", "uninstall"):
        code, out, err = main(action, env={"HOME": str(tmp_path)}, platform="freebsd14")
        assert code == EXIT_NO_SERVICE_MANAGER and out == ""
        assert err.count("\n") == 1 and err.startswith("memoryd: no supported service manager")
        assert "`memoryd run`" in err


def test_install_and_uninstall_through_systemctl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # where the client looks
    runner = Recorder()
    env = {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path), "USER": "nobody-here"}
    code, out, err = main("install", env=env, runner=runner, avail=SYSTEMD)
    assert (code, err) == (EXIT_OK, "")
    unit = tmp_path / ".config" / "systemd" / "user" / "memoryd.service"
    assert unit.read_text().count(f"ExecStart={find_memoryd()} run") == 1
    assert runner.commands() == [
        "systemctl --user daemon-reload",
        "systemctl --user enable memoryd.service",
        "systemctl --user restart memoryd.service",
    ]
    assert f"wrote {unit}\n" in out and "$ systemctl --user restart memoryd.service\n" in out
    assert "memoryd is installed (systemd) and not answering yet" in out
    assert "loginctl enable-linger $USER" in out
    runner.calls.clear()
    code, out, _ = main("uninstall", env=env, runner=runner, avail=SYSTEMD)
    assert code == EXIT_OK and not unit.exists()
    assert runner.commands() == [
        "systemctl --user disable --now memoryd.service",
        "systemctl --user daemon-reload",
    ]
    assert "memoryd is uninstalled (systemd)" in out


def test_a_refused_command_is_one_line_and_its_own_exit_code(tmp_path: Path) -> None:
    runner = Recorder({"enable": (1, "", "Failed to enable unit: Unit file is masked.\n")})
    code, _, err = main("install", env={"HOME": str(tmp_path)}, runner=runner, avail=SYSTEMD)
    assert code == EXIT_SERVICE_FAILED
    assert err == (
        "memoryd: `systemctl --user enable memoryd.service` failed (exit 1): "
        "Failed to enable unit: Unit file is masked.\n"
    )


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short XDG_RUNTIME_DIR: where the service's socket is, for `status`."""
    with short_home() as h:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(h))
        (h / "memoryd").mkdir(mode=0o700)
        yield h


def test_status_without_a_manager_still_asks_the_daemon(runtime: Path) -> None:
    sock = runtime / "memoryd" / "memoryd.sock"
    env = {**os.environ, "MEMORYD_HOME": str(runtime), "MEMORYD_EMBEDDING_PROVIDER": "none"}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memoryd.cli", "run", "--socket", str(sock)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: accepts(sock), 15)
        # MEMORYD_HOME points elsewhere: status asks the service's socket all the same.
        code, out, _ = main(
            "status",
            env={"MEMORYD_HOME": "/nonexistent", "XDG_RUNTIME_DIR": str(runtime)},
            platform="freebsd14",
        )
    finally:
        daemon.terminate()
        daemon.wait(20)
    lines = out.splitlines()
    assert code == EXIT_OK
    assert lines[0].startswith("service manager: none: no supported service manager")
    assert "`memoryd run`" in lines[0]
    assert re.fullmatch(
        rf"daemon: memoryd \S+, pid {daemon.pid}, protocol 1, on "
        rf"{re.escape(str(sock))}",
        lines[1],
    ), lines


def test_status_says_not_running_and_exits_1_when_nobody_answers(runtime: Path) -> None:
    # The socket is looked for in the test's own runtime folder: with an empty env, a
    # daemon of the person running the tests (the default socket) would answer.
    env = {"XDG_RUNTIME_DIR": str(runtime), "HOME": str(runtime)}
    code, out, _ = main("status", env=env, platform="freebsd14", as_json=True)
    assert code == EXIT_ERROR
    assert '"running": false' in out and "memoryd is not running" in out


def test_status_of_an_idle_socket_unit_does_not_start_the_daemon(runtime: Path) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(runtime / "memoryd" / "memoryd.sock"))
    listener.listen()
    listener.settimeout(0.5)
    accepted: list[object] = []
    t = threading.Thread(target=lambda: accepted.append(_accept(listener)))
    t.start()
    shows = {
        "show memoryd.service": (
            0,
            "LoadState=loaded\nActiveState=inactive\nSubState=dead"
            "\nUnitFileState=disabled\nMainPID=0\n",
            "",
        ),
        "show memoryd.socket": (
            0,
            "LoadState=loaded\nActiveState=active\nSubState=listening\nUnitFileState=enabled\n",
            "",
        ),
    }
    code, out, _ = main(
        "status", env={"XDG_RUNTIME_DIR": str(runtime)}, runner=Recorder(shows), avail=SYSTEMD
    )
    t.join()
    listener.close()
    assert code == EXIT_OK and accepted == [None]
    assert out.splitlines() == [
        "service manager: systemd user instance (running)",
        "memoryd.service: inactive (dead), disabled",
        "memoryd.socket: active (listening), enabled",
        f"daemon: not running; starts on the first connection to {runtime}/memoryd/memoryd.sock",
    ]


def _accept(listener: socket.socket) -> object:
    try:
        conn, _ = listener.accept()
    except TimeoutError:
        return None
    conn.close()
    return "connected"


def test_readme_documents_running_as_a_service() -> None:
    text = README.read_text()
    start = text.index("## Running as a service")
    section = text[start : text.index("\n## ", start)]
    for needle in (
        "memoryd service install",
        "--socket-activation",
        "memoryd service status",
        "memoryd service uninstall",
        "loginctl enable-linger",
        "journalctl --user -u memoryd",
        "~/Library/Logs/memoryd/",
        "launchd",
        "systemd",
    ):
        assert needle in section, needle


# -- the real thing, where a user systemd runs and you asked for it ------------------------


HERE = availability()


@pytest.mark.skipif(
    os.environ.get("MEMORYD_TEST_SERVICE_INSTALL") != "1",
    reason="installs into your real user service manager; set "
    "MEMORYD_TEST_SERVICE_INSTALL=1 to allow it",
)
@pytest.mark.skipif(not HERE.ok, reason=f"no service manager here: {HERE.detail}")
def test_real_install_runs_the_daemon_and_uninstall_removes_it() -> None:
    code, out, err = main("install")
    try:
        assert code == EXIT_OK, err
        assert "and running, pid" in out
        code, out, _ = main("status")
        assert code == EXIT_OK and "daemon: memoryd" in out
    finally:
        code, _, err = main("uninstall")
        assert code == EXIT_OK, err
