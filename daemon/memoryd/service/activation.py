"""A listening socket handed over by the service manager (socket activation).

systemd (sd_listen_fds(3)): ``LISTEN_PID`` is the pid the sockets are meant for,
``LISTEN_FDS`` how many there are, starting at fd 3. The variables are removed from the
environment whatever happens, so no child inherits them. launchd: the plist's ``Sockets``
entry, fetched with launch_activate_socket(3) (``_launchd.py``, imported on macOS only).

The socket must be a listening Unix stream socket; anything else is refused with a message
naming what was passed. Its file belongs to the manager: the daemon never unlinks nor binds
it again, and the manager keeps listening while the daemon restarts.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Final

SD_LISTEN_FDS_START: Final = 3
LAUNCHD_SOCKET_NAME: Final = "Listeners"  # the key under Sockets in the plist
_SYSTEMD_VARS: Final = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


class ActivationError(Exception):
    """The service manager passed something we cannot serve on; the message says what."""


def inherited_socket(
    environ: MutableMapping[str, str] | None = None, first_fd: int = SD_LISTEN_FDS_START
) -> tuple[socket.socket, str] | None:
    """The listening socket from systemd or launchd and the manager's name, or None.

    None means the daemon was started by hand (or by a manager without socket activation)
    and binds its own socket.
    """
    sock = systemd_socket(environ, first_fd)
    if sock is not None:
        return sock, "systemd"
    if sys.platform == "darwin":
        sock = launchd_socket()
        if sock is not None:
            return sock, "launchd"
    return None


def systemd_socket(
    environ: MutableMapping[str, str] | None = None, first_fd: int = SD_LISTEN_FDS_START
) -> socket.socket | None:
    env = os.environ if environ is None else environ
    pid, count = env.get("LISTEN_PID"), env.get("LISTEN_FDS")
    for key in _SYSTEMD_VARS:  # like sd_listen_fds(1): children must not see them
        env.pop(key, None)
    if pid is None or count is None:
        return None
    try:
        pid_n, fds = int(pid), int(count)
    except ValueError:
        raise ActivationError(
            f"LISTEN_PID={pid!r} and LISTEN_FDS={count!r} must be numbers (socket activation)"
        ) from None
    if pid_n != os.getpid():  # meant for another process (a wrapper that exec'd us?)
        return None
    if fds <= 0:
        return None
    if fds > 1:
        for fd in range(first_fd, first_fd + fds):
            with contextlib.suppress(OSError):
                os.close(fd)
        raise ActivationError(
            f"systemd passed {fds} sockets; memoryd serves exactly one "
            "(one ListenStream= in memoryd.socket)"
        )
    return listening_unix_socket(first_fd, "systemd")


def launchd_socket() -> socket.socket | None:
    from memoryd.service._launchd import activate_socket  # ctypes: macOS only, and only here

    try:
        fds = activate_socket(LAUNCHD_SOCKET_NAME)
    except OSError as exc:
        raise ActivationError(
            f"launch_activate_socket({LAUNCHD_SOCKET_NAME}) failed: {exc.strerror or exc}"
        ) from None
    if not fds:
        return None
    if len(fds) > 1:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        raise ActivationError(
            f"launchd passed {len(fds)} sockets under "
            f"{LAUNCHD_SOCKET_NAME}; memoryd serves exactly one"
        )
    return listening_unix_socket(fds[0], "launchd")


def listening_unix_socket(fd: int, manager: str) -> socket.socket:
    """Wrap ``fd`` after checking it is a listening Unix stream socket (then non-blocking,
    close-on-exec); otherwise close it and raise ActivationError."""
    try:
        st = os.fstat(fd)
    except OSError:
        raise ActivationError(
            f"{manager} announced a socket on fd {fd}, but fd {fd} is not open"
        ) from None
    if not stat.S_ISSOCK(st.st_mode):
        os.close(fd)
        raise ActivationError(f"fd {fd} from {manager} is not a socket")
    sock = socket.socket(fileno=fd)
    try:
        if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
            raise ActivationError(
                f"fd {fd} from {manager} is a {sock.family.name}/{sock.type.name} socket; "
                "memoryd needs a Unix stream socket (ListenStream= with a path)"
            )
        accepting = getattr(socket, "SO_ACCEPTCONN", None)
        if accepting is not None and not sock.getsockopt(socket.SOL_SOCKET, accepting):
            raise ActivationError(f"the Unix socket on fd {fd} from {manager} is not listening")
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(False)
    sock.setblocking(False)
    return sock


def bound_path(sock: socket.socket) -> Path | None:
    """The file-system path ``sock`` is bound to; None for an abstract or unnamed socket."""
    name = sock.getsockname()
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not isinstance(name, str) or not name or name.startswith("\0"):
        return None
    return Path(name)
