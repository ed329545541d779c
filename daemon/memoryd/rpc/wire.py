"""A connection's bytes as frames: parsed as they arrive, with back-pressure, no task per frame.

The event loop hands each read to ``data_received``; every whole frame in it is decoded and
given to the server at once (``Frames.on_frame``). A request so costs no reader task woken
and no future: what asyncio's StreamReader cost each one (about a quarter of a ``hello``'s
CPU in the daemon). Reading stops (``pause_reading``) while the connection runs
``max_in_flight`` requests or its unsent answers fill its budget, and goes on when one ends
or the peer reads (``room``): the kernel's socket buffer holds the rest, then the peer waits.

A body above LARGE_BODY_BYTES reserves its length first (reading paused meanwhile) and is
gathered in an anonymous mapping of its length (pages are used only as bytes arrive, and
unmapped at once after), never in a buffer that grows by reallocation: a peer that hung up
mid-frame once left a copy of what it had sent with the connection's exceptions, in
reference cycles until a full garbage collection (40 unfinished 16 MiB frames left the
daemon 100+ MB larger after their connections closed).

Reads land in one buffer per thread (the event loop's: ``asyncio.BufferedProtocol``), copied
out at once: asyncio's plain protocol path allocated a fresh 256 KiB ``bytes`` per read,
which the daemon's pinned mmap threshold (runtime/heap.py) made an mmap, an mremap and a
munmap per request.
"""

from __future__ import annotations

import asyncio
import mmap
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from memoryd_client import protocol
from memoryd_client.protocol import ErrorCode, FrameError

if TYPE_CHECKING:
    from memoryd.rpc.connection import Connection

HEADER_SIZE = protocol.HEADER.size
READ_BYTES = 256 * 1024  # the most one read takes (asyncio's own size for a read)


# A frame body above this reserves its length before it is read; smaller ones are covered
# by the in-flight cap (64 of them are a few MiB at most).
LARGE_BODY_BYTES = 64 * 1024


class _ReadBuffer(threading.local):
    """The buffer reads land in: one per thread, as each event loop runs in one thread and
    copies a read out before the next (``Wire.buffer_updated``)."""

    def __init__(self) -> None:
        self.view = memoryview(bytearray(READ_BYTES))


_READ = _ReadBuffer()


class Refusal(Exception):
    """A frame answered with an error, after which the connection is closed."""

    def __init__(
        self, code: str, message: str, req_id: int | None = None, data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.req_id = req_id
        self.data = data


class Frames(Protocol):
    """What the wire asks of the server."""

    @property
    def max_frame_bytes(self) -> int: ...

    def on_frame(self, conn: Connection, msg: dict[str, Any]) -> None:
        """Start the request of a decoded frame; raises Refusal for a bad one."""

    async def on_connection(self, wire: Wire) -> None:
        """Admit (or turn away) the connection, then serve it until ``wire.ended``."""


class Wire(asyncio.BufferedProtocol):
    def __init__(self, server: Frames) -> None:
        self.server = server
        self.conn: Connection | None = None  # set by the server once it admits the peer
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.lost = False
        self.stopped = False  # a bad frame or the end was seen: nothing more is decoded
        self.ended: asyncio.Future[Refusal | None] | None = None
        self.serving: asyncio.Task[None] | None = None  # the server's task for it
        self._reading_paused = False
        self._room_soon = False
        self._reserving: asyncio.Task[None] | None = None  # a large body's reservation
        self._body: mmap.mmap | None = None  # a large body being gathered...
        self._got = 0  # ...this much of it so far
        self._held = 0  # budget bytes the large body holds
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []

    # -- asyncio's callbacks -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        loop = asyncio.get_running_loop()
        self.ended = loop.create_future()
        self.serving = loop.create_task(self.server.on_connection(self))

    def get_buffer(self, sizehint: int) -> memoryview:
        return _READ.view

    def buffer_updated(self, nbytes: int) -> None:
        with _READ.view[:nbytes] as data:
            self.data_received(data)

    def data_received(self, data: bytes | memoryview) -> None:
        """The bytes read (only valid during the call: copied into ``buffer`` or a large
        body's mapping, never kept)."""
        if self.stopped:
            return
        if self._body is not None:
            data = self._gather(data)
        self.buffer += data
        self.process()

    def eof_received(self) -> bool:
        self.eof = True
        if self._body is not None and self.conn is not None:  # a large body cut short
            length = len(self._body)
            self._drop_body()
            self._truncated(self.conn, length)
        self.process()
        return True  # the answers to what was read still go out (a half-closed peer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.eof = True
        self._drop_body()
        if self._reserving is not None:
            self._reserving.cancel()
        for fut in self._drain_waiters:
            if not fut.done():
                fut.set_exception(ConnectionResetError("connection lost"))
        self._drain_waiters.clear()
        self._end(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        for fut in self._drain_waiters:
            if not fut.done():
                fut.set_result(None)
        self._drain_waiters.clear()

    async def drain(self) -> None:
        """Until the transport's buffer is below its high-water mark (StreamWriter.drain)."""
        if self.transport is not None and self.transport.is_closing():
            await asyncio.sleep(0)  # let connection_lost run first
        if self.lost:
            raise ConnectionResetError("connection lost")
        if not self._write_paused:
            return
        fut = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(fut)
        await fut

    # -- frames ------------------------------------------------------------------------

    def admit(self, conn: Connection) -> None:
        """The server let the peer in: decode what came meanwhile, and what comes."""
        self.conn = conn
        self.process()

    def room(self) -> None:
        """A request ended or the peer read answers: reading may go on (from the loop's
        next turn: this is called from inside a frame's handling too)."""
        if (self._reading_paused or (self.eof and not self.stopped)) and not self._room_soon:
            self._room_soon = True
            asyncio.get_running_loop().call_soon(self._room_now)

    def _room_now(self) -> None:
        self._room_soon = False
        self.process()

    def process(self) -> None:
        """Start the request of every whole frame buffered, while the connection has room."""
        conn = self.conn
        if conn is None or self.stopped or self._reserving is not None or self._body is not None:
            return
        try:
            while True:
                if len(conn.tasks) >= conn.max_in_flight or not conn.budget.below_limit():
                    self._pause()  # back-pressure: room() goes on
                    return
                buf = self.buffer
                if len(buf) < HEADER_SIZE:
                    if self.eof:
                        if buf and not conn.closed:
                            raise Refusal(ErrorCode.PROTOCOL_ERROR, "truncated frame header")
                        self._end(None)
                    else:
                        self._resume()
                    return
                conn.last_progress = time.monotonic()
                header = bytes(buf[:HEADER_SIZE])
                length = protocol.frame_length(header, self.server.max_frame_bytes)
                if length > LARGE_BODY_BYTES:
                    del buf[:HEADER_SIZE]
                    self._reserve(conn, length)
                    return
                end = HEADER_SIZE + length
                if len(buf) < end:
                    if self.eof:
                        self._truncated(conn, length)
                    else:
                        self._resume()
                    return
                msg = protocol.unpack(buf[HEADER_SIZE:end])  # one copy, not two
                del buf[:end]
                conn.last_progress = time.monotonic()
                self.server.on_frame(conn, msg)
        except FrameError as exc:
            self._end(Refusal(exc.code, exc.message))
        except Refusal as exc:
            self._end(exc)

    def _truncated(self, conn: Connection, length: int) -> None:
        if conn.closed:
            self._end(None)
        else:
            why = f"truncated frame: expected {length} bytes"
            self._end(Refusal(ErrorCode.PROTOCOL_ERROR, why))

    def _end(self, refusal: Refusal | None) -> None:
        self.stopped = True
        self.buffer.clear()
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(refusal)

    def stop(self) -> None:
        """The connection is done: no reservation left waiting, no body held."""
        self.stopped = True
        if self._reserving is not None:
            self._reserving.cancel()
        self._drop_body()

    def _pause(self) -> None:
        if not self._reading_paused and self.transport is not None and not self.eof:
            self.transport.pause_reading()
            self._reading_paused = True

    def _resume(self) -> None:
        if self._reading_paused and self.transport is not None:
            self.transport.resume_reading()
        self._reading_paused = False

    # -- a large body ------------------------------------------------------------------

    def _reserve(self, conn: Connection, length: int) -> None:
        """Reading paused until ``length`` fits the budgets, then gathered (``_gather``)."""
        self._pause()
        self._reserving = asyncio.get_running_loop().create_task(self._reserved(conn, length))

    async def _reserved(self, conn: Connection, length: int) -> None:
        conn.computing += 1  # reserve() counts its wait as idle time
        try:
            await conn.reserve(length)
        finally:
            conn.computing -= 1
        self._reserving = None
        self._held = length
        if self.stopped or self.lost:
            conn.release(self._held)
            self._held = 0
            return
        self._body = mmap.mmap(-1, length)
        self._got = 0
        rest = self._gather(bytes(self.buffer))
        self.buffer = bytearray(rest)
        if self._body is not None:  # not all of it yet
            if self.eof:
                self._drop_body()
                self._truncated(conn, length)
            else:
                self._resume()
            return
        self.process()

    def _gather(self, data: bytes | memoryview) -> bytes | memoryview:
        """Copy what ``data`` holds of the large body; the bytes after it (the next frames)
        are returned. The body complete, its request starts."""
        body, conn = self._body, self.conn
        assert body is not None and conn is not None
        take = min(len(data), len(body) - self._got)
        body[self._got : self._got + take] = data[:take]
        self._got += take
        if self._got < len(body):
            return b""
        try:
            with memoryview(body) as view:
                msg = protocol.unpack(view)
        except FrameError as exc:
            self._drop_body()
            self._end(Refusal(exc.code, exc.message))
            return b""
        self._drop_body()
        conn.last_progress = time.monotonic()
        try:
            self.server.on_frame(conn, msg)
        except Refusal as exc:
            self._end(exc)
            return b""
        return data[take:]

    def _drop_body(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None
        if self._held and self.conn is not None:
            self.conn.release(self._held)
        self._held = 0
