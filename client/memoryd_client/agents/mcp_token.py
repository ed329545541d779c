"""The bearer token ``memctl mcp --http`` requires by default.

Over HTTP the memory is no longer behind the daemon's 0700 socket: any local user (and, on
loopback, any web page a browser opens) can reach the port. So the server requires
``Authorization: Bearer TOKEN``, and the token lives in a file only the user can read:
``mcp-token`` in the state folder (``MEMORYD_HOME/state`` or platformdirs'), made on first
use, 0600 in a 0700 folder. ``memctl setup --http`` writes it into the clients it
configures; ``--token`` (or ``$MEMCTL_MCP_TOKEN``) sets another.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Final

from memoryd_client.errors import ClientError
from memoryd_client.paths import default_paths

__all__ = ["TOKEN_FILE", "load_or_create", "token_path"]

TOKEN_FILE: Final = "mcp-token"


def token_path(env: dict[str, str] | None = None) -> Path:
    return default_paths(env).state_dir / TOKEN_FILE


def load_or_create(env: dict[str, str] | None = None) -> tuple[str, Path]:
    """The token (made now if there is none yet) and its file."""
    path = token_path(env)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read(path), path
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(32) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return _read(path), path


def _read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise ClientError(f"{path} is not a file of yours: not used as the MCP token")
        if st.st_mode & 0o077:  # readable by others: the token is no secret any more
            os.fchmod(f.fileno(), 0o600)
        token = f.read().strip()
    if len(token) < 16:
        raise ClientError(f"{path} holds no token (16 characters at least): delete it")
    return token
