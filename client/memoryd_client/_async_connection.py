"""The asyncio client's connection: many concurrent calls pipelined on one socket.

One reader task owns the socket's read side and routes every frame by its request id:
answers may come back out of order, and each call's progress events reach that call's own
``on_progress`` (a plain function or a coroutine function). The behaviour is the blocking
connection's (:mod:`memoryd_client._connection`): ``hello`` first, a dropped connection is
reconnected once and calls safe to resend are resent (not ``append``), timeouts leave the
connection usable, ``autostart`` starts ``memoryd run`` when no daemon answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import os
from pathlib import Path
from typing import Any, TypeVar

from memoryd_client import _calls, _connection, protocol
from memoryd_client._autostart import AUTOSTART_WAIT_S, POLL_INTERVAL_S, Starter
from memoryd_client._calls import Call
from memoryd_client.errors import (
    ClientTimeout,
    ConnectionLost,
    DaemonNotRunning,
    RemoteError,
)
from memoryd_client.types import Hello

T = TypeVar("T")

_DROPPED = object()  # queued to every waiting call when the connection ends


class _Dropped(Exception):
    pass


class _SendFailed(Exception):
    pass


class _Socket:
    """One socket: a write lock, and a reader task dispatching frames to waiting calls."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.pending: dict[int, asyncio.Queue[Any]] = {}
        self.closed = False
        self._write_lock = asyncio.Lock()
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    @property
    def usable(self) -> bool:
        return not (self.closed or self.reader.at_eof() or self.writer.is_closing())

    async def _read_loop(self) -> None:
        try:
            while True:
                header = await self.reader.readexactly(protocol.HEADER.size)
                body = await self.reader.readexactly(protocol.frame_length(header))
                frame = protocol.unpack(body)
                fid = frame.get("id")
                if fid is None and frame.get("ok") is False:
                    # A connection-level error: every waiting call gets it, the daemon closes.
                    for queue in self.pending.values():
                        queue.put_nowait(frame)
                    break
                waiting = self.pending.get(fid) if isinstance(fid, int) else None
                if waiting is not None:
                    waiting.put_nowait(frame)
                # else: the late answer of a call that timed out; dropped.
        except (asyncio.IncompleteReadError, OSError, protocol.FrameError):
            pass
        finally:
            self.closed = True
            for queue in self.pending.values():
                queue.put_nowait(_DROPPED)
            self.writer.close()

    async def send(self, data: bytes) -> None:
        if not self.usable:
            raise _SendFailed()
        try:
            async with self._write_lock:
                self.writer.write(data)
                await self.writer.drain()
        except (OSError, RuntimeError):
            raise _SendFailed() from None

    async def close(self) -> None:
        self.closed = True
        self._task.cancel()
        self.writer.close()
        with contextlib.suppress(BaseException):
            await self._task
        with contextlib.suppress(OSError, RuntimeError):
            await self.writer.wait_closed()


class AsyncConnection:
    """The client's connection: opened on first use (with ``hello``), reopened when the
    daemon closed it; :meth:`run` sends a call and reads its answer into its result."""

    def __init__(
        self,
        socket_path: Path,
        *,
        explicit_socket: bool,
        timeout: float | None,
        autostart: bool,
        client_name: str,
    ) -> None:
        self.socket_path = socket_path
        self.explicit_socket = explicit_socket
        self.timeout = timeout
        self.autostart = autostart
        self.client_name = client_name
        self.hello: Hello | None = None  # the daemon's, on the current socket
        self._socket: _Socket | None = None
        self._connect_lock: asyncio.Lock | None = None
        self._ids = itertools.count(1)

    @property
    def connected(self) -> bool:
        return self._socket is not None and self._socket.usable

    async def open(self) -> None:
        await self._current()

    async def close(self) -> None:
        socket, self._socket = self._socket, None
        self.hello = None
        if socket is not None:
            await socket.close()

    async def run(self, call: Call[T]) -> T:
        for attempt in (1, 2):
            conn = await self._current()
            try:
                return await self._roundtrip(conn, call)
            except _SendFailed:
                await self._discard(conn)
                if attempt == 1:
                    continue
                raise ConnectionLost(
                    f"lost the connection to memoryd while sending `{call.method}`"
                ) from None
            except _Dropped:
                await self._discard(conn)
                if attempt == 1 and protocol.safe_to_resend(call.method):
                    continue
                lost = _connection.lost_message(call.method)
                raise ConnectionLost(lost) from None
        raise AssertionError("unreachable")

    async def _roundtrip(self, conn: _Socket, call: Call[T]) -> T:
        req_id = next(self._ids)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        conn.pending[req_id] = queue
        try:
            params = call.params
            if call.when is not None and self.hello is not None:
                params = _connection.with_feature(params, call.when, self.hello.raw.get("features"))
            await conn.send(protocol.pack(protocol.request(req_id, call.method, params)))
            wait = call.timeout(self.timeout)
            while True:
                try:
                    # Not wait_for: on 3.11 it wraps get() in a task, one more loop pass
                    # per answer.
                    async with asyncio.timeout(wait):
                        item = await queue.get()
                except TimeoutError:
                    raise ClientTimeout(_connection.timeout_message(call.method, wait)) from None
                if item is _DROPPED:
                    raise _Dropped()
                if _connection.is_event(item):
                    progress = _calls.progress_of(item)
                    if progress is not None and call.on_progress is not None:
                        outcome = call.on_progress(progress)
                        if inspect.isawaitable(outcome):
                            await outcome
                    continue
                return _calls.result_of(call, item)
        finally:
            conn.pending.pop(req_id, None)

    async def _discard(self, conn: _Socket) -> None:
        if self._socket is conn:
            self._socket = None
            self.hello = None
        await conn.close()

    async def _current(self) -> _Socket:
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            if self._socket is not None and not self._socket.usable:
                await self._discard(self._socket)
            if self._socket is None:
                self._socket = await self._open()
            return self._socket

    async def _open(self) -> _Socket:
        try:
            return await self._open_once()
        except DaemonNotRunning:
            if not self.autostart:
                raise
        starter = Starter(self.socket_path, self.explicit_socket)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + AUTOSTART_WAIT_S
        while True:
            await asyncio.sleep(POLL_INTERVAL_S)
            try:
                return await self._open_once()
            except DaemonNotRunning:
                failure = starter.failure()
                if failure is not None:
                    raise failure from None
                if loop.time() > deadline:
                    raise starter.timed_out() from None

    async def _open_once(self) -> _Socket:
        _connection.check_socket_path(self.socket_path)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(os.fspath(self.socket_path)),
                self.timeout,
            )
        except TimeoutError:
            raise ClientTimeout(
                f"memoryd at {self.socket_path} did not accept the connection within "
                f"{self.timeout or 0:g}s"
            ) from None
        except OSError as exc:
            raise _connection.connect_error(exc, self.socket_path) from None
        conn = _Socket(reader, writer)
        try:
            hello = await self._roundtrip(conn, _calls.hello(self.client_name))
        except (_Dropped, _SendFailed):
            await conn.close()
            raise ConnectionLost(
                f"memoryd at {self.socket_path} closed the connection during hello"
            ) from None
        except RemoteError as exc:
            await conn.close()
            raise _connection.hello_error(exc, self.socket_path) from None
        except BaseException:
            await conn.close()
            raise
        try:
            self.hello = _calls.check_hello(hello, self.socket_path)
        except BaseException:
            await conn.close()
            raise
        return conn
