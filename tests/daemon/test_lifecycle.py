"""Where the daemon puts its socket, how it starts on a terminal and how it stops.

Real ``memoryd run`` processes with controlled environments: no ``XDG_RUNTIME_DIR``, homes
of their own, a pseudo-terminal for the start line.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import short_home, wait_for
from memoryd.exit_codes import EXIT_OK
from memoryd_client import MemoryClient
from memoryd_client.paths import LOGIN_RUNTIME_BASE, default_paths, runtime_dir

pytestmark = pytest.mark.timeout(120)

MEMORYD = str(Path(sys.executable).parent / "memoryd")


def bare_env(home: Path, **extra: str) -> dict[str, str]:
    """What a login-less shell has: PATH and HOME, no XDG or MEMORYD variables."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "MEMORYD_EMBEDDING_PROVIDER": "none",
        **extra,
    }


def socket_of(env: dict[str, str]) -> Path:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from memoryd_client.paths import socket_path; print(socket_path())",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stderr == ""  # no RuntimeDirWarning or anything else
    return Path(out.stdout.strip())


@pytest.fixture
def root() -> Iterator[Path]:
    with short_home() as h:
        yield h


# ---------------------------------------------------------------- the socket's folder


def test_without_xdg_runtime_dir_the_socket_is_private_to_the_home(root: Path) -> None:
    if (LOGIN_RUNTIME_BASE / str(os.geteuid())).is_dir():
        pytest.skip("this machine has a login runtime directory: it is used, as systemd does")
    a, b = socket_of(bare_env(root / "a")), socket_of(bare_env(root / "b"))
    assert a == root / "a" / ".local" / "state" / "memoryd" / "run" / "memoryd.sock"
    assert b.is_relative_to(root / "b")


def test_an_xdg_runtime_dir_that_is_not_private_is_not_used(root: Path) -> None:
    shared = root / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    fallback = root / "state" / "run"
    env = {"XDG_RUNTIME_DIR": str(shared)}
    assert runtime_dir(env, fallback=fallback, login_base=root / "none") == fallback
    shared.chmod(0o700)
    assert runtime_dir(env, fallback=fallback, login_base=root / "none") == shared / "memoryd"
    login = root / "login"
    (login / str(os.geteuid())).mkdir(parents=True, mode=0o700)
    assert runtime_dir({}, fallback=fallback, login_base=login) == (
        login / str(os.geteuid()) / "memoryd"
    )


def test_memoryd_home_holds_the_socket_whatever_xdg_says(root: Path) -> None:
    env = {"MEMORYD_HOME": str(root / "mh"), "XDG_RUNTIME_DIR": str(root)}
    assert default_paths(env).socket == root / "mh" / "run" / "memoryd.sock"


class Run:
    """A ``memoryd run`` with its stderr in a file (or a terminal)."""

    def __init__(self, env: dict[str, str], stderr: int | None = None) -> None:
        self.env = env
        self.log = Path(env["HOME"]) / f"stderr-{time.monotonic_ns()}.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "wb") as out:
            self.p = subprocess.Popen(
                [MEMORYD, "run"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=out if stderr is None else stderr,
            )

    def socket(self) -> Path:
        return socket_of(self.env)

    def ready(self) -> None:
        def answers() -> bool:
            assert self.p.poll() is None, self.log.read_text()
            try:
                with MemoryClient(self.socket(), timeout=5) as c:
                    c.connect()
                return True
            except Exception:
                return False

        assert wait_for(answers, 20, interval=0.05), self.log.read_text()

    def stop(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MEMORYD, "stop"], env=self.env, capture_output=True, text=True, timeout=60
        )

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(10)


def test_two_daemons_with_different_homes_run_side_by_side_without_warnings(root: Path) -> None:
    if (LOGIN_RUNTIME_BASE / str(os.geteuid())).is_dir():
        pytest.skip("this machine has a login runtime directory, shared by design")
    runs = [Run(bare_env(root / name)) for name in ("a", "b")]
    try:
        for run in runs:
            run.ready()
        pids = set()
        for run in runs:
            with MemoryClient(run.socket(), timeout=5) as c:
                pids.add(c.connect().pid)
            assert run.socket().is_relative_to(Path(run.env["HOME"]))
        assert pids == {run.p.pid for run in runs}
        for run in runs:
            assert run.stop().returncode == EXIT_OK
            assert run.p.wait(10) == EXIT_OK
            assert "Warning" not in run.log.read_text(), run.log.read_text()
    finally:
        for run in runs:
            run.kill()


# ---------------------------------------------------------------- stop


def test_memoryd_stop_waits_until_the_daemon_has_exited_then_says_not_running(root: Path) -> None:
    run = Run(bare_env(root, MEMORYD_HOME=str(root / "mh")))
    try:
        run.ready()
        stop = run.stop()
        assert stop.returncode == EXIT_OK, stop.stderr
        assert f"memoryd stopped (pid {run.p.pid}" in stop.stdout
        # Exited (reaped here, not killed) by the time stop returned: a zombie already.
        assert run.p.poll() == EXIT_OK
        assert not (root / "mh" / "run" / "memoryd.sock").exists()
        again = run.stop()
        assert again.returncode == EXIT_OK
        assert "memoryd is not running" in again.stdout
    finally:
        run.kill()


# ---------------------------------------------------------------- start line


def read_terminal(fd: int, until: str, timeout: float = 20.0) -> str:
    text = ""
    deadline = time.monotonic() + timeout
    while until not in text and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                text += os.read(fd, 4096).decode(errors="replace")
            except OSError:  # the other side closed
                break
    return text


def start_line(env: dict[str, str]) -> tuple[str, Run]:
    """The daemon's terminal output up to its start line; the daemon stopped after."""
    master, slave = pty.openpty()
    run = Run(env, stderr=slave)
    os.close(slave)
    try:
        text = read_terminal(master, "memoryd stop")
        assert run.stop().returncode == EXIT_OK
        assert run.p.wait(10) == EXIT_OK
    finally:
        os.close(master)
        run.kill()
    return text, run


def assert_next_steps_run_as_written(line: str, env: dict[str, str]) -> None:
    """The ready line's memctl and memoryd are commands this shell finds as written."""
    steps = re.search(
        r"no workspace yet: (\S+) workspace add PATH\. Stop: Ctrl-C or (\S+) stop", line
    )
    assert steps, line
    for typed, name in zip(steps.groups(), ("memctl", "memoryd"), strict=True):
        assert Path(typed).name == name
        found = shutil.which(os.path.expanduser(typed), path=env["PATH"])
        assert found and os.path.samefile(found, Path(MEMORYD).parent / name), (typed, env)


def test_the_ready_lines_next_steps_name_memctl_as_a_shell_finds_it(root: Path) -> None:
    # The README's install: a venv nobody activated (its bin/ not on PATH), then activated.
    venv_bin = str(Path(MEMORYD).parent)
    path = ":".join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(":") if p != venv_bin)
    for shell_path, bare in ((path, False), (f"{venv_bin}:{path}", True)):
        env = bare_env(root, MEMORYD_HOME=str(root / "mh"), PATH=shell_path)
        text, _ = start_line(env)
        assert_next_steps_run_as_written(text, env)
        assert ("; no workspace yet: memctl workspace add" in text) is bare, text


def test_on_a_terminal_one_line_says_ready_where_and_what_next(root: Path) -> None:
    env = bare_env(root, MEMORYD_HOME=str(root / "mh"))
    sock = root / "mh" / "run" / "memoryd.sock"
    text, run = start_line(env)
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text  # warnings and worse only: nothing else on a quiet start
    assert f"ready on {sock} (pid {run.p.pid})" in lines[0]
    assert_next_steps_run_as_written(lines[0], env)

    ws = root / "notes"
    (ws / "memory").mkdir(parents=True)
    (root / "mh" / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\n')
    text, _ = start_line(env)
    assert "workspaces: notes (~/notes)" in text and "memctl workspace add" not in text


def test_off_a_terminal_there_is_no_start_line_only_json_logs(root: Path) -> None:
    run = Run(bare_env(root, MEMORYD_HOME=str(root / "mh")))
    try:
        run.ready()
        assert run.stop().returncode == EXIT_OK
        run.p.wait(10)
    finally:
        run.kill()
    lines = run.log.read_text().splitlines()
    assert lines and all(line.startswith("{") for line in lines), lines


# ---------------------------------------------------------------- nothing outside MEMORYD_HOME


@pytest.mark.model
def test_with_the_local_model_nothing_is_written_outside_memoryd_home(root: Path) -> None:
    # onnxruntime's telemetry wrote ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ when the
    # model loaded (a device id and an upload cache).
    home = root / "home"
    home.mkdir()
    ws = root / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2025-01-02.md").write_text("- decided to keep SQLite for the schema\n")
    env = bare_env(home, MEMORYD_HOME=str(root / "mh"), MEMORYD_EMBEDDING_PROVIDER="local")
    run = Run(env)
    run.log = root / "daemon.log"  # not in the home under test
    try:
        run.ready()
        with MemoryClient(root / "mh" / "run" / "memoryd.sock", timeout=120) as c:
            c.workspace_add(str(ws))
            c.reindex(workspace="ws", wait=True)
            assert c.search("schema", workspace="ws", mode="vector").results
        assert run.stop().returncode == EXIT_OK
    finally:
        run.kill()
    leftovers = [str(p.relative_to(home)) for p in home.rglob("*")]
    assert [p for p in leftovers if not p.startswith("stderr-")] == []
