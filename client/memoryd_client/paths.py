"""Where memoryd keeps its files, shared by the daemon and the client.

Everything resolves from platformdirs unless ``MEMORYD_HOME`` puts all of it under one
folder (tests, portable installs), the socket included. Nothing here creates a directory:
callers that write create what they need, with the modes they need (the daemon makes the
socket's folder 0700 and refuses one that is not private and its own).

The socket's folder on Linux is the login session's runtime directory (``$XDG_RUNTIME_DIR``,
else ``/run/user/UID`` when logind made one), as systemd's ``%t`` is. Without either (a
container, ``su``, a cron job on a machine without logind) platformdirs falls back to
``/tmp/runtime-UID``, shared by every daemon of that uid whatever its ``HOME``, and warns
on stderr; ours is a private folder in the user's state directory instead, so two daemons
with different homes never meet.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

APP = "memoryd"
SOCKET_NAME = "memoryd.sock"
LOCK_NAME = "memoryd.lock"

# sun_path is 108 bytes on Linux and 104 on macOS/BSD, including the trailing NUL.
MAX_SOCKET_PATH_BYTES = 107 if sys.platform.startswith("linux") else 103


@dataclass(frozen=True)
class Paths:
    config_file: Path
    data_dir: Path
    state_dir: Path
    runtime_dir: Path
    log_dir: Path

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"

    @property
    def state_db(self) -> Path:
        return self.state_dir / "state.sqlite"

    @property
    def socket(self) -> Path:
        return self.runtime_dir / SOCKET_NAME

    @property
    def lock_file(self) -> Path:
        return self.runtime_dir / LOCK_NAME


def _platformdirs() -> ModuleType:
    """Imported when first needed: it pulls in tempfile, random and shutil, which a
    ``memctl`` run under ``MEMORYD_HOME`` (or with ``XDG_RUNTIME_DIR``) never uses."""
    import platformdirs

    return platformdirs


def default_paths(env: dict[str, str] | None = None) -> Paths:
    """The paths in force for this environment (``MEMORYD_HOME`` or platformdirs)."""
    env = dict(os.environ) if env is None else env
    home = env.get("MEMORYD_HOME")
    if home:
        root = Path(home).expanduser()
        return Paths(
            config_file=root / "config.toml",
            data_dir=root / "data",
            state_dir=root / "state",
            runtime_dir=root / "run",
            log_dir=root / "log",
        )
    state_dir = Path(_platformdirs().user_state_dir(APP))
    return Paths(
        config_file=Path(_platformdirs().user_config_dir(APP)) / "config.toml",
        data_dir=Path(_platformdirs().user_data_dir(APP)),
        state_dir=state_dir,
        runtime_dir=runtime_dir(env, fallback=state_dir / "run"),
        log_dir=Path(_platformdirs().user_log_dir(APP)),
    )


LOGIN_RUNTIME_BASE = Path("/run/user")  # systemd-logind's per-user runtime directories


def runtime_dir(
    env: dict[str, str], *, fallback: Path, login_base: Path = LOGIN_RUNTIME_BASE
) -> Path:
    """The socket's folder: in the session's runtime directory, else ``fallback``."""
    if sys.platform == "darwin":  # ~/Library/Caches/TemporaryItems: per user, never warns
        return Path(_platformdirs().user_runtime_dir(APP))
    return _session_runtime_dir(env, login_base) or fallback


def _session_runtime_dir(env: dict[str, str], login_base: Path = LOGIN_RUNTIME_BASE) -> Path | None:
    """Our folder in the session's runtime directory, when there is a usable one."""
    for base in (env.get("XDG_RUNTIME_DIR"), login_base / str(os.geteuid())):
        if base and private_dir_problem(Path(base)) is None:
            return Path(base) / APP
    return None


def private_dir_problem(path: Path) -> str | None:
    """Why ``path`` is not a directory of ours that only we can enter, or None when it is."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.geteuid():
        return f"{path} is owned by uid {st.st_uid}, not by uid {os.geteuid()}"
    if st.st_mode & 0o077:
        return f"{path} has mode {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def config_path(env: dict[str, str] | None = None, override: str | None = None) -> Path:
    """``--config`` beats ``MEMORYD_CONFIG`` beats the default location."""
    env = dict(os.environ) if env is None else env
    if override:
        return Path(override).expanduser()
    if env.get("MEMORYD_CONFIG"):
        return Path(env["MEMORYD_CONFIG"]).expanduser()
    return default_paths(env).config_file


def socket_path(env: dict[str, str] | None = None, override: str | None = None) -> Path:
    """``--socket`` beats ``MEMORYD_SOCKET`` beats the default location."""
    env = dict(os.environ) if env is None else env
    if override:
        return Path(override).expanduser()
    if env.get("MEMORYD_SOCKET"):
        return Path(env["MEMORYD_SOCKET"]).expanduser()
    if not env.get("MEMORYD_HOME") and sys.platform != "darwin":
        # default_paths' answer, without resolving the folders a socket does not need
        found = _session_runtime_dir(env)
        if found is not None:
            return found / SOCKET_NAME
    return default_paths(env).socket


def check_socket_path_length(path: Path) -> str | None:
    """A message saying why ``path`` cannot be a Unix socket here, or None when it can."""
    size = len(os.fsencode(str(path)))
    if size > MAX_SOCKET_PATH_BYTES:
        return (
            f"socket path is {size} bytes, the platform allows {MAX_SOCKET_PATH_BYTES}: {path} "
            "(set MEMORYD_SOCKET or --socket to a shorter path)"
        )
    return None
