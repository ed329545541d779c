"""Single instance and the socket: lock, probe, stale cleanup, directory checks, unlink."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from daemon_util import short_home
from memoryd.rpc.instance import (
    AlreadyRunning,
    ForeignListener,
    Instance,
    InstanceError,
    lock_path_for,
)
from memoryd_client.paths import MAX_SOCKET_PATH_BYTES


@pytest.fixture
def sock_path() -> Iterator[Path]:
    with short_home() as home:
        yield home / "run" / "memoryd.sock"


def test_socket_dir_is_created_private_and_socket_is_0600(sock_path: Path) -> None:
    inst = Instance(sock_path)
    inst.acquire()
    try:
        assert sock_path.parent.stat().st_mode & 0o777 == 0o700
        assert sock_path.stat().st_mode & 0o777 == 0o600
        assert lock_path_for(sock_path) == sock_path.parent / "memoryd.lock"
    finally:
        inst.release()
    assert not sock_path.exists()


def test_second_instance_is_refused_naming_the_running_pid(sock_path: Path) -> None:
    first = Instance(sock_path)
    first.acquire()
    try:
        with pytest.raises(AlreadyRunning) as info:
            Instance(sock_path).acquire()
        assert info.value.pid == os.getpid()
        assert f"already running (pid {os.getpid()})" in str(info.value)
        assert sock_path.exists()  # the loser did not touch the winner's socket
    finally:
        first.release()


def test_live_socket_without_lock_holder_is_not_stolen(sock_path: Path) -> None:
    """A listener that does not answer hello is another program, named as such."""
    sock_path.parent.mkdir(mode=0o700)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(str(sock_path))
    other.listen()
    try:
        with pytest.raises(ForeignListener) as info:
            Instance(sock_path).acquire()
        if os.uname().sysname == "Linux":
            assert info.value.pid == os.getpid()  # told by SO_PEERCRED
        assert sock_path.exists()
    finally:
        other.close()


def test_stale_socket_file_is_removed_with_a_log_line(sock_path: Path) -> None:
    sock_path.parent.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock_path))
    dead.close()  # the file stays, nobody listens: a crashed daemon's leftover
    inst = Instance(sock_path)
    with capture_logs() as logs:
        inst.acquire()
    try:
        assert {
            "event": "stale_socket_removed",
            "socket": str(sock_path),
            "log_level": "info",
            "component": "memoryd.rpc.instance",
        } in logs
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(str(sock_path))  # it is ours now, and it listens
        probe.close()
    finally:
        inst.release()


def test_a_regular_file_at_the_socket_path_is_refused(sock_path: Path) -> None:
    sock_path.parent.mkdir(mode=0o700)
    sock_path.write_text("not a socket")
    with pytest.raises(InstanceError, match="not a socket"):
        Instance(sock_path).acquire()
    assert sock_path.read_text() == "not a socket"


@pytest.mark.parametrize("mode", [0o755, 0o770, 0o701])
def test_socket_dir_open_to_group_or_others_is_refused(sock_path: Path, mode: int) -> None:
    sock_path.parent.mkdir()
    os.chmod(sock_path.parent, mode)
    with pytest.raises(InstanceError, match=f"mode {mode:04o}.*chmod 700"):
        Instance(sock_path).acquire()


def test_socket_dir_owned_by_someone_else_is_refused(sock_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a directory to another uid")
    sock_path.parent.mkdir(mode=0o700)
    os.chown(sock_path.parent, 65534, 65534)
    with pytest.raises(InstanceError, match="owned by uid 65534"):
        Instance(sock_path).acquire()


def test_too_long_socket_path_is_a_clear_error_not_a_truncated_path() -> None:
    with short_home() as home:
        deep = home / ("d" * (MAX_SOCKET_PATH_BYTES - len(str(home)))) / "memoryd.sock"
        with pytest.raises(InstanceError, match=r"socket path is \d+ bytes.*MEMORYD_SOCKET"):
            Instance(deep).acquire()
        assert not deep.parent.exists()


def test_release_unlinks_only_the_socket_this_process_created(sock_path: Path) -> None:
    inst = Instance(sock_path)
    inst.acquire()
    os.unlink(sock_path)
    usurper = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    usurper.bind(str(sock_path))  # someone else's socket now lives at the path
    try:
        with capture_logs() as logs:
            inst.release()
        assert sock_path.exists()
        assert any(e["event"] == "socket_replaced_not_removed" for e in logs)
    finally:
        usurper.close()


def test_lock_is_free_again_after_release(sock_path: Path) -> None:
    first = Instance(sock_path)
    first.acquire()
    first.release()
    first.release()  # idempotent
    second = Instance(sock_path)
    second.acquire()
    assert lock_path_for(sock_path).read_text().strip() == str(os.getpid())
    second.release()
