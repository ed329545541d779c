"""One blocking connection to memoryd, spoken in plain maps: connect (starting the daemon
when asked), ``hello``, a request and its answer (its progress events on the way), and the
one resend on a fresh connection for a method safe to resend (protocol.SAFE_TO_RESEND).

:class:`~memoryd_client.MemoryClient` reads each answer into its result type; memctl's
lean paths (``memctl hook``, ``memctl search --json``) use a connection alone and keep the
maps. So this module imports no result types, and neither dataclasses, pathlib nor typing
at run time: a process that only needs a map (a hook before every prompt) pays for none.
It speaks to the socket through ``_socket``, the C module ``socket`` wraps: a blocking
Unix-socket client uses nothing ``socket`` adds, and importing ``socket`` (an enum built
from every constant, selectors) costs such a process ~5 ms of CPU, as much as ``json``.
"""

from __future__ import annotations

import _socket
import errno
import itertools
import os
import stat
import time

from memoryd_client import protocol
from memoryd_client._socket_path import check_socket_path_length
from memoryd_client.errors import (
    BadResponse,
    ClientError,
    ClientTimeout,
    ConnectionLost,
    DaemonNotRunning,
    ProtocolMismatch,
    RemoteError,
    SocketUnusable,
    StaleSocket,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a hook ~3 ms of import: for the checker only
    from collections.abc import Callable
    from typing import Any

    EventHandler = Callable[[dict[str, Any]], object]

DEFAULT_TIMEOUT = 30.0
DEFAULT_CLIENT_NAME = "memoryd_client"
#: Calls that report progress (``reindex``) may go this long without any frame, at least.
LONG_CALL_MIN_TIMEOUT = 600.0
_RECV_BYTES = 256 * 1024


class _Dropped(Exception):
    """The connection ended (EOF or reset) while waiting for an answer."""


class _TimedOut(Exception):
    """No frame before the deadline."""


class Connection:
    """A socket to the daemon, opened (and ``hello`` said) on first use; ``hello``: the
    daemon's answer to it on the current socket, as its map."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        *,
        explicit_socket: bool,
        timeout: float | None,
        autostart: bool,
        client_name: str,
    ) -> None:
        self.socket_path = socket_path
        self.explicit_socket = explicit_socket  # autostart passes it to `memoryd run`
        self.timeout = timeout
        self.autostart = autostart
        self.client_name = client_name
        self.hello: dict[str, Any] | None = None
        self._sock: _socket.socket | None = None
        self._just_opened = False  # hello answered, no request yet: no idle check needed
        self._buffer = FrameBuffer()
        self._ids = itertools.count(1)
        # A reused socket's poll object (select.poll, the socket registered once): whether
        # the daemon closed it while idle costs one poll(0) per request, not a select of
        # lists made anew.
        self._poll: tuple[_socket.socket, Any] | None = None

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def open(self) -> dict[str, Any]:
        """Connect now (a request connects lazily otherwise); the daemon's ``hello``."""
        self._connection()
        assert self.hello is not None
        return self.hello

    def close(self) -> None:
        sock, self._sock = self._sock, None
        self.hello = None
        self._buffer = FrameBuffer()
        self._poll = None
        if sock is not None:
            sock.close()

    def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        long: bool = False,
        on_event: EventHandler | None = None,
        when: tuple[str, dict[str, Any]] | None = None,
    ) -> Any:
        """The result map of ``method``, or the :class:`RemoteError` the daemon answered.

        Sent again once on a fresh connection, when the first dropped after the request went
        out, only if the method is safe to resend (:data:`protocol.SAFE_TO_RESEND`).
        ``long``: waits at least :data:`LONG_CALL_MIN_TIMEOUT` between frames; ``on_event``:
        called with each event frame of this call (progress); ``when``: (feature, params)
        added to ``params`` if the daemon's hello lists the feature."""
        for attempt in (1, 2):
            sock = self._connection()
            self._just_opened = False
            req_id = next(self._ids)
            sent = params
            if when is not None and self.hello is not None:
                sent = with_feature(params, when, self.hello.get("features"))
            try:
                sock.sendall(protocol.pack(protocol.request(req_id, method, sent)))
            except OSError:
                # Nothing complete reached the daemon: safe to resend whatever the method.
                self.close()
                if attempt == 1:
                    continue
                raise ConnectionLost(
                    f"lost the connection to memoryd while sending `{method}`"
                ) from None
            wait = call_timeout(self.timeout, long)
            try:
                return self._receive(sock, req_id, method, wait, on_event)
            except _Dropped:
                self.close()
                if attempt == 1 and protocol.safe_to_resend(method):
                    continue
                raise ConnectionLost(lost_message(method)) from None
        raise AssertionError("unreachable")

    def _receive(
        self,
        sock: _socket.socket,
        req_id: int,
        method: str,
        wait: float | None,
        on_event: EventHandler | None,
    ) -> Any:
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            try:
                frame = self._next_frame(sock, deadline)
            except _TimedOut:
                raise ClientTimeout(timeout_message(method, wait)) from None
            fid = frame.get("id")
            if fid is None and frame.get("ok") is False:
                # A connection-level error (malformed or oversize frame): the daemon closes.
                self.close()
                raise RemoteError.from_wire(frame.get("error"))
            if fid != req_id:
                continue  # the late answer of a call that timed out earlier
            if is_event(frame):
                if on_event is not None:
                    on_event(frame)
                deadline = None if wait is None else time.monotonic() + wait
                continue
            return result_of(method, frame)

    def _next_frame(self, sock: _socket.socket, deadline: float | None) -> dict[str, Any]:
        while True:
            try:
                frame = self._buffer.next_frame()
            except protocol.FrameError as exc:
                self.close()
                raise ConnectionLost(f"unreadable answer from memoryd: {exc.message}") from None
            if frame is not None:
                return frame
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _TimedOut()
                sock.settimeout(remaining)
            else:
                sock.settimeout(None)
            try:
                data = sock.recv(_RECV_BYTES)
            except TimeoutError:
                raise _TimedOut() from None
            except OSError:
                raise _Dropped() from None
            if not data:
                raise _Dropped()
            self._buffer.feed(data)

    def _connection(self) -> _socket.socket:
        sock = self._sock
        if sock is not None and not self._just_opened:
            if self._poll is None or self._poll[0] is not sock:
                self._poll = (sock, _idle_poll(sock))
            if _is_closed_by_peer(sock, self._poll[1]):
                self.close()
        if self._sock is None:
            self._sock = self._open()
            self._just_opened = True
        return self._sock

    def _open(self) -> _socket.socket:
        try:
            return self._open_once()
        except DaemonNotRunning:
            if not self.autostart:
                raise
        # Imported here: subprocess is not worth loading for every memctl run.
        from memoryd_client._autostart import AUTOSTART_WAIT_S, POLL_INTERVAL_S, Starter

        starter = Starter(self.socket_path, self.explicit_socket)
        deadline = time.monotonic() + AUTOSTART_WAIT_S
        while True:
            time.sleep(POLL_INTERVAL_S)
            try:
                return self._open_once()
            except DaemonNotRunning:
                failure = starter.failure()
                if failure is not None:
                    raise failure from None
                if time.monotonic() > deadline:
                    raise starter.timed_out() from None

    def _open_once(self) -> _socket.socket:
        where = self.socket_path
        check_socket_path(where)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            try:
                sock.connect(os.fspath(where))
            except TimeoutError:
                raise ClientTimeout(
                    f"memoryd at {where} did not accept the connection within {self.timeout:g}s"
                ) from None
            except OSError as exc:
                raise connect_error(exc, where) from None
            self._sock, self._buffer = sock, FrameBuffer()
            req_id = next(self._ids)
            try:
                sock.sendall(protocol.pack(protocol.request(req_id, "hello", hello_params(self))))
                hello = self._receive(sock, req_id, "hello", self.timeout, None)
            except TimeoutError:
                raise ClientTimeout(
                    f"memoryd at {where} accepted the connection but did not answer "
                    f"hello within {self.timeout:g}s (a daemon that hangs: `memctl doctor`)"
                ) from None
            except (OSError, _Dropped):
                raise ConnectionLost(
                    f"memoryd at {where} closed the connection during hello"
                ) from None
            except RemoteError as exc:
                raise hello_error(exc, where) from None
            self.hello = check_hello(hello, where)
            return sock
        except BaseException:
            self._sock = None
            self.hello = None
            sock.close()
            raise


def hello_params(conn: Connection) -> dict[str, Any]:
    return {"client": conn.client_name, "protocol": protocol.PROTOCOL_VERSION}


def _idle_poll(sock: _socket.socket) -> Any:
    """A poll object with ``sock`` registered for reading (None where there is no poll, or
    the socket is closed: _is_closed_by_peer selects then)."""
    import select  # only when a connection is reused (not in a one-call process)

    make = getattr(select, "poll", None)
    if make is None:
        return None
    poll = make()
    try:
        poll.register(sock, select.POLLIN)
    except (OSError, ValueError):
        return None
    return poll


def _is_closed_by_peer(sock: _socket.socket, poll: Any = None) -> bool:
    """True when an idle connection was closed by the daemon (EOF or error pending);
    ``poll``: one with ``sock`` registered (_idle_poll), else a select."""
    try:
        if poll is not None:
            if not poll.poll(0):
                return False
        else:
            import select

            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
        return sock.recv(1, _socket.MSG_PEEK | _socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except (OSError, ValueError):
        return True


# ------------------------------------------------------------------ answers


def with_feature(
    params: dict[str, Any], when: tuple[str, dict[str, Any]] | None, features: Any
) -> dict[str, Any]:
    """``params``, with ``when``'s (feature, params) added when the daemon's hello lists the
    feature in ``features`` (a daemon that does not would refuse the params)."""
    if when is None or not isinstance(features, list) or when[0] not in features:
        return params
    return {**params, **when[1]}


def call_timeout(default: float | None, long: bool) -> float | None:
    """Seconds to wait for the next frame of a call (progress resets the clock)."""
    if default is None:
        return None
    return max(default, LONG_CALL_MIN_TIMEOUT) if long else default


def is_event(frame: dict[str, Any]) -> bool:
    return "event" in frame and "ok" not in frame


def result_of(method: str, frame: dict[str, Any]) -> Any:
    """The result map of a final response frame, or the RemoteError it carries."""
    ok = frame.get("ok")
    if ok is True:
        return frame.get("result")
    if ok is False:
        raise RemoteError.from_wire(frame.get("error"))
    raise BadResponse(f"malformed response to `{method}` from the daemon: {frame!r}")


def check_hello(result: Any, socket: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``hello`` map, when the daemon speaks our protocol version."""
    if not isinstance(result, dict):
        raise BadResponse(f"malformed hello result from the daemon: expected a map, got {result!r}")
    if result.get("protocol") != protocol.PROTOCOL_VERSION:
        raise ProtocolMismatch(result.get("protocol"), result.get("version", "unknown"), socket)
    return result


def hello_error(exc: RemoteError, socket: str | os.PathLike[str]) -> ClientError:
    """What a failed ``hello`` means: a daemon refusing our protocol version is a mismatch."""
    if exc.code == protocol.ErrorCode.PROTOCOL_ERROR and "supported" in exc.data:
        return ProtocolMismatch(exc.data.get("supported"), None, socket)
    return exc


def timeout_message(method: str, waited: float | None) -> str:
    return f"memoryd did not answer `{method}` within {waited or 0:g}s (is it overloaded or stuck?)"


def lost_message(method: str) -> str:
    if not protocol.safe_to_resend(method):
        return (
            f"lost the connection to memoryd after sending `{method}`: it may or may not "
            "have been carried out (for append: check the daily file before retrying; for "
            "jobs.run: `memctl jobs list` shows the last run)"
        )
    return f"lost the connection to memoryd while waiting for `{method}` (retried once)"


# ------------------------------------------------------------------ sockets


def check_socket_path(socket: str | os.PathLike[str]) -> None:
    problem = check_socket_path_length(socket)
    if problem:
        raise SocketUnusable(socket, problem)


def connect_error(exc: OSError, socket: str | os.PathLike[str]) -> ClientError:
    """The client error for a failed ``connect()`` to ``socket``."""
    if isinstance(exc, FileNotFoundError) or exc.errno == errno.ENOENT:
        return DaemonNotRunning(socket)
    if isinstance(exc, ConnectionRefusedError) or exc.errno == errno.ECONNREFUSED:
        try:  # Linux refuses a regular file the same way
            if not stat.S_ISSOCK(os.stat(socket).st_mode):
                return SocketUnusable(
                    socket, f"{socket} is not a socket: remove it or point MEMORYD_SOCKET elsewhere"
                )
        except OSError:
            pass
        return StaleSocket(socket)
    if isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM):
        return SocketUnusable(
            socket,
            f"permission denied connecting to {socket}: the socket belongs to another user "
            "(set MEMORYD_SOCKET to your own daemon's socket)",
        )
    if exc.errno == errno.ENOTDIR:
        return DaemonNotRunning(socket)
    return SocketUnusable(socket, f"cannot connect to memoryd at {socket}: {exc.strerror or exc}")


class FrameBuffer:
    """Bytes received so far, split into decoded frames (a partial frame waits for more).

    A timeout in the middle of a frame does not desynchronise the stream: the partial
    bytes simply stay here for the next read. An answer most often comes in one read that
    holds exactly its frame: it is decoded where it was received, with no copy (a search's
    7-8 kB answer was copied three times: into the buffer, out as a slice, into bytes).
    The frames taken are passed over by an offset, not cut off: cutting the rest off a
    read for each frame copied it, so a read of many small frames cost their count times
    its size.
    """

    def __init__(self, max_bytes: int = protocol.DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buf: bytes | bytearray = b""
        self._at = 0  # where the next frame starts in _buf
        self._max = max_bytes

    def feed(self, data: bytes) -> None:
        buf, at = self._buf, self._at
        if at == len(buf) and data.__class__ is bytes:
            self._buf, self._at = data, 0  # kept as received until its frames are taken
            return
        if buf.__class__ is bytearray:
            if at:
                del buf[:at]  # once per read, not per frame
        else:
            buf = bytearray(memoryview(buf)[at:])
        buf += data
        self._buf, self._at = buf, 0

    def next_frame(self) -> dict[str, Any] | None:
        buf, at = self._buf, self._at
        size = protocol.HEADER.size
        start = at + size
        if len(buf) < start:
            return None
        length = protocol.frame_length(bytes(buf[at:start]), self._max)
        end = start + length
        if len(buf) < end:
            return None
        if end == len(buf):
            self._buf, self._at = b"", 0  # all taken: nothing held
        else:
            self._at = end
        if buf.__class__ is bytearray:
            return protocol.unpack(buf[start:end])  # a copy: the bytearray changes later
        return protocol.unpack(memoryview(buf)[start:end])  # as received: read in place
