"""Where the daemon's socket is, as a string: the rules of :mod:`memoryd_client.paths` for
the socket alone, without pathlib, dataclasses or (when the environment names the folder)
platformdirs, so that memctl's lean paths (``memctl hook``, ``search --json``) find it for
the cost of a few ``os`` calls. ``paths`` builds its ``Path`` answers on these.
"""

from __future__ import annotations

import os
import stat
import sys

APP = "memoryd"
SOCKET_NAME = "memoryd.sock"

# sun_path is 108 bytes on Linux and 104 on macOS/BSD, including the trailing NUL.
MAX_SOCKET_PATH_BYTES = 107 if sys.platform.startswith("linux") else 103

LOGIN_RUNTIME_BASE = "/run/user"  # systemd-logind's per-user runtime directories


def socket_file(env: dict[str, str] | None = None, override: str | None = None) -> str:
    """``--socket`` beats ``MEMORYD_SOCKET`` beats the default location: under
    ``MEMORYD_HOME``, else our folder in the session's runtime directory, else (no usable
    one: a container, ``su``, cron) a private folder in the user's state directory."""
    env = dict(os.environ) if env is None else env
    if override:
        return os.path.expanduser(override)
    if env.get("MEMORYD_SOCKET"):
        return os.path.expanduser(env["MEMORYD_SOCKET"])
    home = env.get("MEMORYD_HOME")
    if home:
        return os.path.join(os.path.expanduser(home), "run", SOCKET_NAME)
    if sys.platform != "darwin":
        found = session_runtime_dir(env)
        if found is not None:
            return os.path.join(found, SOCKET_NAME)
    import platformdirs  # tempfile, random, shutil: only when nothing above decides

    if sys.platform == "darwin":  # ~/Library/Caches/TemporaryItems: per user, never warns
        return os.path.join(platformdirs.user_runtime_dir(APP), SOCKET_NAME)
    return os.path.join(platformdirs.user_state_dir(APP), "run", SOCKET_NAME)


def session_runtime_dir(env: dict[str, str], login_base: str = LOGIN_RUNTIME_BASE) -> str | None:
    """Our folder in the session's runtime directory, when there is a usable one."""
    for base in (env.get("XDG_RUNTIME_DIR"), os.path.join(login_base, str(os.geteuid()))):
        if base and private_dir_problem(base) is None:
            return os.path.join(base, APP)
    return None


def private_dir_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not a directory of ours that only we can enter, or None when it is."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{os.fspath(path)}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{os.fspath(path)} is not a directory"
    if st.st_uid != os.geteuid():
        return f"{os.fspath(path)} is owned by uid {st.st_uid}, not by uid {os.geteuid()}"
    if st.st_mode & 0o077:
        return f"{os.fspath(path)} has mode {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def check_socket_path_length(path: str | os.PathLike[str]) -> str | None:
    """A message saying why ``path`` cannot be a Unix socket here, or None when it can."""
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH_BYTES:
        return (
            f"socket path is {size} bytes, the platform allows {MAX_SOCKET_PATH_BYTES}: "
            f"{os.fspath(path)} (set MEMORYD_SOCKET or --socket to a shorter path)"
        )
    return None
