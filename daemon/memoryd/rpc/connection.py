"""One client's connection to the socket server (server.py): its limits, its byte budget
(budget.py) and requests in flight, and writing whole frames (its frames are read by
wire.py)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.records import Record
from memoryd.rpc.budget import ByteBudget

if TYPE_CHECKING:
    from collections.abc import Callable
    from dataclasses import dataclass as frozen_record  # records.py says why
else:
    from memoryd.records import frozen_record

MAX_IN_FLIGHT_PER_CONNECTION = 64
MiB = 1024 * 1024


class ReadSide(Protocol):
    """What a connection asks of the protocol reading its frames (wire.Wire): the
    transport, reading again once there is room, and waiting for the socket to drain."""

    transport: asyncio.Transport | None

    def room(self) -> None: ...

    async def drain(self) -> None: ...


@frozen_record(frozen=True, eq=False, repr=False)
class Limits(Record):
    """What a connection and all of them together may hold (the server's limits, from [server])."""

    max_frame_bytes: int
    max_in_flight: int = MAX_IN_FLIGHT_PER_CONNECTION  # requests per connection
    max_connections: int = 1000
    connection_bytes: int = 32 * MiB  # unsent answers + large bodies, per connection
    total_bytes: int = 256 * MiB  # the same, all connections together
    idle_timeout: float = 300.0  # seconds without progress before a connection is closed; 0: never


class Connection:
    """One client's connection: its transport, its byte budget and its requests in flight."""

    def __init__(
        self, wire: ReadSide, peer_pid: int | None, limits: Limits, total: ByteBudget
    ) -> None:
        assert wire.transport is not None
        self.wire = wire  # its bytes as frames (wire.py)
        self.transport = wire.transport
        self.peer_pid = peer_pid
        self.lock = asyncio.Lock()
        self.max_in_flight = limits.max_in_flight  # requests at once; no frame read beyond
        self.budget = ByteBudget(limits.connection_bytes)
        self.total = total  # the daemon's, shared by every connection
        self.tasks: set[asyncio.Task[None]] = set()
        self.serving: asyncio.Task[Any] | None = None  # the task serving this connection
        self.client = ""  # the name its hello gave (what usage counts an agent by, by default)
        self.closed = False
        self.aborted = False  # closed by us for want of progress: pending answers are dropped
        self.computing = 0  # requests being worked on (not waiting for budget or the peer)
        self.last_progress = time.monotonic()
        self._last_buffered = 0

    def write_nowait(self, frame: bytes) -> None:
        """Queue a whole frame; frames never interleave because each is one write() call."""
        if not self.closed and not self.transport.is_closing():
            self.transport.write(frame)

    async def reserve(self, nbytes: int) -> None:
        """Room for ``nbytes`` in this connection's budget, then in the daemon's."""
        self.computing -= 1  # waiting for room is not work: the idle check may close us
        try:
            await self.budget.acquire(nbytes)
            try:
                await self.total.acquire(nbytes)
            except BaseException:
                self.budget.release(nbytes)
                raise
        finally:
            self.computing += 1

    def charge(self, nbytes: int) -> None:
        self.budget.charge(nbytes)
        self.total.charge(nbytes)

    def release(self, nbytes: int) -> None:
        if nbytes:
            self.budget.release(nbytes)
            self.total.release(nbytes)
            self.wire.room()  # reading may have stopped for want of budget

    async def send(
        self, frame: bytes, held: int = 0, written: Callable[[], None] | None = None
    ) -> None:
        """Queue a whole frame; the ``held`` budget bytes are released once the peer has
        taken it (all but the transport's low-water mark of it). ``written`` is called once
        the frame is written, or before this waits (for an earlier frame, or the peer)."""
        try:
            if not self.lock.locked() and not self.closed and not self.transport.is_closing():
                self.transport.write(frame)
                if written is not None:
                    then: Callable[[], None] = written
                    written = None
                    then()
                if not self.transport.get_write_buffer_size():
                    self.last_progress = time.monotonic()
                    return  # the kernel took all of it (the usual case): nothing to drain
                frame = b""  # queued; what is left is waiting for the peer to read it
            if written is not None:  # before a wait: not in flight meanwhile
                then = written
                written = None
                then()
            async with self.lock:
                if self.closed or self.transport.is_closing():
                    return
                if frame:
                    self.transport.write(frame)
                with contextlib.suppress(ConnectionError, OSError):
                    await self.wire.drain()
                self.last_progress = time.monotonic()
        finally:
            if written is not None:  # an error before it came to that
                written()
            self.release(held)

    def idle_for(self, now: float) -> float:
        """Seconds without progress: no frame read, no byte taken by the peer, no request
        being worked on."""
        buffered = self.transport.get_write_buffer_size()
        if buffered != self._last_buffered or self.computing > 0:
            self._last_buffered = buffered
            self.last_progress = now
        return now - self.last_progress

    def abort(self) -> None:
        """Close without flushing (the peer is not reading) and stop its reader."""
        self.aborted = True
        self.closed = True
        self.transport.abort()
        if self.serving is not None:
            self.serving.cancel()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.transport.close()
