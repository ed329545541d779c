"""The socket server: frames in, concurrent dispatch, frames out, graceful shutdown.

Per connection: check the peer's uid, then read frames. A bad frame is answered
(``protocol_error`` / ``too_large``) and that connection closed; everything else carries
on. Each request starts at once, in the read that brought it; one that waits goes on as its
own task, so pipelined requests are served concurrently and answered in completion order,
each response carrying its request id.

Memory is bounded by back-pressure (connection.py, budget.py), never by buffering: at most
``Limits.max_in_flight`` requests of one connection run at once, and no further frame is
read from a connection whose unsent answers fill its byte budget; a request about to build
a large answer (a whole file) reserves its size first, and a large frame body reserves its
length before it is read, from the connection's budget and the daemon's. So a client that
pipelines without reading its answers, or sends huge frames it never finishes, holds at
most its budget. At ``max_connections`` the connection idle longest makes room for a new
one (told so and closed only when all are busy); one that shows no progress either way
for ``idle_timeout`` seconds is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

import msgpack

from memoryd.records import Fields, Record
from memoryd.rpc.budget import ByteBudget
from memoryd.rpc.connection import Connection, Limits
from memoryd.rpc.params import shown
from memoryd.rpc.peer import peer_credentials
from memoryd.rpc.wire import Refusal, Wire
from memoryd.runtime.eager import start_eagerly
from memoryd.runtime.foreground import FOREGROUND
from memoryd.runtime.logs import debug_enabled, get_logger
from memoryd_client import protocol
from memoryd_client.protocol import ErrorCode

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as fields_record
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import fields_record, frozen_record

try:  # _compiled_pack.c: an answer's frame in one pass; absent if not built
    from memoryd.index._compiled import pack_frame
except ImportError:  # pragma: no cover - a build without a compiler
    pack_frame = None  # type: ignore[assignment]

log = get_logger("memoryd.rpc.server")
# Answers that are the daemon's fault or trouble, not the caller's mistake.
_OUR_FAILURES = frozenset({ErrorCode.INTERNAL, ErrorCode.UNAVAILABLE, ErrorCode.TOO_LARGE})
# The request line's own keys (and structlog's): a handler's log field never takes one.
_REQUEST_KEYS = frozenset({"event", "method", "id", "ms", "result", "peer_pid", "level"})

Emit = Callable[[str, dict[str, Any]], None]
# Answered in milliseconds from what is in memory: background threads step aside while one
# runs (runtime/foreground.py), until its answer is written. Not the ones that wait
# (reindex, a first index, jobs): they would slow what they wait for.
QUICK_METHODS = frozenset({"hello", "search", "get", "recall", "status", "workspace.list"})
# Answers are packed on the event loop's thread only: one packer, not one (and its 1 MiB
# buffer) per answer. The same bytes as protocol.pack.
_PACKER = msgpack.Packer(use_bin_type=True)


def _pack(message: dict[str, Any]) -> bytes:
    """protocol.pack(message): compiled (the same bytes, a third of msgpack's instructions
    for a search's answer: no per-object dispatch, no copy to add the header) unless the
    message holds what only msgpack packs (or raises for)."""
    frame = pack_frame(message) if pack_frame is not None else None
    if frame is not None:
        return frame
    body = _PACKER.pack(message)
    return protocol.HEADER.pack(len(body)) + body


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Request(Fields):
    """One request read from a connection, as its handler gets it."""

    id: int
    method: str
    params: Any  # a map when well-formed; the dispatcher refuses anything else
    emit: Emit  # sends an event frame (e.g. progress) for this request, before its response
    log_fields: dict[str, Any] = field(default_factory=dict)  # handlers add e.g. workspace
    conn: Connection | None = None
    reserved: int = 0  # budget bytes reserved for the answer (released once it is sent)

    async def reserve(self, nbytes: int) -> None:
        """Before building an answer of about ``nbytes`` (a file's text): wait until this
        connection and the daemon have room, so a peer that does not read its answers
        makes its own requests wait instead of growing the daemon's memory."""
        if self.conn is not None and nbytes > 0:
            await self.conn.reserve(nbytes)
            self.reserved += nbytes


@frozen_record(frozen=True, eq=False, repr=False)
class Outcome(Record):
    """A request's answer and the code its log line records."""

    message: dict[str, Any]  # the response or error map
    code: str  # "ok" or the error code, for the request log line


Dispatch = Callable[[Request], Awaitable[Outcome]]


def unpackable(req: Request, exc: Exception) -> Outcome:
    """An ``internal`` error for an answer msgpack could not pack (a str that is not UTF-8,
    an object it does not know): the client hears why at once instead of waiting out its
    timeout for an answer that was never sent."""
    log.error("answer_not_packable", method=req.method, id=req.id, error=repr(exc)[:300])
    return Outcome(
        protocol.error(
            req.id,
            ErrorCode.INTERNAL,
            f"internal error in {req.method}: its answer could not be encoded "
            f"({type(exc).__name__})",
        ),
        ErrorCode.INTERNAL,
    )


class Server:
    def __init__(self, dispatch: Dispatch, limits: Limits) -> None:
        self.dispatch = dispatch
        self.limits = limits
        self.shutting_down = False
        self.total = ByteBudget(limits.total_bytes)
        self._server: asyncio.AbstractServer | None = None
        self._conns: set[Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._conn_tasks: set[asyncio.Task[None]] = set()
        self._reaper: asyncio.Task[None] | None = None
        self._uid = os.geteuid()
        # the loop it serves on (start): asyncio.get_running_loop() asks the kernel for the
        # process id each time, a system call per request
        self._loop: asyncio.AbstractEventLoop | None = None
        self.refused_connections = 0  # beyond max_connections, since start
        self.idle_closed = 0

    @property
    def max_frame_bytes(self) -> int:
        return self.limits.max_frame_bytes

    def set_limits(self, limits: Limits) -> None:
        """After a reload: new connections get the new limits; the total budget follows."""
        self.limits = limits
        self.total.limit = limits.total_bytes

    async def start(self, sock: socket.socket) -> None:
        """Serve on an already bound and listening socket (instance.py made it, or the
        service manager passed it)."""
        loop = self._loop = asyncio.get_running_loop()
        if sys.version_info >= (3, 13):
            # 3.13 unlinks the socket file on close by default. Instance decides that: never
            # for a socket the service manager owns, only for the inode we bound.
            self._server = await loop.create_unix_server(
                lambda: Wire(self), sock=sock, cleanup_socket=False
            )
        else:
            self._server = await loop.create_unix_server(lambda: Wire(self), sock=sock)
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._close_idle(), name="memoryd-idle-connections")

    async def serve_instead(self, sock: socket.socket) -> None:
        """Listen on ``sock`` from now on (the old socket's file was deleted); connections
        already open carry on."""
        old = self._server
        await self.start(sock)
        if old is not None:
            old.close()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    @property
    def connections(self) -> int:
        return len(self._conns)

    @property
    def held_bytes(self) -> int:
        """Bytes of unsent answers and large bodies being read, all connections."""
        return self.total.used

    def stats(self) -> dict[str, Any]:
        return {
            "connections": len(self._conns),
            "max_connections": self.limits.max_connections,
            "in_flight": len(self._tasks),
            "held_bytes": self.total.used,
            "refused_connections": self.refused_connections,
            "idle_closed": self.idle_closed,
        }

    # -- connections -------------------------------------------------------------------

    async def on_connection(self, wire: Wire) -> None:
        """Serve one connection (wire.py calls this as it is made)."""
        task = asyncio.current_task()
        if task is not None:
            self._conn_tasks.add(task)
        try:
            await self._serve_connection(wire)
        except asyncio.CancelledError:
            pass  # close() cancels idle connections at shutdown, abort() a stuck one
        finally:
            if task is not None:
                self._conn_tasks.discard(task)

    async def _serve_connection(self, wire: Wire) -> None:
        assert wire.transport is not None and wire.ended is not None
        sock = wire.transport.get_extra_info("socket")
        creds = peer_credentials(sock) if sock is not None else None
        conn = Connection(wire, creds.pid if creds else None, self.limits, self.total)
        conn.serving = asyncio.current_task()
        try:
            if creds is None:  # fail closed: a peer we cannot identify is not let in
                log.warning("peer_refused", reason="peer credentials unavailable")
                why = "connection refused: the daemon cannot verify who is connecting"
                return await self._turn_away(conn, ErrorCode.PROTOCOL_ERROR, why)
            if creds.uid != self._uid:
                log.warning(
                    "peer_refused", peer_uid=creds.uid, peer_pid=creds.pid, reason="foreign uid"
                )
                why = f"connections from uid {creds.uid} are refused: this daemon serves uid "
                return await self._turn_away(
                    conn, ErrorCode.PROTOCOL_ERROR, f"{why}{self._uid} only"
                )
            if len(self._conns) >= self.limits.max_connections and not self._make_room():
                self.refused_connections += 1
                log.warning(
                    "connection_refused",
                    reason="too many connections, each with a request in flight",
                    max_connections=self.limits.max_connections,
                )
                why = (
                    f"memoryd serves at most {self.limits.max_connections} connections at "
                    "once (server.max_connections), all busy now; try again later"
                )
                return await self._turn_away(conn, ErrorCode.UNAVAILABLE, why)
            self._conns.add(conn)
            await self._serve_frames(wire, conn)
        finally:
            wire.stop()

    async def _serve_frames(self, wire: Wire, conn: Connection) -> None:
        """Until the end of stream or the first bad frame (wire.py reads the frames)."""
        assert wire.ended is not None
        try:
            wire.admit(conn)
            bad = await wire.ended
            if bad is not None:
                await self._refuse(conn, bad.code, bad.message, bad.req_id, bad.data)
        except (ConnectionError, OSError):
            pass
        finally:
            try:
                # Requests read before the end of stream (or before a bad frame) are still
                # answered: a peer may half-close after pipelining. A connection closed for
                # want of progress drops them (they only wait for budget or the peer).
                if conn.aborted:
                    for t in conn.tasks:
                        t.cancel()
                if conn.tasks:
                    await asyncio.gather(*conn.tasks, return_exceptions=True)
            finally:
                conn.close()
                self._conns.discard(conn)

    @staticmethod
    async def _turn_away(conn: Connection, code: str, message: str) -> None:
        await conn.send(protocol.pack(protocol.error(None, code, message)))
        conn.close()

    def _make_room(self) -> bool:
        """At the cap, close the connection idle longest (no request in flight) so that a
        new agent is served at once, not after the idle timeout; False when all are busy.
        Its client reconnects on its next call, as after the idle timeout."""
        now = time.monotonic()
        idle = [c for c in self._conns if not c.closed and not c.tasks and not c.computing]
        if not idle:
            return False
        oldest = max(idle, key=lambda c: c.idle_for(now))
        self.idle_closed += 1
        log.warning(  # a warning: a flood of new clients is written a few times, then counted
            "connection_closed_idle",
            reason="connection cap reached",
            peer_pid=oldest.peer_pid,
        )
        oldest.abort()
        self._conns.discard(oldest)
        return True

    def on_frame(self, conn: Connection, msg: dict[str, Any]) -> None:
        """Start the request of a decoded frame (wire.py, with room for it): at once, so one
        that does not wait (a search in memory) is answered within this read; one that waits
        goes on as a task (runtime/eager.py)."""
        req = self._parse(msg, conn)
        task = start_eagerly(self._handle(conn, req), self._loop or asyncio.get_running_loop())
        if task is None:
            return  # answered
        conn.tasks.add(task)
        self._tasks.add(task)

        def finished(task: asyncio.Task[None]) -> None:
            conn.tasks.discard(task)
            self._tasks.discard(task)
            conn.wire.room()  # reading may have stopped at max_in_flight

        task.add_done_callback(finished)

    async def _refuse(
        self,
        conn: Connection,
        code: str,
        message: str,
        req_id: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        log.warning("bad_frame", code=code, detail=message, peer_pid=conn.peer_pid)
        # The requests read before the bad frame are answered before it: a client takes an
        # error with no id as the end of the connection and would lose those answers.
        if conn.tasks:
            await asyncio.gather(*list(conn.tasks), return_exceptions=True)
        await conn.send(protocol.pack(protocol.error(req_id, code, message, data)))

    def _parse(self, msg: dict[str, Any], conn: Connection) -> Request:
        req_id = msg.get("id")
        if isinstance(req_id, bool) or not isinstance(req_id, int):
            raise Refusal(ErrorCode.PROTOCOL_ERROR, "a request needs an integer id")
        method = msg.get("method")
        if not isinstance(method, str):
            raise Refusal(ErrorCode.PROTOCOL_ERROR, "a request needs a string method", req_id)
        version = msg.get("v", protocol.PROTOCOL_VERSION)
        if version != protocol.PROTOCOL_VERSION:
            raise Refusal(
                ErrorCode.PROTOCOL_ERROR,
                f"protocol version {shown(version)} is not supported",
                req_id,
                {"supported": [protocol.PROTOCOL_VERSION]},
            )
        params = msg.get("params")
        if params is None:
            params = {}

        def emit(name: str, data: dict[str, Any]) -> None:
            conn.write_nowait(protocol.pack(protocol.event(req_id, name, data)))

        return Request(id=req_id, method=method, params=params, emit=emit, conn=conn)

    # -- requests ----------------------------------------------------------------------

    async def _handle(self, conn: Connection, req: Request) -> None:
        # A quick request ends once its answer is written (Connection.send calls ``end``
        # there, or before it waits for the peer), in the step that answers: not by a
        # callback on the loop's next turn, a turn of its own (and a poll of the sockets)
        # for every request. A background thread woken before the write would take the
        # lock at the send and hold it while the answer is finished.
        end = FOREGROUND.end if req.method in QUICK_METHODS else None
        if end is not None:
            FOREGROUND.begin()
        try:
            started = time.perf_counter()
            if self.shutting_down:
                outcome = Outcome(
                    protocol.error(req.id, ErrorCode.SHUTTING_DOWN, "the daemon is shutting down"),
                    ErrorCode.SHUTTING_DOWN,
                )
            else:
                conn.computing += 1
                try:
                    outcome = await self.dispatch(req)
                except BaseException as exc:
                    conn.release(req.reserved)
                    if not isinstance(exc, asyncio.CancelledError):
                        raise
                    if conn.aborted:
                        self._log_request(conn, req, "connection_closed", started)
                        raise
                    # Forced shutdown: still tell the client why, without waiting on it.
                    conn.write_nowait(
                        protocol.pack(
                            protocol.error(
                                req.id,
                                ErrorCode.SHUTTING_DOWN,
                                "the daemon shut down during the request",
                            )
                        )
                    )
                    self._log_request(conn, req, ErrorCode.SHUTTING_DOWN, started)
                    raise
                finally:
                    conn.computing -= 1
            try:
                frame = _pack(outcome.message)
            except Exception as exc:  # a value msgpack refuses: an error answer, never silence
                outcome = unpackable(req, exc)
                frame = protocol.pack(outcome.message)
            code = outcome.code
            if len(frame) - protocol.HEADER.size > self.max_frame_bytes:
                code = ErrorCode.TOO_LARGE
                frame = protocol.pack(
                    protocol.error(
                        req.id,
                        code,
                        f"the response ({len(frame)} bytes) exceeds the frame limit "
                        f"of {self.max_frame_bytes}; ask for less (e.g. get with lines)",
                    )
                )
            # What the answer holds beyond its reservation is charged as it is: it exists.
            conn.charge(len(frame))
            conn.release(req.reserved)
            # Logged before the answer leaves, so a client never sees an answer whose log
            # line is not written yet; the write itself only queues bytes.
            self._log_request(conn, req, code, started)
            written, end = end, None
            await conn.send(frame, len(frame), written)
        finally:
            if end is not None:  # no answer written
                end()

    @staticmethod
    def _log_request(conn: Connection, req: Request, code: str, started: float) -> None:
        # One line per request is debug: thousands a minute under load would drown the
        # journal. A refused request is info (the caller got the reason already); only
        # our own failures warn.
        if code == "ok" and not debug_enabled():
            return  # nothing built for a line nobody writes
        ms = round((time.perf_counter() - started) * 1000, 3)
        emit = log.debug if code == "ok" else log.warning if code in _OUR_FAILURES else log.info
        fields = {
            # A handler's field named like one of the line's own (event, method, ...) is
            # kept under another name: a clash would raise here and the answer never leave.
            (f"{k}_" if k in _REQUEST_KEYS else k): v
            for k, v in req.log_fields.items()
        }
        emit(
            "request",
            method=req.method,
            id=req.id,
            ms=ms,
            result=code,
            peer_pid=conn.peer_pid,
            **fields,
        )

    # -- shutdown ----------------------------------------------------------------------

    def stop_accepting(self) -> None:
        """Refuse new connections and answer new requests with ``shutting_down``."""
        self.shutting_down = True
        if self._server is not None:
            self._server.close()

    async def drain(self, timeout: float, force: asyncio.Event | None = None) -> int:
        """Wait for in-flight requests up to ``timeout`` (or until ``force``), then cancel.

        Returns how many requests had to be cancelled.
        """
        pending = set(self._tasks)
        if pending:
            waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(asyncio.wait(pending))}
            forced = asyncio.ensure_future(force.wait()) if force is not None else None
            if forced is not None:
                waiters.add(forced)
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for w in waiters:
                w.cancel()
        leftover = [t for t in self._tasks if not t.done()]
        for t in leftover:
            t.cancel()
        if leftover:
            await asyncio.wait(leftover, timeout=1.0)
        return len(leftover)

    async def _close_idle(self) -> None:
        """Close connections that showed no progress for ``idle_timeout`` seconds: an idle
        client holds a file descriptor, a peer that stopped reading holds its budget."""
        while True:
            timeout = self.limits.idle_timeout
            await asyncio.sleep(min(max(timeout / 4, 0.05), 5.0) if timeout else 5.0)
            if not timeout:
                continue
            now = time.monotonic()
            for conn in list(self._conns):
                if not conn.closed and conn.idle_for(now) > timeout:
                    self.idle_closed += 1
                    log.info(
                        "connection_closed_idle",
                        idle_timeout=timeout,
                        peer_pid=conn.peer_pid,
                        unsent_bytes=conn.budget.used,
                    )
                    conn.abort()

    async def close(self) -> None:
        """Close every connection (after ``drain``)."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for conn in list(self._conns):
            conn.close()
        for t in list(self._conn_tasks):
            t.cancel()
        if self._conn_tasks:
            await asyncio.wait(set(self._conn_tasks), timeout=1.0)
