"""Fill the templates in for this installation: the systemd units and the launchd plist.

The templates' one home is the repository's top level, ``systemd/`` and ``launchd/``, where
a person who clones it reads them. The build (setup.py) ships exactly those files in the wheel
as ``memoryd/service/templates/``; an editable install (a checkout) has no such folder and
reads them at the top level.

Placeholders are ``@NAME@``. A service manager knows neither your shell's PATH nor your
virtual environment, so the executable is always an absolute path: the ``memoryd`` next
to the running Python (the same environment), else the one on PATH.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

from memoryd.service.activation import LAUNCHD_SOCKET_NAME

SERVICE_UNIT: Final = "memoryd.service"
SOCKET_UNIT: Final = "memoryd.socket"
LAUNCHD_LABEL: Final = "dev.memoryd.memoryd"
PLIST: Final = f"{LAUNCHD_LABEL}.plist"
TEMPLATES: Final = (SERVICE_UNIT, SOCKET_UNIT, PLIST)
#: Each template's folder at the repository's top level.
TEMPLATE_FOLDERS: Final = {SERVICE_UNIT: "systemd", SOCKET_UNIT: "systemd", PLIST: "launchd"}
#: Where the units put the socket (``%t`` is ``$XDG_RUNTIME_DIR`` in a user unit).
SYSTEMD_SOCKET: Final = "%t/memoryd/memoryd.sock"
LINUX_PATH: Final = ("/usr/local/bin", "/usr/bin", "/bin")
MACOS_PATH: Final = (
    "/opt/homebrew/bin",
    "/usr/local/bin",
    "/usr/bin",
    "/bin",
    "/usr/sbin",
    "/sbin",
)

_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")


class RenderError(Exception):
    """The files cannot be rendered here; the message says why and what to do."""


def template(name: str) -> str:
    """The template ``name`` (one of TEMPLATES), as text: the wheel's copy, else (an
    editable install) the checkout's own."""
    packaged = resources.files("memoryd.service").joinpath("templates", name)
    if packaged.is_file():
        return packaged.read_text("utf-8")
    checkout = Path(__file__).resolve().parents[3] / TEMPLATE_FOLDERS[name] / name
    try:
        return checkout.read_text("utf-8")
    except FileNotFoundError:
        raise RenderError(
            f"the service template {name} is missing from this installation "
            "(reinstall memoryd from its wheel or its repository)"
        ) from None


def find_memoryd(
    python: str = sys.executable, which: Callable[[str], str | None] = shutil.which
) -> Path:
    """The installed ``memoryd`` executable, as an absolute path (symlinks kept: a venv's
    ``bin/`` is the address that survives upgrades)."""
    beside = Path(python).parent / "memoryd"
    if beside.is_file() and os.access(beside, os.X_OK):
        return Path(os.path.abspath(beside))
    found = which("memoryd")
    if found:
        return Path(os.path.abspath(found))
    raise RenderError(
        f"cannot find the `memoryd` executable next to {python} or on PATH; "
        "run this with the memoryd you want the service to start "
        "(e.g. ~/.venvs/memoryd/bin/memoryd service install)"
    )


def search_path(exe: Path, base: Sequence[str]) -> str:
    """PATH for the service: the executable's own directory (its venv) first."""
    return ":".join(dict.fromkeys([str(exe.parent), *base]))


def render_systemd_service(exe: Path) -> str:
    return fill(
        template(SERVICE_UNIT),
        {
            "EXEC": systemd_word(str(exe)),
            "PATH": systemd_quoted_value(search_path(exe, LINUX_PATH)),
        },
    )


def render_systemd_socket() -> str:
    return fill(template(SOCKET_UNIT), {})


def render_launchd_plist(
    exe: Path, socket: Path, log_file: Path, socket_activation: bool = False
) -> str:
    """The LaunchAgent; with ``socket_activation`` launchd owns the socket and starts the
    daemon on the first connection (no RunAtLoad)."""
    values = {
        "EXEC": str(exe),
        "SOCKET": str(socket),
        "LOG": str(log_file),
        "PATH": search_path(exe, MACOS_PATH),
    }
    for name, value in values.items():
        _check_plain(name, value)
    data = _substitute(plistlib.loads(template(PLIST).encode("utf-8")), values)
    if socket_activation:
        data["RunAtLoad"] = False
        data["Sockets"] = {
            LAUNCHD_SOCKET_NAME: {
                "SockPathName": str(socket),
                "SockPathMode": 0o600,  # an integer in the plist: 384
                "SockType": "stream",
                "SockFamily": "Unix",
            }
        }
    return plistlib.dumps(data, sort_keys=False).decode("utf-8")


def fill(text: str, values: Mapping[str, str]) -> str:
    """Replace every ``@NAME@``; an unknown placeholder is a bug in the template."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise RenderError(f"template placeholder @{name}@ has no value")
        return values[name]

    return _PLACEHOLDER.sub(one, text)


def _substitute(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return fill(value, values)
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    return value


def _check_plain(name: str, value: str) -> None:
    if any(ord(c) < 32 or c == "\x7f" for c in value):
        raise RenderError(f"the {name.lower()} path contains a control character: {value!r}")


def systemd_word(value: str) -> str:
    """One ExecStart= word: ``%`` and ``$`` escaped, quoted when it holds spaces or quotes."""
    _check_plain("executable", value)
    escaped = value.replace("%", "%%").replace("$", "$$")
    if any(c in escaped for c in " \t\"'\\"):
        escaped = '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return escaped


def systemd_quoted_value(value: str) -> str:
    """Text inside ``Environment="KEY=..."``: ``%`` (specifiers), ``\\`` and ``"`` escaped."""
    _check_plain("PATH", value)
    return value.replace("%", "%%").replace("\\", "\\\\").replace('"', '\\"')
