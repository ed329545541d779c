"""Single instance and the listening socket.

Order matters: check the socket directory, take ``flock`` on the lock file, probe the
socket path (a live daemon answers; a refused or missing one is stale and unlinked), then
bind. Only the lock holder ever unlinks or binds, so two starting daemons cannot steal
each other's socket. On exit we unlink the socket only if it is still the inode we bound.

Under socket activation (systemd's LISTEN_FDS, launchd's Sockets) the service manager
bound the socket: we take the lock, then serve on it, and never probe, unlink or bind it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import stat
from pathlib import Path

from memoryd.rpc.peer import peer_credentials
from memoryd.runtime.logs import get_logger
from memoryd.service.activation import ActivationError, bound_path, inherited_socket
from memoryd_client import protocol
from memoryd_client.paths import check_socket_path_length

log = get_logger("memoryd.rpc.instance")


class InstanceError(Exception):
    """The daemon cannot take its socket; the message says why and what to do."""


class AlreadyRunning(InstanceError):
    def __init__(self, pid: int | None, socket_path: Path) -> None:
        who = f"pid {pid}" if pid else "pid unknown"
        super().__init__(f"memoryd is already running ({who}) on {socket_path}")
        self.pid = pid


class ForeignListener(InstanceError):
    """Something that is not memoryd listens on our socket path."""

    def __init__(self, pid: int | None, socket_path: Path) -> None:
        who = f"pid {pid}" if pid else "a process we cannot identify"
        name = _process_name(pid)
        super().__init__(
            f"another program ({who}{', ' + name if name else ''}) listens on {socket_path} "
            "and does not answer as memoryd; stop it, or give memoryd another --socket"
        )
        self.pid = pid


def lock_path_for(socket_path: Path) -> Path:
    """``memoryd.sock`` → ``memoryd.lock``: one lock per socket, next to it."""
    lock = socket_path.with_suffix(".lock")
    return lock if lock != socket_path else socket_path.with_name(socket_path.name + ".lock")


def ensure_private_dir(directory: Path) -> None:
    """Create ``directory`` 0700 if missing; refuse it unless it is ours and private."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise InstanceError(f"cannot create the socket directory {directory}: {exc}") from None
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise InstanceError(f"socket directory {directory} is not a directory")
    if st.st_uid != os.geteuid():
        raise InstanceError(
            f"socket directory {directory} is owned by uid {st.st_uid}, not by us "
            f"(uid {os.geteuid()}); use a directory of your own (--socket)"
        )
    if st.st_mode & 0o077:
        raise InstanceError(
            f"socket directory {directory} has mode {stat.S_IMODE(st.st_mode):04o}; it must "
            f"not be accessible to group or others (chmod 700 {directory})"
        )


class Instance:
    """Owns the lock file and the bound listening socket of this daemon process."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.lock_path = lock_path_for(socket_path)
        self.sock: socket.socket | None = None
        self._lock_fd: int | None = None
        self._bound: tuple[int, int] | None = None  # (st_dev, st_ino) of the socket we made
        self.manager: str | None = None  # "systemd" or "launchd" when it passed the socket

    def acquire(self, backlog: int = 128) -> socket.socket:
        """Lock, then serve on the socket the service manager passed, or clear a stale
        socket, bind and listen; raises InstanceError with the reason."""
        try:
            passed = inherited_socket()
        except ActivationError as exc:
            raise InstanceError(str(exc)) from None
        if passed is not None:
            return self.adopt(*passed)
        problem = check_socket_path_length(self.socket_path)
        if problem:
            raise InstanceError(problem)
        ensure_private_dir(self.socket_path.parent)
        self._take_lock()
        try:
            self._clear_stale()
            self.sock = self._bind(backlog)
        except BaseException:
            self.release()
            raise
        return self.sock

    def adopt(self, sock: socket.socket, manager: str) -> socket.socket:
        """Serve on a listening socket the service manager bound (socket activation).

        The lock still keeps a second daemon out. The socket file is the manager's: it is
        neither unlinked nor bound again, here or on exit, and the manager keeps listening
        while this process restarts. Its path wins over the configured one.
        """
        path = bound_path(sock)
        if path is not None and not _same_file(path, self.socket_path):
            log.warning(
                "socket_path_overridden",
                configured=str(self.socket_path),
                socket=str(path),
                manager=manager,
            )
            self.socket_path, self.lock_path = path, lock_path_for(path)
        try:
            ensure_private_dir(self.socket_path.parent)
            self._take_lock()
        except BaseException:
            sock.close()
            raise
        self.sock, self.manager = sock, manager
        log.info("socket_inherited", socket=str(self.socket_path), manager=manager)
        return sock

    def _take_lock(self) -> None:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise AlreadyRunning(pid, self.socket_path) from None
        self._lock_fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)

    def _clear_stale(self) -> None:
        path = self.socket_path
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise InstanceError(f"{path} exists and is not a socket; move it away")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            pass  # nobody listens: stale
        except OSError as exc:
            if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                raise InstanceError(f"cannot probe {path}: {exc}") from None
        else:
            # We hold the lock, yet something answers: a daemon whose lock file was removed,
            # or another program entirely; hello tells them apart.
            creds = peer_credentials(probe)
            pid = creds.pid if creds else None
            if _answers_as_memoryd(probe):
                raise AlreadyRunning(pid, path)
            raise ForeignListener(pid, path)
        finally:
            probe.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        log.info("stale_socket_removed", socket=str(path))

    def _bind(self, backlog: int) -> socket.socket:
        # Bound and listening under a temporary name, then renamed into place: a client
        # that sees the socket file can connect (between bind and listen it was refused,
        # and took the daemon for not running).
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        staging = self.socket_path.with_name(f".{os.getpid()}.sock")
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging)  # a leftover of a killed daemon with our pid
            # The directory is private already; chmod closes the window for other umasks.
            sock.bind(str(staging))
            os.chmod(staging, 0o600)
            st = os.lstat(staging)
            sock.listen(backlog)
            sock.setblocking(False)
            os.rename(staging, self.socket_path)
            self._bound = (st.st_dev, st.st_ino)
        except OSError as exc:
            sock.close()
            with contextlib.suppress(OSError):
                os.unlink(staging)
            raise InstanceError(f"cannot listen on {self.socket_path}: {exc}") from None
        return sock

    def socket_missing(self) -> bool:
        """True when the socket file this process bound was deleted (a stray ``rm``, a
        tmp cleaner): clients can no longer find us. A file someone else put at the path
        is theirs; never touched."""
        if self._bound is None:  # not bound by us (socket activation): the manager's file
            return False
        try:
            os.lstat(self.socket_path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return False

    def rebind(self, backlog: int = 128) -> socket.socket:
        """Bind and listen at the path again (we still hold the lock, so it is ours to
        take); the caller stops serving the old socket, which nobody can reach."""
        ensure_private_dir(self.socket_path.parent)
        self.sock = self._bind(backlog)
        log.warning(
            "socket_recreated",
            socket=str(self.socket_path),
            reason="the socket file was deleted while running",
        )
        return self.sock

    def release(self) -> None:
        """Unlink our socket (only if it is still ours), close it, drop the lock. Idempotent."""
        if self._bound is not None:
            try:
                st = os.lstat(self.socket_path)
                if (st.st_dev, st.st_ino) == self._bound:
                    os.unlink(self.socket_path)
                else:
                    log.warning("socket_replaced_not_removed", socket=str(self.socket_path))
            except FileNotFoundError:
                pass
            self._bound = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock_fd, 0)
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a == b or os.path.samefile(a, b)
    except OSError:
        return False


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def _answers_as_memoryd(sock: socket.socket, timeout: float = 1.0) -> bool:
    """Send ``hello`` on a connected socket: does a memoryd answer within ``timeout``?"""
    try:
        sock.settimeout(timeout)
        sock.sendall(protocol.pack(protocol.request(1, "hello", {"client": "memoryd-probe"})))
        data = b""
        while len(data) < protocol.HEADER.size:
            chunk = sock.recv(protocol.HEADER.size - len(data))
            if not chunk:
                return False
            data += chunk
        length = protocol.frame_length(data, 1 << 20)
        body = b""
        while len(body) < length:
            chunk = sock.recv(length - len(body))
            if not chunk:
                return False
            body += chunk
        frame = protocol.unpack(body)
    except (OSError, protocol.FrameError):
        return False
    result = frame.get("result")
    return isinstance(result, dict) and result.get("server") == "memoryd"


def _process_name(pid: int | None) -> str:
    if not pid:
        return ""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
