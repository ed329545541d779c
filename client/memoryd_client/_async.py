"""The asyncio client: many concurrent calls pipelined on one connection.

    async with AsyncMemoryClient() as client:
        a, b = await asyncio.gather(client.search("schema"), client.search("deadline"))

Answers may come back out of order; each call's progress events reach that call's own
``on_progress`` (a plain function or a coroutine function). Connection behaviour is the
blocking client's (see :mod:`memoryd_client.client`): ``hello`` first, a dropped connection
is reconnected once and calls safe to resend are resent (not ``append``), timeouts leave the
connection usable (:mod:`memoryd_client._async_connection`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from memoryd_client import _calls
from memoryd_client._async_connection import AsyncConnection
from memoryd_client._calls import Call, DateLike, ProgressCallback
from memoryd_client._connection import DEFAULT_CLIENT_NAME, DEFAULT_TIMEOUT
from memoryd_client.errors import ConnectionLost
from memoryd_client.paths import socket_path as default_socket_path
from memoryd_client.sync_types import SyncList, SyncRun
from memoryd_client.trust_types import ObserveResult, ReviewItem, ReviewList
from memoryd_client.types import (
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
from memoryd_client.usage import StatsResult

if TYPE_CHECKING:
    from memoryd_client.search_options import SearchOptions

T = TypeVar("T")


class AsyncMemoryClient:
    """asyncio client for memoryd, with the same methods as :class:`MemoryClient`."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        autostart: bool = False,
        client_name: str = DEFAULT_CLIENT_NAME,
    ) -> None:
        self.socket_path = (
            Path(socket_path).expanduser() if socket_path is not None else default_socket_path()
        )
        self._conn = AsyncConnection(
            self.socket_path,
            explicit_socket=socket_path is not None,
            timeout=timeout,
            autostart=autostart,
            client_name=client_name,
        )

    @property
    def timeout(self) -> float | None:
        """Seconds to wait for an answer (None: forever)."""
        return self._conn.timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._conn.timeout = value

    @property
    def autostart(self) -> bool:
        """Start ``memoryd run`` in the background when no daemon answers."""
        return self._conn.autostart

    @autostart.setter
    def autostart(self, value: bool) -> None:
        self._conn.autostart = value

    @property
    def client_name(self) -> str:
        return self._conn.client_name

    @property
    def server(self) -> Hello | None:
        """The daemon's ``hello`` answer on the current connection (None before connecting)."""
        return self._conn.hello

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "connected" if self._conn.connected else "not connected"
        return f"<AsyncMemoryClient {self.socket_path} {state}>"

    async def connect(self) -> Hello:
        """Connect now (calls connect lazily otherwise); returns the daemon's ``hello``."""
        await self._conn.open()
        assert self._conn.hello is not None
        return self._conn.hello

    async def close(self) -> None:
        await self._conn.close()

    # ------------------------------------------------------------ methods

    async def hello(self) -> Hello:
        return await self._run(_calls.hello(self.client_name))

    async def status(self, workspace: str | None = None) -> Status:
        return await self._run(_calls.status(workspace))

    async def search(
        self, query: str, *, workspace: str | None = None, **options: Unpack[SearchOptions]
    ) -> SearchResult:
        """Hybrid search of ``workspace`` (default: the daemon's choice). ``options``: a
        search's options (:data:`memoryd_client.search_options.OPTIONS`), e.g.
        ``max_results``, ``sources``, ``since``; ``project``: the active project key(s)
        (docs/provenance.md); ``now``: the day the query's "yesterday" or "last week" counts
        from (default: today)."""
        return await self._run(_calls.search(query, workspace, options))

    async def get(
        self,
        path: str,
        *,
        workspace: str | None = None,
        from_line: int | None = None,
        lines: int | None = None,
        raw: bool = False,
        injectable: bool = False,
    ) -> GetResult:
        return await self._run(
            _calls.get(
                path,
                workspace=workspace,
                from_line=from_line,
                lines=lines,
                raw=raw,
                injectable=injectable,
            )
        )

    async def append(
        self,
        text: str,
        *,
        workspace: str | None = None,
        date: DateLike | None = None,
        heading: str | None = None,
        origin: str = "agent",
        session_id: str | None = None,
        session_kind: str | None = None,
        via: str | None = None,
        call_id: str | None = None,
    ) -> AppendResult:
        return await self._run(
            _calls.append(
                text,
                workspace=workspace,
                date=date,
                heading=heading,
                origin=origin,
                session_id=session_id,
                session_kind=session_kind,
                via=via,
                call_id=call_id,
            )
        )

    async def export(
        self,
        output: str | Path | None = None,
        *,
        workspace: str | None = None,
        force: bool = False,
    ) -> ExportResult:
        """Write the workspace's memory (markdown, provenance, a manifest with hashes) to
        the .tar.gz ``output`` (a new file: an existing one only with ``force``, and only a
        regular file); without it, into the workspace's exports folder
        (memory/.history/exports, the newest few kept: docs/lifecycle.md)."""
        return await self._run(_calls.export(output, workspace=workspace, force=force))

    async def import_archive(
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
        return await self._run(
            _calls.import_archive(
                archive,
                export=export,
                workspace=workspace,
                dry_run=dry_run,
                untrusted=untrusted,
            )
        )

    async def forget(
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
        return await self._run(
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

    async def recall(
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
        return await self._run(
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

    async def flush(
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
        return await self._run(call)

    async def stats(self, *, days: int | None = None, workspace: str | None = None) -> StatsResult:
        """As :meth:`MemoryClient.stats`."""
        return await self._run(_calls.stats(days=days, workspace=workspace))

    async def observe(
        self,
        session_id: str | None,
        event: str,
        *,
        workspace: str | None = None,
        origin: str | None = None,
        tool: str | None = None,
        command: str | None = None,
        path: str | None = None,
        cwd: str | None = None,
        what: str | None = None,
        call_id: str | None = None,
        session_kind: str | None = None,
    ) -> ObserveResult:
        """Tell the daemon what agent session ``session_id`` did (docs/provenance.md):
        ``event`` ``user_message`` (the user spoke: the turn starts clean), ``read`` (it
        read ``origin``, or a ``tool`` / shell ``command`` / file ``path`` the daemon
        classifies) or ``call`` (it is about to call one of memoryd's tools as ``call_id``).
        The session's writes then take the least trusted origin it read."""
        return await self._run(
            _calls.observe(
                session_id,
                event,
                workspace=workspace,
                origin=origin,
                tool=tool,
                command=command,
                path=path,
                cwd=cwd,
                what=what,
                call_id=call_id,
                session_kind=session_kind,
            )
        )

    async def review_list(self, *, workspace: str | None = None) -> ReviewList:
        """The lines waiting for the owner's review (untrusted writes that ask to be kept)."""
        return await self._run(_calls.review_list(workspace=workspace))

    async def review_approve(self, item: str, *, workspace: str | None = None) -> ReviewItem:
        """Take the waiting line ``item`` (its id, or 4+ characters of it) as the owner's."""
        return await self._run(_calls.review_approve(item, workspace=workspace))

    async def review_reject(
        self, item: str, *, workspace: str | None = None
    ) -> tuple[ReviewItem, ForgetResult]:
        """Forget the waiting line ``item`` (its pre-image kept, as for any forget)."""
        return await self._run(_calls.review_reject(item, workspace=workspace))

    async def reindex(
        self,
        *,
        workspace: str | None = None,
        full: bool = False,
        wait: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> ReindexResult:
        return await self._run(
            _calls.reindex(workspace=workspace, full=full, wait=wait, on_progress=on_progress)
        )

    async def workspace_add(
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
        return await self._run(
            _calls.workspace_add(
                os.fspath(path),
                name,
                wait=wait,
                on_progress=on_progress,
                openclaw_home=None if openclaw_home is None else os.fspath(openclaw_home),
            )
        )

    async def workspace_remove(
        self, workspace: str | os.PathLike[str], *, delete_index: bool = False
    ) -> WorkspaceChange:
        return await self._run(
            _calls.workspace_remove(os.fspath(workspace), delete_index=delete_index)
        )

    async def workspace_list(self) -> list[WorkspaceInfo]:
        return await self._run(_calls.workspace_list())

    async def jobs_list(
        self, *, workspace: str | None = None, name: str | None = None, history: int | None = None
    ) -> JobsList:
        """Every job per workspace (or one workspace, one job): schedule, next and last run;
        ``history`` adds that many recent runs to each."""
        return await self._run(_calls.jobs_list(workspace=workspace, name=name, history=history))

    async def jobs_run(
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
        return await self._run(
            _calls.jobs_run(
                name, workspace=workspace, dry_run=dry_run, force=force, on_progress=on_progress
            )
        )

    async def sync_enable(
        self,
        remote: str,
        *,
        workspace: str | None = None,
        branch: str | None = None,
        repo: str | None = None,
    ) -> SyncRun:
        """Sync the workspace through git with ``remote`` (docs/sync.md), a first sync run."""
        call = _calls.sync_enable(remote, workspace=workspace, branch=branch, repo=repo)
        return await self._run(call)

    async def sync_disable(self, *, workspace: str | None = None) -> dict[str, Any]:
        return await self._run(_calls.sync_disable(workspace=workspace))

    async def sync_status(self, *, workspace: str | None = None) -> SyncList:
        return await self._run(_calls.sync_status(workspace=workspace))

    async def sync_now(self, *, workspace: str | None = None) -> list[SyncRun]:
        """Commit, pull, merge and push now (every syncing workspace without ``workspace``)."""
        return await self._run(_calls.sync_now(workspace=workspace))

    async def shutdown(self) -> None:
        try:
            await self._run(_calls.shutdown())
        except ConnectionLost:
            pass
        finally:
            await self.close()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self._run(_calls.raw(method, params))

    # ------------------------------------------------------------ plumbing

    async def _run(self, call: Call[T]) -> T:
        return await self._conn.run(call)
