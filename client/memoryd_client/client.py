"""The blocking client: one persistent Unix-socket connection to memoryd.

    with MemoryClient() as client:
        for hit in client.search("what did we decide about the schema").results:
            print(hit.path, hit.start_line, hit.snippet)

Connection life: the first call connects and says ``hello`` (a daemon speaking another
protocol version is refused with :class:`ProtocolMismatch`). Before reusing an idle
connection the client checks that the daemon has not closed it (e.g. it was restarted);
if so it reconnects first, for every method. If the connection drops *after* a request
went out, the call is sent once more on a fresh connection, except ``append``: the daemon
may already have written the text, so that raises :class:`ConnectionLost` instead of
risking a duplicate. A timeout leaves the connection usable (a late answer is discarded
by its request id).

Not thread-safe: use one client per thread (or :class:`AsyncMemoryClient`).
"""

from __future__ import annotations

import itertools
import os
import select
import socket as _socket
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from memoryd_client import _calls, protocol
from memoryd_client._calls import Call, DateLike, FrameBuffer, ProgressCallback
from memoryd_client.errors import (
    ClientTimeout,
    ConnectionLost,
    DaemonNotRunning,
    RemoteError,
)
from memoryd_client.paths import socket_path as default_socket_path
from memoryd_client.types import (
    AgentFlushResult,
    AppendResult,
    ExportResult,
    FlushResult,
    ForgetResult,
    GetResult,
    Hello,
    ImportResult,
    JobRun,
    JobsList,
    RecallResult,
    ReindexResult,
    SearchResult,
    Status,
    WorkspaceChange,
    WorkspaceInfo,
)

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
DEFAULT_CLIENT_NAME = "memoryd_client"
_RECV_BYTES = 256 * 1024


class _Dropped(Exception):
    """The connection ended (EOF or reset) while waiting for an answer."""


class _TimedOut(Exception):
    """No frame before the deadline."""


class MemoryClient:
    """Blocking client for memoryd. See the module docstring for connection behaviour.

    ``socket_path``: defaults to :func:`memoryd_client.paths.socket_path` (``MEMORYD_SOCKET``,
    ``MEMORYD_HOME``, platformdirs). ``timeout``: seconds to wait for an answer (for
    ``reindex``, between progress events, and at least 10 minutes); None waits forever.
    ``autostart``: start ``memoryd run`` in the background when no daemon answers.
    """

    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        autostart: bool = False,
        client_name: str = DEFAULT_CLIENT_NAME,
    ) -> None:
        self._explicit_socket = socket_path is not None
        self.socket_path = (
            Path(socket_path).expanduser() if socket_path is not None else default_socket_path()
        )
        self.timeout = timeout
        self.autostart = autostart
        self.client_name = client_name
        self._sock: _socket.socket | None = None
        self._buffer = FrameBuffer()
        self._ids = itertools.count(1)
        self.server: Hello | None = None
        """The daemon's ``hello`` answer on the current connection (None before connecting)."""

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "connected" if self._sock is not None else "not connected"
        return f"<MemoryClient {self.socket_path} {state}>"

    def connect(self) -> Hello:
        """Connect now (calls connect lazily otherwise); returns the daemon's ``hello``."""
        self._connection()
        assert self.server is not None
        return self.server

    def close(self) -> None:
        sock, self._sock = self._sock, None
        self.server = None
        self._buffer = FrameBuffer()
        if sock is not None:
            sock.close()

    # ------------------------------------------------------------ methods

    def hello(self) -> Hello:
        return self._run(_calls.hello(self.client_name))

    def status(self, workspace: str | None = None) -> Status:
        return self._run(_calls.status(workspace))

    def search(
        self,
        query: str,
        *,
        workspace: str | None = None,
        max_results: int | None = None,
        min_score: float | None = None,
        sources: str | Iterable[str] | None = None,
        mode: str | None = None,
        fusion: str | None = None,
        path_prefix: str | None = None,
        since: DateLike | None = None,
        until: DateLike | None = None,
        fleet: bool = False,
        project: str | Iterable[str] | None = None,
        now: DateLike | None = None,
        include_superseded: bool = False,
    ) -> SearchResult:
        """``project``: the active project key(s) (docs/provenance.md); ``now``: the day
        the query's "yesterday" or "last week" counts from (default: today)."""
        return self._run(
            _calls.search(
                query,
                workspace=workspace,
                max_results=max_results,
                min_score=min_score,
                sources=sources,
                mode=mode,
                fusion=fusion,
                path_prefix=path_prefix,
                since=since,
                until=until,
                fleet=fleet,
                project=project,
                now=now,
                include_superseded=include_superseded,
            )
        )

    def get(
        self,
        path: str,
        *,
        workspace: str | None = None,
        from_line: int | None = None,
        lines: int | None = None,
        raw: bool = False,
        injectable: bool = False,
    ) -> GetResult:
        return self._run(
            _calls.get(
                path,
                workspace=workspace,
                from_line=from_line,
                lines=lines,
                raw=raw,
                injectable=injectable,
            )
        )

    def append(
        self,
        text: str,
        *,
        workspace: str | None = None,
        date: DateLike | None = None,
        heading: str | None = None,
        origin: str = "agent",
        session_id: str | None = None,
        session_kind: str | None = None,
    ) -> AppendResult:
        """``origin``: owner, agent (the default: a program), untrusted (web pages, tool
        output) or system; recorded for each line with the session (docs/provenance.md)."""
        return self._run(
            _calls.append(
                text,
                workspace=workspace,
                date=date,
                heading=heading,
                origin=origin,
                session_id=session_id,
                session_kind=session_kind,
            )
        )

    def export(
        self, output: str | Path | None = None, *, workspace: str | None = None
    ) -> ExportResult:
        """Write the workspace's memory (markdown, provenance, a manifest with hashes) to
        the .tar.gz ``output``; without it, into the workspace's exports folder
        (memory/.history/exports, the newest few kept: docs/lifecycle.md)."""
        return self._run(_calls.export(output, workspace=workspace))

    def import_archive(
        self,
        archive: str | Path | None = None,
        *,
        export: str | None = None,
        workspace: str | None = None,
        dry_run: bool = False,
        untrusted: bool = False,
    ) -> ImportResult:
        """Merge an export (the file ``archive``, or ``export``, a file name in the
        workspace's exports folder) into the workspace, adding no line twice; ``dry_run``:
        only say what it would add. ``untrusted``: the archive is outside content (MCP's
        memory_import): daily notes only, every added line of origin untrusted."""
        return self._run(
            _calls.import_archive(
                archive,
                export=export,
                workspace=workspace,
                dry_run=dry_run,
                untrusted=untrusted,
            )
        )

    def forget(
        self,
        *,
        workspace: str | None = None,
        path: str | None = None,
        lines: str | None = None,
        query: str | None = None,
        session_id: str | None = None,
        max_results: int | None = None,
        dry_run: bool = False,
        purge: bool = False,
    ) -> ForgetResult:
        """Remove lines from memory for good (docs/lifecycle.md): ``path`` with ``lines``
        ("A-B"), the matches of ``query``, or everything of ``session_id``. ``dry_run``:
        only say what would go."""
        return self._run(
            _calls.forget(
                workspace=workspace,
                path=path,
                lines=lines,
                query=query,
                session_id=session_id,
                max_results=max_results,
                dry_run=dry_run,
                purge=purge,
            )
        )

    def recall(
        self,
        query: str,
        *,
        workspace: str | None = None,
        budget_tokens: int | None = None,
        min_score: float | None = None,
        sources: str | Iterable[str] | None = None,
        project: str | Iterable[str] | None = None,
        now: DateLike | None = None,
        include_superseded: bool = False,
    ) -> RecallResult:
        """The memory worth putting before a model for ``query``: the best snippets above
        ``min_score`` (default 0.5, stricter than search), no two from the same lines,
        within ``budget_tokens`` (default 600), as one markdown block with citations.
        ``include_superseded``: keep keyed lines a newer one superseded (as search)."""
        return self._run(
            _calls.recall(
                query,
                workspace=workspace,
                budget_tokens=budget_tokens,
                min_score=min_score,
                sources=sources,
                project=project,
                now=now,
                include_superseded=include_superseded,
            )
        )

    def flush(
        self,
        transcript: str | Path,
        session_id: str,
        *,
        workspace: str | None = None,
        wait: bool = False,
        trigger: str | None = None,
        session_kind: str | None = None,
    ) -> FlushResult:
        """Queue a flush of an agent's transcript (OpenClaw or Claude Code JSONL): the
        daemon's LLM writes its durable facts to the day's daily file, from where the last
        flush of ``session_id`` stopped. Returns at once, or with ``wait`` when the run
        ended (``result.run``). Not resent if the connection drops. ``trigger`` is how
        the run is recorded: ``hook`` (the default, an agent's hook) or ``manual``."""
        call = _calls.flush(
            transcript,
            session_id,
            workspace=workspace,
            wait=wait,
            trigger=trigger,
            session_kind=session_kind,
        )
        return self._run(call)

    def flush_agent(
        self, transcript: str | Path, session_id: str, *, workspace: str | None = None
    ) -> AgentFlushResult:
        """Whether the agent's own model should save this session's durable facts now
        (``.due``): enough new conversation since the last flush of ``session_id``. When
        due, the daemon has moved the offset: the same lines are never asked about twice."""
        return self._run(_calls.flush_agent(transcript, session_id, workspace=workspace))

    def reindex(
        self,
        *,
        workspace: str | None = None,
        full: bool = False,
        wait: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> ReindexResult:
        return self._run(
            _calls.reindex(workspace=workspace, full=full, wait=wait, on_progress=on_progress)
        )

    def workspace_add(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        wait: bool = False,
        on_progress: ProgressCallback | None = None,
        openclaw_home: str | os.PathLike[str] | None = None,
    ) -> WorkspaceChange:
        """``wait``: return once the workspace is indexed (vectors too): a first index in one
        call, ``indexed`` saying what it did. ``openclaw_home``: the workspace is OpenClaw's;
        its sessions (the agent stores under that home) are indexed with index.sessions on."""
        return self._run(
            _calls.workspace_add(
                os.fspath(path),
                name,
                wait=wait,
                on_progress=on_progress,
                openclaw_home=None if openclaw_home is None else os.fspath(openclaw_home),
            )
        )

    def workspace_remove(
        self, workspace: str | os.PathLike[str], *, delete_index: bool = False
    ) -> WorkspaceChange:
        return self._run(_calls.workspace_remove(os.fspath(workspace), delete_index=delete_index))

    def workspace_list(self) -> list[WorkspaceInfo]:
        return self._run(_calls.workspace_list())

    def jobs_list(
        self, *, workspace: str | None = None, name: str | None = None, history: int | None = None
    ) -> JobsList:
        """Every job per workspace (or one workspace, one job): schedule, next and last run;
        ``history`` adds that many recent runs to each."""
        return self._run(_calls.jobs_list(workspace=workspace, name=name, history=history))

    def jobs_run(
        self,
        name: str,
        *,
        workspace: str | None = None,
        dry_run: bool = False,
        force: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> JobRun:
        """Run a job now and return its record; a failed run is a record with status
        ``failed``, not an exception. ``dry_run`` writes nothing; ``force`` lets hippocampus
        drop more than its limit. Not resent if the connection drops."""
        return self._run(
            _calls.jobs_run(
                name, workspace=workspace, dry_run=dry_run, force=force, on_progress=on_progress
            )
        )

    def shutdown(self) -> None:
        """Ask the daemon to shut down gracefully; the connection is closed after."""
        try:
            self._run(_calls.shutdown())
        except ConnectionLost:
            pass  # it went down before answering: what we asked for
        finally:
            self.close()

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Any method by name with the raw result map (for methods newer than this client).

        Not retried after a dropped connection, since the method's effects are unknown.
        """
        return self._run(_calls.raw(method, params))

    # ------------------------------------------------------------ plumbing

    def _run(self, call: Call[T]) -> T:
        for attempt in (1, 2):
            sock = self._connection()
            req_id = next(self._ids)
            try:
                sock.sendall(protocol.pack(protocol.request(req_id, call.method, call.params)))
            except OSError:
                # Nothing complete reached the daemon: safe to resend whatever the method.
                self.close()
                if attempt == 1:
                    continue
                raise ConnectionLost(
                    f"lost the connection to memoryd while sending `{call.method}`"
                ) from None
            try:
                return self._receive(sock, req_id, call)
            except _Dropped:
                self.close()
                if attempt == 1 and call.idempotent:
                    continue
                raise ConnectionLost(_calls.lost_message(call)) from None
        raise AssertionError("unreachable")

    def _receive(self, sock: _socket.socket, req_id: int, call: Call[T]) -> T:
        wait = call.timeout(self.timeout)
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            try:
                frame = self._next_frame(sock, deadline)
            except _TimedOut:
                raise ClientTimeout(_calls.timeout_message(call.method, wait)) from None
            fid = _calls.frame_id(frame)
            if fid is None and frame.get("ok") is False:
                # A connection-level error (malformed or oversize frame): the daemon closes.
                self.close()
                raise RemoteError.from_wire(frame.get("error"))
            if fid != req_id:
                continue  # the late answer of a call that timed out earlier
            if _calls.is_event(frame):
                progress = _calls.progress_of(frame)
                if progress is not None and call.on_progress is not None:
                    call.on_progress(progress)
                deadline = None if wait is None else time.monotonic() + wait
                continue
            return _calls.result_of(call, frame)

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
        if self._sock is not None and _is_closed_by_peer(self._sock):
            self.close()
        if self._sock is None:
            self._sock = self._open()
        return self._sock

    def _open(self) -> _socket.socket:
        try:
            return self._open_once()
        except DaemonNotRunning:
            if not self.autostart:
                raise
        # Imported here: subprocess is not worth loading for every memctl run.
        from memoryd_client._autostart import AUTOSTART_WAIT_S, POLL_INTERVAL_S, Starter

        starter = Starter(self.socket_path, self._explicit_socket)
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
        _calls.check_socket_path(self.socket_path)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            try:
                sock.connect(os.fspath(self.socket_path))
            except TimeoutError:
                raise ClientTimeout(
                    f"memoryd at {self.socket_path} did not accept the connection within "
                    f"{self.timeout:g}s"
                ) from None
            except OSError as exc:
                raise _calls.connect_error(exc, self.socket_path) from None
            self._sock, self._buffer = sock, FrameBuffer()
            call = _calls.hello(self.client_name)
            req_id = next(self._ids)
            try:
                sock.sendall(protocol.pack(protocol.request(req_id, call.method, call.params)))
                hello = self._receive(sock, req_id, call)
            except TimeoutError:
                raise ClientTimeout(
                    f"memoryd at {self.socket_path} accepted the connection but did not answer "
                    f"hello within {self.timeout:g}s (a daemon that hangs: `memctl doctor`)"
                ) from None
            except (OSError, _Dropped):
                raise ConnectionLost(
                    f"memoryd at {self.socket_path} closed the connection during hello"
                ) from None
            except RemoteError as exc:
                raise _calls.hello_error(exc, self.socket_path) from None
            self.server = _calls.check_hello(hello, self.socket_path)
            return sock
        except BaseException:
            self._sock = None
            self.server = None
            sock.close()
            raise


def _is_closed_by_peer(sock: _socket.socket) -> bool:
    """True when an idle connection was closed by the daemon (EOF or error pending)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(1, _socket.MSG_PEEK | _socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except (OSError, ValueError):
        return True
