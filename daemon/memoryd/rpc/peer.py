"""Who is at the other end of a Unix socket: SO_PEERCRED on Linux, getpeereid on BSD/macOS.

The socket directory is private already; this is the second wall, so that a loosened
directory mode or an inherited descriptor still cannot let another user in. It fails
closed: when the peer cannot be identified, the server refuses the connection.
"""

from __future__ import annotations

import socket
import struct
import sys
from typing import TYPE_CHECKING

from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record


@frozen_record(frozen=True, eq=False, repr=False)
class PeerCredentials(Record):
    """Who is at the other end of a socket connection, as the kernel tells."""

    uid: int
    pid: int | None  # None where the platform does not tell


def peer_credentials(sock: socket.socket) -> PeerCredentials | None:
    """The peer's uid (and pid on Linux), or None when it cannot be told (the platform
    lacks the call, or the call failed): the caller must then refuse the peer."""
    if sys.platform.startswith("linux"):
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return None
        pid, uid, _gid = struct.unpack("3i", raw)
        return PeerCredentials(uid=uid, pid=pid or None)
    return _getpeereid(sock)


def _getpeereid(sock: socket.socket) -> PeerCredentials | None:
    import ctypes.util  # here only: it imports shutil, which Linux's daemon never needs

    name = ctypes.util.find_library("c")
    if not name:
        return None
    libc = ctypes.CDLL(name, use_errno=True)
    func = getattr(libc, "getpeereid", None)
    if func is None:
        return None
    uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
    if func(sock.fileno(), ctypes.byref(uid), ctypes.byref(gid)) != 0:
        return None
    return PeerCredentials(uid=uid.value, pid=None)
