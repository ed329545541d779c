"""The stdio transport of ``memctl mcp``: newline-delimited JSON-RPC on stdin and stdout.

Pipes and sockets (what an agent spawning the server gives it) are read and written on
the event loop (asyncio pipe transports: no thread hand-off per line). Anything else (a
terminal, a file) is read and written by a worker thread, so O_NONBLOCK is never set on a
descriptor shared with a shell.

Each request runs as a task of its own, so a slow call never holds up a ``ping``, at most
``MAX_IN_FLIGHT`` at once (past that, stdin waits); ``notifications/cancelled`` cancels one
(and it gets no reply, as the protocol says). A line longer than ``line_limit`` is dropped
without being held in memory and answered with an error carrying its id when the id is
among its first keys. At the end of stdin the calls still running finish, then the server
returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

from memoryd_client.agents.mcp_protocol import INVALID_REQUEST, McpServer, error, id_in, parse

LINE_LIMIT: Final = 4 * 1024 * 1024
"""The longest request line read: 2,000 characters of query or 64 kB of note are far
below it, even with every character escaped."""
CHUNK: Final = 64 * 1024
DRAIN_S: Final = 30.0
MAX_IN_FLIGHT: Final = 64
"""Requests answered at once; with this many running, stdin is not read until one ends (the
client's writes wait in the pipe): 20,000 pipelined calls took 177 MB held as tasks."""
"""At the end of stdin, how long calls still running may take to finish."""

Reader = Callable[[], Awaitable[bytes]]
Writer = Callable[[bytes], Awaitable[None]]


class TooLong:
    """A line over the limit: its first bytes (to find its id), the rest dropped."""

    def __init__(self, head: bytes) -> None:
        self.head = head


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def read_lines(read: Reader, limit: int = LINE_LIMIT) -> AsyncIterator[bytes | TooLong]:
    """The lines of a byte stream (without their newline), a :class:`TooLong` for one over
    ``limit`` bytes; a last line without its newline counts too."""
    buf = bytearray()
    head: bytes | None = None  # set while dropping an over-long line
    while True:
        chunk = await read()
        if not chunk:
            if head is not None:
                yield TooLong(head)
            elif buf.strip():
                yield bytes(buf)
            return
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            if head is None:
                buf += chunk[start:newline]
                if len(buf) > limit:
                    yield TooLong(bytes(buf[:4096]))
                else:
                    yield bytes(buf)
            else:
                yield TooLong(head)
            buf.clear()
            head = None
            start = newline + 1
        if head is None:
            buf += chunk[start:]
            if len(buf) > limit:
                head = bytes(buf[:4096])
                buf.clear()


class _WriteProtocol(asyncio.Protocol):
    """Flow control for stdout: writes wait while the pipe's buffer is above the mark."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.writable.set()  # the client went away: the read side ends the server


@contextlib.asynccontextmanager
async def stdio_pipes(
    stdin_fd: int = 0, stdout_fd: int = 1
) -> AsyncIterator[tuple[Reader, Writer]]:
    """(read a chunk, write bytes) on stdin and stdout."""
    loop = asyncio.get_running_loop()
    if not (_is_pipe(stdin_fd) and _is_pipe(stdout_fd)):
        lock = asyncio.Lock()

        async def read_thread() -> bytes:
            return await loop.run_in_executor(None, os.read, stdin_fd, CHUNK)

        async def write_thread(data: bytes) -> None:
            async with lock:
                await loop.run_in_executor(None, _write_all, stdout_fd, data)

        yield read_thread, write_thread
        return
    reader = asyncio.StreamReader(limit=CHUNK)
    # Duplicates, so closing the transports leaves fds 0 and 1 to the interpreter.
    rpipe = os.fdopen(os.dup(stdin_fd), "rb", buffering=0)
    wpipe = os.fdopen(os.dup(stdout_fd), "wb", buffering=0)
    rtransport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), rpipe
    )
    wtransport, wprotocol = await loop.connect_write_pipe(_WriteProtocol, wpipe)

    async def read_pipe() -> bytes:
        return await reader.read(CHUNK)

    async def write_pipe(data: bytes) -> None:
        if wtransport.is_closing():
            return
        wtransport.write(data)
        await wprotocol.writable.wait()  # set unless the client reads slowly

    try:
        yield read_pipe, write_pipe
    finally:
        rtransport.close()
        wtransport.close()
        for fd in (stdin_fd, stdout_fd):  # O_NONBLOCK is on the shared file description
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def serve(
    server: McpServer, read: Reader, write: Writer, *, line_limit: int = LINE_LIMIT
) -> None:
    """Answer every request line until the end of stdin."""
    running: dict[Any, asyncio.Task[None]] = {}  # by request id, for cancellation
    tasks: set[asyncio.Task[None]] = set()  # every one, so none is collected while it runs
    listening: set[asyncio.Task[None]] = set()  # subscriptions: open until stdin ends

    async def send(message: dict[str, Any]) -> None:
        await write(encode(message))

    async def answer(message: Any, request_id: Any) -> None:
        try:
            reply = await server.handle(message, send)
        except Exception as exc:  # a bug: still a reply with the id, and the server goes on
            reply = error(request_id, -32603, f"Internal error: {type(exc).__name__}: {exc}")
        finally:
            if running.get(request_id) is asyncio.current_task():
                del running[request_id]
        if reply is not None:
            await send(reply)

    async for line in read_lines(read, line_limit):
        if isinstance(line, TooLong):
            await send(error(id_in(line.head), INVALID_REQUEST, f"Request over {line_limit} bytes"))
            continue
        if not line.strip():
            continue
        message, problem = parse(line)
        if problem is not None:
            await send(problem)
            continue
        if isinstance(message, dict) and message.get("method") == "notifications/cancelled":
            params = message.get("params")
            target = params.get("requestId") if isinstance(params, dict) else None
            task = running.pop(target, None) if isinstance(target, str | int) else None
            if task is not None:
                task.cancel()
            continue
        request_id = message.get("id") if isinstance(message, dict) else None
        busy = tasks - listening
        while len(busy) >= MAX_IN_FLIGHT:  # stop reading: the client's pipe fills and waits
            _, still = await asyncio.wait(busy, return_when=asyncio.FIRST_COMPLETED)
            busy = still - listening
        task = asyncio.create_task(answer(message, request_id))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            running[request_id] = task
        if isinstance(message, dict) and message.get("method") == "subscriptions/listen":
            listening.add(task)
    for task in listening:
        task.cancel()
    pending = [t for t in tasks if not t.done()]
    if pending:
        _, late = await asyncio.wait(pending, timeout=DRAIN_S)
        for task in late:  # a subscription held open, or a call that will not end
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)


async def serve_stdio(server: McpServer, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
    async with stdio_pipes(stdin_fd, stdout_fd) as (read, write):
        await serve(server, read, write)
