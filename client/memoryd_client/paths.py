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
import sys
from pathlib import Path
from types import ModuleType

from memoryd_client import _socket_path
from memoryd_client._socket_path import (
    APP,
    MAX_SOCKET_PATH_BYTES,
    SOCKET_NAME,
    check_socket_path_length,
    private_dir_problem,
)

_FIELDS = ("config_file", "data_dir", "state_dir", "runtime_dir", "log_dir")  # in order


class Paths:
    """Where memoryd keeps its files: config, data, state, runtime (socket), logs.

    Frozen, compared, hashed and shown as a frozen dataclass of these five fields would be,
    written out: ``dataclass`` compiled its six methods at every start of the daemon and of
    ``memctl`` (~4 M instructions; issue 38)."""

    __slots__ = _FIELDS
    config_file: Path
    data_dir: Path
    state_dir: Path
    runtime_dir: Path
    log_dir: Path

    def __init__(
        self, config_file: Path, data_dir: Path, state_dir: Path, runtime_dir: Path, log_dir: Path
    ) -> None:
        values = (config_file, data_dir, state_dir, runtime_dir, log_dir)
        for name, value in zip(_FIELDS, values, strict=True):
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[Path, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Paths) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type[Paths], tuple[Path, ...]]:
        # copy, deepcopy and pickle make it anew: their default sets each slot through
        # __setattr__, which refuses (the frozen dataclass had no slots: its __dict__ was set)
        return (self.__class__, self._values())

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"

    @property
    def state_db(self) -> Path:
        return self.state_dir / "state.sqlite"

    @property
    def socket(self) -> Path:
        return self.runtime_dir / SOCKET_NAME


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


LOGIN_RUNTIME_BASE = Path(_socket_path.LOGIN_RUNTIME_BASE)


def runtime_dir(
    env: dict[str, str], *, fallback: Path, login_base: Path = LOGIN_RUNTIME_BASE
) -> Path:
    """The socket's folder: in the session's runtime directory, else ``fallback``."""
    if sys.platform == "darwin":  # ~/Library/Caches/TemporaryItems: per user, never warns
        return Path(_platformdirs().user_runtime_dir(APP))
    return _session_runtime_dir(env, login_base) or fallback


def _session_runtime_dir(env: dict[str, str], login_base: Path = LOGIN_RUNTIME_BASE) -> Path | None:
    """Our folder in the session's runtime directory, when there is a usable one."""
    found = _socket_path.session_runtime_dir(env, os.fspath(login_base))
    return None if found is None else Path(found)


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
    return Path(_socket_path.socket_file(env, override))


__all__ = [
    "APP",
    "LOGIN_RUNTIME_BASE",
    "MAX_SOCKET_PATH_BYTES",
    "SOCKET_NAME",
    "Paths",
    "check_socket_path_length",
    "config_path",
    "default_paths",
    "private_dir_problem",
    "runtime_dir",
    "socket_path",
]
