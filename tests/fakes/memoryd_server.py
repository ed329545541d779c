"""A scripted memoryd on a real Unix socket, for the client library's protocol tests.

It speaks the real frame protocol (``memoryd_client.protocol``) from a background thread
with its own event loop; each request runs in its own task, so pipelined requests are
answered concurrently and can finish out of order. Methods answer canned results unless a
test installs a handler:

    with FakeMemoryd(sock) as fake:
        @fake.handle("search")
        async def search(req: FakeRequest) -> dict:
            await req.progress(1, 2)
            return {"results": []}

A handler may ``raise Fail(code, message)`` (an error response), ``raise Drop()`` (close the
connection without answering) or simply never return (a daemon that hangs).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from memoryd_client import protocol

FakeHandler = Callable[["FakeRequest"], Awaitable[Any]]


class Fail(Exception):
    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Drop(Exception):
    """Close this connection without answering."""


@dataclass
class FakeRequest:
    id: Any
    method: str
    params: dict[str, Any]
    connection: int  # 1 for the first connection the fake accepted, 2 for the next...
    _writer: asyncio.StreamWriter = field(repr=False)

    async def send(self, frame: dict[str, Any]) -> None:
        self._writer.write(protocol.pack(frame))
        await self._writer.drain()

    async def progress(self, done: int, total: int | None, phase: str = "indexing") -> None:
        await self.send(
            protocol.event(self.id, "progress", {"phase": phase, "done": done, "total": total})
        )


def stale_socket_file(path: Path) -> Path:
    """A socket file nobody listens on (bound, never listening, closed): ECONNREFUSED."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()
    return path


def canned_results(protocol_version: int = protocol.PROTOCOL_VERSION) -> dict[str, Any]:
    """What the fake answers by default, method by method (realistic shapes)."""
    return {
        "hello": {
            "server": "memoryd",
            "version": "0.0-fake",
            "protocol": protocol_version,
            "pid": os.getpid(),
        },
        "status": {
            "version": "0.0-fake",
            "pid": os.getpid(),
            "uptime_s": 12.5,
            "socket": "/x.sock",
            "config_source": None,
            "provider": {"name": "none", "model": "", "dims": None, "reason": "configured"},
            "workspaces": [
                {
                    "name": "ws",
                    "path": "/w/ws",
                    "files": 3,
                    "chunks": 9,
                    "pending_vectors": 0,
                    "pending_files": 0,
                    "last_sync": 1700000000.0,
                    "index_generation": 4,
                    "vector_ready": False,
                    "degraded": ["keyword only: configured"],
                    "skipped": {},
                    "watcher": "watching",
                    "sqlite_vec": "v0.1.6",
                }
            ],
        },
        "search": {
            "results": [
                {
                    "path": "memory/2025-01-02.md",
                    "start_line": 3,
                    "end_line": 9,
                    "score": 0.8125,
                    "snippet": "- [D1:3] line one\nline two",
                    "snippet_start_line": 3,
                    "snippet_end_line": 4,
                    "source": "memory",
                    "text_score": 0.8125,
                }
            ],
            "provider": "none",
            "model": "",
            "mode_used": "keyword",
            "degraded": "vectors off: no embedding provider",
            "took_ms": 0.4,
            "index_generation": 4,
            "pending_files": 0,
            "waited_ms": 0.0,
        },
        "get": {
            "path": "MEMORY.md",
            "from": 1,
            "lines": 2,
            "text": "# Memory\nhello\n",
            "total_lines": 2,
        },
        "append": {"path": "memory/2025-01-02.md", "start_line": 10, "end_line": 11, "bytes": 24},
        "reindex": {
            "files_scanned": 3,
            "files_changed": 1,
            "files_removed": 0,
            "files_skipped": 0,
            "chunks_written": 4,
            "chunks_removed": 1,
            "seconds": 0.05,
            "skipped": {},
            "vectors_pending": 0,
        },
        "workspace.add": {"name": "ws", "path": "/w/ws", "added": True},
        "workspace.remove": {"name": "ws", "path": "/w/ws", "removed": True},
        "workspace.list": {"workspaces": [{"name": "ws", "path": "/w/ws", "source": "registry"}]},
        "shutdown": {"ok": True},
    }


class FakeMemoryd:
    """The fake daemon; ``requests`` records every request as it arrived."""

    def __init__(self, path: Path, *, protocol_version: int = protocol.PROTOCOL_VERSION) -> None:
        self.path = Path(path)
        self.results = canned_results(protocol_version)
        self.handlers: dict[str, FakeHandler] = {}
        self.requests: list[FakeRequest] = []
        self.answered: list[Any] = []  # request ids in the order their answers were sent
        self.connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ scripting

    def handle(self, method: str) -> Callable[[FakeHandler], FakeHandler]:
        def register(fn: FakeHandler) -> FakeHandler:
            self.handlers[method] = fn
            return fn

        return register

    def methods(self) -> list[str]:
        """The methods received so far, in order, ``hello`` included."""
        return [r.method for r in self.requests]

    def calls(self, method: str) -> list[FakeRequest]:
        return [r for r in self.requests if r.method == method]

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> FakeMemoryd:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_unix_server(self._serve_connection, path=str(self.path))
            )
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-memoryd", daemon=True)
        self._thread.start()
        if not ready.wait(5):
            raise RuntimeError("fake memoryd did not start")

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        self.drop_connections()

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        assert self._thread is not None
        self._thread.join(5)
        loop.close()
        self._loop = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def drop_connections(self) -> None:
        """Close every client connection now (a daemon restart, from the client's view)."""
        if self._loop is None:
            return

        async def drop() -> None:
            for writer in list(self._writers):
                writer.close()

        asyncio.run_coroutine_threadsafe(drop(), self._loop).result(5)

    # ------------------------------------------------------------ serving

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.connections += 1
        number = self.connections
        self._writers.add(writer)
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                header = await reader.readexactly(protocol.HEADER.size)
                body = await reader.readexactly(protocol.frame_length(header))
                frame = protocol.unpack(body)
                req = FakeRequest(
                    frame.get("id"),
                    str(frame.get("method")),
                    frame.get("params") or {},
                    number,
                    writer,
                )
                self.requests.append(req)
                task = asyncio.create_task(self._answer(req, writer))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except (asyncio.IncompleteReadError, ConnectionError, protocol.FrameError):
            pass
        finally:
            self._writers.discard(writer)
            for task in tasks:
                task.cancel()
            writer.close()

    async def _answer(self, req: FakeRequest, writer: asyncio.StreamWriter) -> None:
        handler = self.handlers.get(req.method)
        try:
            if handler is not None:
                result = await handler(req)
            elif req.method in self.results:
                result = self.results[req.method]
            else:
                raise Fail(protocol.ErrorCode.UNKNOWN_METHOD, f"unknown method {req.method!r}")
            frame = protocol.response(req.id, result)
        except Fail as exc:
            frame = protocol.error(req.id, exc.code, exc.message, exc.data)
        except Drop:
            writer.close()
            return
        if writer.is_closing():
            return
        self.answered.append(req.id)
        with contextlib.suppress(ConnectionError):
            await req.send(frame)
