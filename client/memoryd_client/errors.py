"""What can go wrong talking to memoryd, as small named exceptions (a leaf module).

Every message says what happened and what to do about it; ``memctl`` prints ``str(exc)``
as its one-line error. Errors the daemon answers with are :class:`RemoteError`, one
subclass per stable wire code (``exc.code`` is the code itself, so callers may switch on
either).
"""

from __future__ import annotations

from memoryd_client.protocol import PROTOCOL_VERSION, ErrorCode

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: memctl's lean paths load neither typing nor pathlib
    import os
    from typing import Any, ClassVar

    SocketPath = str | os.PathLike[str]


class ClientError(Exception):
    """Base class of every error this package raises."""


class DaemonNotRunning(ClientError):
    """No daemon to talk to: the socket file does not exist (ENOENT)."""

    def __init__(self, socket: SocketPath, message: str | None = None) -> None:
        self.socket = socket
        super().__init__(
            message
            or (
                f"memoryd is not running (no socket at {socket}); start it with "
                "`memoryd run` or `memoryd service install`"
            )
        )


class StaleSocket(DaemonNotRunning):
    """The socket file exists but nobody listens on it (ECONNREFUSED).

    A subclass of :class:`DaemonNotRunning` because that is what it means; the message
    is different so the user knows a daemon died without cleaning up.
    """

    def __init__(self, socket: SocketPath) -> None:
        super().__init__(
            socket,
            f"memoryd is not running: {socket} exists but nobody listens on it "
            "(stale socket from a daemon that died); start memoryd again with "
            "`memoryd run`, it removes the stale socket",
        )


class SocketUnusable(ClientError):
    """The socket path cannot be used at all (too long, permission denied, not a socket)."""

    def __init__(self, socket: SocketPath, reason: str) -> None:
        self.socket = socket
        super().__init__(reason)


class ProtocolMismatch(ClientError):
    """The daemon speaks a wire protocol this client does not."""

    def __init__(
        self, server_protocol: Any, server_version: str | None, socket: SocketPath
    ) -> None:
        self.server_protocol = server_protocol
        self.server_version = server_version
        self.socket = socket
        version = f" (memoryd {server_version})" if server_version else ""
        super().__init__(
            f"the daemon at {socket}{version} speaks protocol {server_protocol}, this client "
            f"speaks protocol {PROTOCOL_VERSION}: install matching versions of memoryd and "
            "memctl, then restart the daemon"
        )


class ConnectionLost(ClientError):
    """The connection dropped before the answer came (after the one allowed retry)."""


class BadResponse(ClientError):
    """The daemon answered something this client cannot read (a bug on one side)."""


class ClientTimeout(ClientError, TimeoutError):
    """No answer (or no progress) from the daemon within the timeout."""


class AutostartFailed(ClientError):
    """``autostart=True`` could not bring a daemon up."""


class RemoteError(ClientError):
    """An error answered by the daemon: a stable ``code``, a ``message`` and ``data``."""

    code: str = ErrorCode.INTERNAL
    _by_code: ClassVar[dict[str, type[RemoteError]]] = {}

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data: dict[str, Any] = data or {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        RemoteError._by_code[cls.code] = cls

    def __str__(self) -> str:
        return f"{self.message} ({self.code})"

    @classmethod
    def from_wire(cls, err: Any) -> RemoteError:
        """The exception for the ``error`` map of a response; tolerant of odd shapes."""
        if not isinstance(err, dict):
            return InternalError(ErrorCode.INTERNAL, f"malformed error from the daemon: {err!r}")
        code = str(err.get("code") or ErrorCode.INTERNAL)
        message = str(err.get("message") or code)
        data = err.get("data")
        klass = cls._by_code.get(code, RemoteError)
        return klass(code, message, data if isinstance(data, dict) else None)


class ProtocolError(RemoteError):
    code = ErrorCode.PROTOCOL_ERROR


class FrameTooLarge(RemoteError):
    code = ErrorCode.TOO_LARGE


class UnknownMethod(RemoteError):
    code = ErrorCode.UNKNOWN_METHOD


class InvalidParams(RemoteError):
    code = ErrorCode.INVALID_PARAMS


class NotFound(RemoteError):
    code = ErrorCode.NOT_FOUND


class ForbiddenPath(RemoteError):
    code = ErrorCode.FORBIDDEN_PATH


class UnknownWorkspace(RemoteError):
    code = ErrorCode.UNKNOWN_WORKSPACE


class Unavailable(RemoteError):
    code = ErrorCode.UNAVAILABLE


class ShuttingDown(RemoteError):
    code = ErrorCode.SHUTTING_DOWN


class DiskFull(RemoteError):
    """The daemon's disk is full: nothing of the write is there (retrying later is safe)."""

    code = ErrorCode.DISK_FULL


class Conflict(RemoteError):
    """A file kept changing under a write (another writer): ``data`` says what was done and
    what was not; running the request again is safe."""

    code = ErrorCode.CONFLICT


class InternalError(RemoteError):
    code = ErrorCode.INTERNAL


__all__ = [
    "AutostartFailed",
    "BadResponse",
    "ClientError",
    "ClientTimeout",
    "Conflict",
    "ConnectionLost",
    "DaemonNotRunning",
    "DiskFull",
    "ForbiddenPath",
    "FrameTooLarge",
    "InternalError",
    "InvalidParams",
    "NotFound",
    "ProtocolError",
    "ProtocolMismatch",
    "RemoteError",
    "ShuttingDown",
    "SocketUnusable",
    "StaleSocket",
    "Unavailable",
    "UnknownMethod",
    "UnknownWorkspace",
]
