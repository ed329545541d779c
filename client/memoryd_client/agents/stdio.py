"""The stdio transport of ``memctl mcp`` on the event loop's own pipe I/O.

The SDK's :func:`mcp.server.stdio.stdio_server` reads stdin and writes stdout through
anyio's file wrappers, which run every ``readline``, ``write`` and ``flush`` in a worker
thread: three thread hand-offs per request, each a pair of context switches (about 14 per
``tools/call`` measured, with the other hops), which on a busy 2-core machine cost more than
the search itself. Here the same two streams of
:class:`~mcp.shared.message.SessionMessage` are fed by asyncio pipe transports
(non-blocking reads and writes on the loop), and the SDK's server runs on them unchanged.

Only for pipes and sockets, what an agent spawning the server gives it; anything else (a
terminal, a file) goes through the SDK's transport, so O_NONBLOCK is never set on a
descriptor shared with a shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception],
    MemoryObjectSendStream[SessionMessage],
]

LINE_LIMIT = 64 * 1024 * 1024
"""The longest request line read (the SDK's transport has none; asyncio's default, 64 kB,
would refuse a 100 kB query before the tool could say why)."""


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _skip_line(reader: asyncio.StreamReader) -> None:
    """Drop the rest of an over-long line, up to and with its newline (or EOF)."""
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.IncompleteReadError:
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)


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
async def stdio_streams(
    stdin_fd: int = 0, stdout_fd: int = 1, *, line_limit: int = LINE_LIMIT
) -> AsyncIterator[Streams]:
    """The server's (read, write) streams over stdin/stdout, like the SDK's stdio_server.
    A line over ``line_limit`` bytes is dropped and passed on as an error."""
    if not (_is_pipe(stdin_fd) and _is_pipe(stdout_fd)):
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=line_limit)
    # Duplicates, so closing the transports leaves fds 0 and 1 to the interpreter.
    rpipe = os.fdopen(os.dup(stdin_fd), "rb", buffering=0)
    wpipe = os.fdopen(os.dup(stdout_fd), "wb", buffering=0)
    rtransport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), rpipe
    )
    wtransport, wprotocol = await loop.connect_write_pipe(_WriteProtocol, wpipe)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_lines() -> None:
        async with read_writer:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:
                    line = exc.partial  # EOF, after a last line without its newline or not
                    if not line.strip():
                        return
                except asyncio.LimitOverrunError:
                    await _skip_line(reader)
                    await read_writer.send(ValueError(f"a message over {line_limit} bytes"))
                    continue
                if not line.strip():
                    continue
                try:  # decoded as the SDK's transport does: bad UTF-8 replaced, not refused
                    text = line.decode("utf-8", errors="replace")
                    message = types.JSONRPCMessage.model_validate_json(text)
                except Exception as exc:  # passed on, as the SDK's transport does
                    await read_writer.send(exc)
                    continue
                await read_writer.send(SessionMessage(message))

    async def write_lines() -> None:
        async with write_reader:
            async for session_message in write_reader:
                data = session_message.message.model_dump_json(by_alias=True, exclude_none=True)
                wtransport.write(data.encode() + b"\n")
                await wprotocol.writable.wait()  # set unless the client reads slowly

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_lines)
            tg.start_soon(write_lines)
            yield read_stream, write_stream
    finally:
        rtransport.close()
        wtransport.close()
        for fd in (stdin_fd, stdout_fd):  # O_NONBLOCK is on the shared file description
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)
