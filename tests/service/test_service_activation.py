"""Socket activation: a listening socket handed over as systemd does (LISTEN_PID/LISTEN_FDS,
fd 3), served by a real ``memoryd run``, left in place on exit; bad hand-overs refused."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from daemon_util import accepts, short_home, wait_for
from memoryd.exit_codes import EXIT_ALREADY_RUNNING, EXIT_OK, EXIT_SOCKET
from memoryd.rpc.instance import AlreadyRunning, Instance
from memoryd.service.activation import (
    ActivationError,
    bound_path,
    inherited_socket,
    listening_unix_socket,
    systemd_socket,
)
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(60)

# What systemd does between fork and exec: the socket at fd 3, LISTEN_PID = the pid that
# execs memoryd (known only after the fork, hence this wrapper), LISTEN_FDS = 1.
ACTIVATE = """\
import os, sys
fd = int(sys.argv[1])
if fd != 3:
    os.dup2(fd, 3)
    os.close(fd)
os.set_inheritable(3, True)
os.environ["LISTEN_PID"] = os.environ.get("TEST_LISTEN_PID") or str(os.getpid())
os.environ["LISTEN_FDS"] = os.environ.get("TEST_LISTEN_FDS", "1")
os.execv(sys.executable, [sys.executable, "-m", "memoryd.cli", *sys.argv[2:]])
"""


class Activated:
    """``memoryd run`` started the way systemd starts it for memoryd.socket."""

    def __init__(
        self, home: Path, listener: socket.socket, *args: str, env: dict[str, str] | None = None
    ) -> None:
        self.log_path = home / f"daemon-{os.getpid()}-{id(self)}.log"
        full_env = {
            **os.environ,
            "MEMORYD_HOME": str(home),
            "MEMORYD_EMBEDDING_PROVIDER": "none",
            **(env or {}),
        }
        for key in (
            "MEMORYD_SOCKET",
            "MEMORYD_CONFIG",
            "NOTIFY_SOCKET",
            "LISTEN_PID",
            "LISTEN_FDS",
        ):
            full_env.pop(key, None)
        with open(self.log_path, "wb") as log:
            self.p = subprocess.Popen(
                [sys.executable, "-c", ACTIVATE, str(listener.fileno()), "run", *args],
                pass_fds=[listener.fileno()],
                env=full_env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )

    def logs(self) -> list[dict[str, Any]]:
        return [
            json.loads(line)
            for line in self.log_path.read_text().splitlines()
            if line.startswith("{")
        ]

    def events(self) -> list[str]:
        return [e["event"] for e in self.logs()]

    def wait(self, timeout: float = 20) -> int:
        return self.p.wait(timeout)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)
            print(self.log_path.read_text())  # shown by pytest when the test failed


@pytest.fixture
def home() -> Iterator[Path]:
    with short_home() as h:
        (h / "run").mkdir(mode=0o700)
        yield h


def listen(path: Path) -> socket.socket:
    """What memoryd.socket makes: a listening Unix stream socket, mode 0600."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(16)
    return sock


def test_daemon_serves_on_the_passed_socket_and_leaves_it_in_place_on_sigterm(home: Path) -> None:
    path = home / "run" / "memoryd.sock"
    with listen(path) as listener:
        inode = path.stat().st_ino
        daemon = Activated(home, listener, "--socket", str(path))
        try:
            # No waiting for the daemon: the manager's socket queues the connection.
            with MemoryClient(path, timeout=20) as client:
                assert client.connect().pid == daemon.p.pid
                ws = home / "ws"
                (ws / "memory").mkdir(parents=True)
                (ws / "MEMORY.md").write_text("# Memory\n\nthe cat is called Pixel\n")
                client.workspace_add(str(ws))
                assert client.reindex().files_scanned == 1
                assert client.search("Pixel").results
            daemon.p.send_signal(signal.SIGTERM)
            assert daemon.wait() == EXIT_OK
        finally:
            daemon.stop()
        assert path.stat().st_ino == inode  # neither unlinked nor bound again
        [inherited] = [e for e in daemon.logs() if e["event"] == "socket_inherited"]
        assert inherited["manager"] == "systemd" and inherited["socket"] == str(path)
        assert "stale_socket_removed" not in daemon.events()
        assert daemon.events()[-1] == "shutdown"
        # The manager still listens: the next client queues, and the next daemon serves it.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as early:
            early.connect(str(path))
        again = Activated(home, listener, "--socket", str(path))
        try:
            with MemoryClient(path, timeout=20) as client:
                assert client.connect().pid == again.p.pid
                assert [w.name for w in client.workspace_list()] == ["ws"]
            again.p.send_signal(signal.SIGTERM)
            assert again.wait() == EXIT_OK
        finally:
            again.stop()
        assert path.stat().st_ino == inode


def test_the_lock_still_keeps_a_second_daemon_out(home: Path) -> None:
    path = home / "run" / "memoryd.sock"
    with listen(path) as listener:
        first = Activated(home, listener, "--socket", str(path))
        try:
            with MemoryClient(path, timeout=20) as client:
                client.connect()
            second = Activated(home, listener, "--socket", str(path))
            assert second.wait() == EXIT_ALREADY_RUNNING
            [line] = [e for e in second.logs() if e["event"] == "already_running"]
            assert f"pid {first.p.pid}" in line["error"]
            first.p.send_signal(signal.SIGTERM)
            assert first.wait() == EXIT_OK
        finally:
            first.stop()
        assert path.exists()


def test_socket_path_of_the_manager_wins_over_the_configured_one(home: Path) -> None:
    path = home / "run" / "memoryd.sock"
    with listen(path) as listener:
        daemon = Activated(home, listener, "--socket", str(home / "other" / "x.sock"))
        try:
            with MemoryClient(path, timeout=20) as client:
                client.connect()
                assert client.status().socket == str(path)
            daemon.p.send_signal(signal.SIGTERM)
            assert daemon.wait() == EXIT_OK
        finally:
            daemon.stop()
    [line] = [e for e in daemon.logs() if e["event"] == "socket_path_overridden"]
    assert line["socket"] == str(path)
    assert (home / "run" / "memoryd.lock").exists()  # the lock sits next to the real socket
    assert not (home / "other").exists()


def test_a_datagram_socket_is_refused_with_the_socket_exit_code(home: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as wrong:
        wrong.bind(str(home / "run" / "dgram"))
        daemon = Activated(home, wrong)
        try:
            assert daemon.wait() == EXIT_SOCKET
        finally:
            daemon.stop()
    [line] = [e for e in daemon.logs() if e["event"] == "socket_error"]
    assert "SOCK_DGRAM" in line["error"] and "Unix stream socket" in line["error"]


def test_listen_fds_meant_for_another_pid_are_ignored_and_the_daemon_binds(home: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unrelated:
        unrelated.bind(str(home / "run" / "unrelated.sock"))
        unrelated.listen()
        daemon = Activated(home, unrelated, env={"TEST_LISTEN_PID": "1"})
        try:
            own = home / "run" / "memoryd.sock"
            assert wait_for(lambda: accepts(own), 15), daemon.logs()
            with MemoryClient(own, timeout=20) as client:
                assert client.connect().pid == daemon.p.pid
            daemon.p.send_signal(signal.SIGTERM)
            assert daemon.wait() == EXIT_OK
        finally:
            daemon.stop()
        assert not own.exists()  # its own socket: removed as usual
        assert "socket_inherited" not in daemon.events()


# -- the hand-over, in process (fds other than 3: the test process owns fd 3) ------------


def test_listen_variables_are_removed_whatever_they_say() -> None:
    env = {"LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "x", "OTHER": "kept"}
    assert systemd_socket(env) is None
    assert env == {"OTHER": "kept"}
    env = {"LISTEN_PID": "nope", "LISTEN_FDS": "1"}
    with pytest.raises(ActivationError, match="must be numbers"):
        systemd_socket(env)
    assert env == {}


def test_listening_unix_stream_socket_is_accepted_non_blocking_and_close_on_exec(
    tmp_path: Path,
) -> None:
    with short_home() as h:
        original = listen(h / "s.sock")
        fd = os.dup(original.fileno())
        os.set_inheritable(fd, True)
        env = {"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": "1"}
        sock = systemd_socket(env, first_fd=fd)
        assert sock is not None
        try:
            assert sock.fileno() == fd and not sock.getblocking() and not sock.get_inheritable()
            assert bound_path(sock) == h / "s.sock"
        finally:
            sock.close()
            original.close()


@pytest.mark.parametrize(
    "kind, message",
    [
        ("dgram", "is a AF_UNIX/SOCK_DGRAM socket"),
        ("unbound stream", "is not listening"),
        ("tcp", "is a AF_INET/SOCK_STREAM socket"),
        ("file", "is not a socket"),
    ],
)
def test_anything_but_a_listening_unix_stream_socket_is_refused(
    kind: str, message: str, tmp_path: Path
) -> None:
    if kind == "file":
        fd = os.open(tmp_path / "f", os.O_CREAT | os.O_RDWR)
    else:
        family = socket.AF_INET if kind == "tcp" else socket.AF_UNIX
        stype = socket.SOCK_DGRAM if kind == "dgram" else socket.SOCK_STREAM
        s = socket.socket(family, stype)
        if kind == "tcp":
            s.bind(("127.0.0.1", 0))
            s.listen()
        fd = s.detach()
    with pytest.raises(ActivationError, match=message):
        listening_unix_socket(fd, "systemd")
    with pytest.raises(OSError):
        os.fstat(fd)  # closed on refusal


def test_an_announced_fd_that_is_not_open_is_refused() -> None:
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    with pytest.raises(ActivationError, match=f"fd {fd} is not open"):
        listening_unix_socket(fd, "systemd")


def test_more_than_one_socket_is_refused_naming_the_count() -> None:
    env = {"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": "2"}
    null = os.open(os.devnull, os.O_RDONLY)
    a, b = 900, 901  # consecutive, as systemd passes them; far above what the test uses
    os.dup2(null, a)
    os.dup2(null, b)
    os.close(null)
    with pytest.raises(ActivationError, match="passed 2 sockets"):
        systemd_socket(env, first_fd=a)
    for fd in (a, b):
        with pytest.raises(OSError):
            os.fstat(fd)  # closed: the daemon serves none of them


def test_adopted_socket_takes_the_lock_and_is_never_unlinked() -> None:
    with short_home() as h:
        (h / "run").mkdir(mode=0o700)
        path = h / "run" / "memoryd.sock"
        listener = listen(path)
        inst = Instance(path)
        with capture_logs() as logs:
            assert inst.adopt(listener, "systemd") is listener
        assert {
            "event": "socket_inherited",
            "socket": str(path),
            "manager": "systemd",
            "log_level": "info",
            "component": "memoryd.rpc.instance",
        } in logs
        other = socket.socket(fileno=os.dup(listener.fileno()))  # what a restart is given
        with pytest.raises(AlreadyRunning):
            Instance(path).adopt(other, "systemd")
        assert other.fileno() == -1  # the loser closed what it was given
        inst.release()
        assert path.exists() and listener.fileno() == -1
        Instance(path).acquire().close()  # the lock was released


def test_nothing_passed_means_none_and_launchd_is_not_touched_on_linux() -> None:
    code = (
        "import sys\n"
        "import memoryd.app, memoryd.cli, memoryd.rpc.instance\n"
        "from memoryd.service.activation import inherited_socket\n"
        "assert inherited_socket({}) is None\n"
        "print('memoryd.service._launchd' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(sys.platform == "darwin")


@pytest.mark.skipif(sys.platform != "darwin", reason="launch_activate_socket is macOS only")
def test_launch_activate_socket_outside_launchd_means_started_by_hand() -> None:
    from memoryd.service._launchd import activate_socket

    assert activate_socket("Listeners") == []
    assert inherited_socket({}) is None
