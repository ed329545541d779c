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

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from memoryd_client import _calls
from memoryd_client._calls import Call, DateLike, ProgressCallback
from memoryd_client._connection import DEFAULT_CLIENT_NAME, DEFAULT_TIMEOUT, Connection
from memoryd_client.errors import ConnectionLost
from memoryd_client.paths import socket_path as default_socket_path
from memoryd_client.sync_types import SyncList, SyncRun
from memoryd_client.trust_types import ObserveResult, ReviewItem, ReviewList
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
from memoryd_client.usage import StatsResult

if TYPE_CHECKING:
    from memoryd_client.search_options import SearchOptions

T = TypeVar("T")


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
        self.socket_path = (
            Path(socket_path).expanduser() if socket_path is not None else default_socket_path()
        )
        # The socket, hello, resends and timeouts, in plain maps (memctl's lean paths use
        # it alone); this class reads each answer into its result type.
        self._conn = Connection(
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
        hello = self._conn.hello
        return None if hello is None else Hello.from_wire(hello)

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
        state = "connected" if self._conn.connected else "not connected"
        return f"<MemoryClient {self.socket_path} {state}>"

    def connect(self) -> Hello:
        """Connect now (calls connect lazily otherwise); returns the daemon's ``hello``."""
        return Hello.from_wire(self._conn.open())

    def close(self) -> None:
        self._conn.close()

    # ------------------------------------------------------------ methods

    def hello(self) -> Hello:
        return self._run(_calls.hello(self.client_name))

    def status(self, workspace: str | None = None) -> Status:
        return self._run(_calls.status(workspace))

    def search(
        self, query: str, *, workspace: str | None = None, **options: Unpack[SearchOptions]
    ) -> SearchResult:
        """Hybrid search of ``workspace`` (default: the daemon's choice). ``options``: a
        search's options (:data:`memoryd_client.search_options.OPTIONS`), e.g.
        ``max_results``, ``sources``, ``since``; ``project``: the active project key(s)
        (docs/provenance.md); ``now``: the day the query's "yesterday" or "last week" counts
        from (default: today)."""
        return self._run(_calls.search(query, workspace, options))

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
        via: str | None = None,
        call_id: str | None = None,
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
                via=via,
                call_id=call_id,
            )
        )

    def export(
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
        return self._run(_calls.export(output, workspace=workspace, force=force))

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

    def stats(self, *, days: int | None = None, workspace: str | None = None) -> StatsResult:
        """What memory cost each agent per day over the last ``days`` (default 30): tokens
        injected by recall and digests, empty recalls, LLM tokens of flush, hippocampus and
        fallback summaries, recalled lines later searched again or cited."""
        return self._run(_calls.stats(days=days, workspace=workspace))

    def observe(
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
        return self._run(
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

    def review_list(self, *, workspace: str | None = None) -> ReviewList:
        """The lines waiting for the owner's review (untrusted writes that ask to be kept)."""
        return self._run(_calls.review_list(workspace=workspace))

    def review_approve(self, item: str, *, workspace: str | None = None) -> ReviewItem:
        """Take the waiting line ``item`` (its id, or 4+ characters of it) as the owner's."""
        return self._run(_calls.review_approve(item, workspace=workspace))

    def review_reject(
        self, item: str, *, workspace: str | None = None
    ) -> tuple[ReviewItem, ForgetResult]:
        """Forget the waiting line ``item`` (its pre-image kept, as for any forget)."""
        return self._run(_calls.review_reject(item, workspace=workspace))

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

    def sync_enable(
        self,
        remote: str,
        *,
        workspace: str | None = None,
        branch: str | None = None,
        repo: str | None = None,
    ) -> SyncRun:
        """Sync the workspace through git with ``remote`` (docs/sync.md) and run a first
        sync; ``repo="workspace"`` commits into the workspace's own repository."""
        return self._run(_calls.sync_enable(remote, workspace=workspace, branch=branch, repo=repo))

    def sync_disable(self, *, workspace: str | None = None) -> dict[str, Any]:
        return self._run(_calls.sync_disable(workspace=workspace))

    def sync_status(self, *, workspace: str | None = None) -> SyncList:
        return self._run(_calls.sync_status(workspace=workspace))

    def sync_now(self, *, workspace: str | None = None) -> list[SyncRun]:
        """Commit, pull, merge and push now (every syncing workspace without ``workspace``)."""
        return self._run(_calls.sync_now(workspace=workspace))

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

        Sent again after a dropped connection only when the protocol's table says the method
        is safe to resend (a method newer than this client is not: its effects are unknown).
        """
        return self._run(_calls.raw(method, params))

    # ------------------------------------------------------------ plumbing

    def _run(self, call: Call[T]) -> T:
        on_event = None
        if call.on_progress is not None:
            report = call.on_progress

            def on_event(frame: dict[str, Any]) -> None:
                progress = _calls.progress_of(frame)
                if progress is not None:
                    report(progress)

        result = self._conn.request(
            call.method,
            call.params,
            long=call.long,
            on_event=on_event,
            when=call.when,
        )
        return call.convert(result)
