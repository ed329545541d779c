"""What the sync and async clients share: how each call is built and how answers are read.

Each public method of :class:`~memoryd_client.MemoryClient` and
:class:`~memoryd_client.AsyncMemoryClient` is one line calling a builder here, so the
method names, the params (``None`` means "omit, let the daemon default it") and the result
conversion exist once. The two clients only differ in how they move frames.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from memoryd_client import _connection, protocol
from memoryd_client._params import (
    flush_params,
    iso,
    observe_params,
    omit_none,
    params_of_search,
    recall_params,
)
from memoryd_client.errors import BadResponse, ProtocolMismatch
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
    Progress,
    RecallResult,
    ReindexResult,
    SearchResult,
    Status,
    WorkspaceChange,
    WorkspaceInfo,
    WorkspaceList,
)
from memoryd_client.usage import StatsResult

if TYPE_CHECKING:
    from memoryd_client.search_options import SearchOptions

T = TypeVar("T")

ProgressCallback = Callable[[Progress], object]
"""Called with each progress event; the async client awaits the result if it is awaitable."""

DateLike = _dt.date | str


class Call(NamedTuple, Generic[T]):
    """One request to make: the method, its params and how to read its result.

    Whether it may be sent again on a fresh connection when the first one dropped after the
    request went out is the method's, in the protocol's table (``protocol.SAFE_TO_RESEND``):
    ``append`` is not (a second send could write the text twice), nor ``jobs.run``.
    A named tuple, immutable as a frozen dataclass is, made for every request at a third
    of its cost (a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``: ~11k instructions, a sixth of a client's hello).
    """

    method: str
    params: dict[str, Any]
    convert: Callable[[Any], T]
    on_progress: ProgressCallback | None = None
    long: bool = False
    # (feature, params): added to ``params`` for a daemon whose hello lists the feature
    # (protocol.FEATURES); ``convert`` reads both answers.
    when: tuple[str, dict[str, Any]] | None = None

    def timeout(self, default: float | None) -> float | None:
        """Seconds to wait for the next frame of this call (progress resets the clock)."""
        return _connection.call_timeout(default, self.long)


def _none(_: Any) -> None:
    return None


def _identity(result: Any) -> Any:
    return result


def hello(client_name: str) -> Call[Hello]:
    return Call(
        "hello", {"client": client_name, "protocol": protocol.PROTOCOL_VERSION}, Hello.from_wire
    )


def status(workspace: str | None = None) -> Call[Status]:
    return Call("status", omit_none(workspace=workspace), Status.from_wire)


def search(query: str, workspace: str | None, options: SearchOptions) -> Call[SearchResult]:
    """``options``: the search's keyword arguments, as their map (search_params)."""
    params = params_of_search(query, workspace, options)
    return Call("search", params, SearchResult.from_wire, when=_HIT_ROWS)


# The hits as rows: a third of the instructions of reading them as maps (docs/protocol.md).
_HIT_ROWS = (protocol.HIT_ROWS, {"hit_rows": True})


def get(
    path: str,
    *,
    workspace: str | None = None,
    from_line: int | None = None,
    lines: int | None = None,
    raw: bool = False,
    injectable: bool = False,
) -> Call[GetResult]:
    params = omit_none(path=path, workspace=workspace, lines=lines)
    if from_line is not None:
        params["from"] = from_line
    if raw:  # the file as it is: secrets written by hand not masked
        params["raw"] = True
    if injectable:  # to put before a model: untrusted and system lines left out
        params["injectable"] = True
    return Call("get", params, GetResult.from_wire)


def append(
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
) -> Call[AppendResult]:
    """``origin``: who the text comes from (docs/provenance.md); a program is an agent.
    The recorded origin is also no better than what ``session_id`` read (``observe``)."""
    params = omit_none(
        text=text,
        workspace=workspace,
        date=iso(date),
        heading=heading,
        origin=origin,
        session_id=session_id,
        session_kind=session_kind,
        via=via,
        call_id=call_id,
    )
    return Call("append", params, AppendResult.from_wire)


def forget(
    *,
    workspace: str | None = None,
    path: str | None = None,
    lines: str | None = None,
    query: str | None = None,
    session_id: str | None = None,
    max_results: int | None = None,
    dry_run: bool = False,
    purge: bool = False,
) -> Call[ForgetResult]:
    params = omit_none(
        workspace=workspace,
        path=path,
        lines=lines,
        query=query,
        session_id=session_id,
        max_results=max_results,
        dry_run=dry_run or None,
        purge=purge or None,
    )
    return Call("forget", params, ForgetResult.from_wire)


def export(
    output: str | Path | None, *, workspace: str | None = None, force: bool = False
) -> Call[ExportResult]:
    # No output: the workspace's exports folder (memory/.history/exports), the daemon's choice.
    path = None if output is None else os.path.abspath(output)
    params = omit_none(path=path, workspace=workspace, force=force or None)
    return Call("export", params, ExportResult.from_wire)


def import_archive(
    archive: str | Path | None = None,
    *,
    export: str | None = None,
    workspace: str | None = None,
    dry_run: bool = False,
    untrusted: bool = False,
) -> Call[ImportResult]:
    params = omit_none(
        path=None if archive is None else os.path.abspath(archive),
        export=export,
        workspace=workspace,
        dry_run=dry_run or None,
        untrusted=untrusted or None,
    )
    return Call("import", params, ImportResult.from_wire)


def recall(query: str, **options: Any) -> Call[RecallResult]:
    """``options``: :func:`memoryd_client._params.recall_params`'s."""
    params = recall_params(query, **options)
    return Call("recall", params, RecallResult.from_wire)


def flush(
    transcript: str | Path,
    session_id: str,
    *,
    workspace: str | None = None,
    wait: bool = False,
    trigger: str | None = None,
    session_kind: str | None = None,
) -> Call[FlushResult]:
    # Not resent after a dropped connection (the run may be queued); with wait it lasts an
    # LLM call.
    params = flush_params(
        transcript,
        session_id,
        workspace=workspace,
        wait=wait,
        trigger=trigger,
        session_kind=session_kind,
    )
    return Call("flush", params, FlushResult.from_wire, long=wait)


def flush_agent(
    transcript: str | Path, session_id: str, *, workspace: str | None = None
) -> Call[AgentFlushResult]:
    # Not resent after a dropped connection: the offset may have moved.
    params = flush_params(transcript, session_id, workspace=workspace)
    return Call("flush.agent", params, AgentFlushResult.from_wire)


def observe(session_id: str | None, event: str, **params: str | None) -> Call[ObserveResult]:
    # Idempotent: a user message or a read observed twice is the same state.
    return Call("observe", observe_params(session_id, event, **params), ObserveResult.from_wire)


def stats(*, days: int | None = None, workspace: str | None = None) -> Call[StatsResult]:
    return Call("stats", omit_none(days=days, workspace=workspace), StatsResult.from_wire)


def review_list(*, workspace: str | None = None) -> Call[ReviewList]:
    return Call("review.list", omit_none(workspace=workspace), ReviewList.from_wire)


def review_approve(item: str, *, workspace: str | None = None) -> Call[ReviewItem]:
    def approved(data: Any) -> ReviewItem:
        return ReviewItem.from_wire(data.get("approved") if isinstance(data, dict) else None)

    return Call("review.approve", omit_none(id=item, workspace=workspace), approved)


def review_reject(
    item: str, *, workspace: str | None = None
) -> Call[tuple[ReviewItem, ForgetResult]]:
    def rejected(data: Any) -> tuple[ReviewItem, ForgetResult]:
        if not isinstance(data, dict):
            raise BadResponse(f"malformed review.reject result from the daemon: {data!r}")
        return ReviewItem.from_wire(data.get("rejected")), ForgetResult.from_wire(
            data.get("forget")
        )

    return Call("review.reject", omit_none(id=item, workspace=workspace), rejected)


def reindex(
    *,
    workspace: str | None = None,
    full: bool = False,
    wait: bool = False,
    on_progress: ProgressCallback | None = None,
) -> Call[ReindexResult]:
    params = omit_none(workspace=workspace, full=full or None, wait=wait or None)
    return Call("reindex", params, ReindexResult.from_wire, on_progress=on_progress, long=True)


def workspace_add(
    path: str | Path,
    name: str | None = None,
    *,
    wait: bool = False,
    on_progress: ProgressCallback | None = None,
    openclaw_home: str | None = None,
) -> Call[WorkspaceChange]:
    """``wait``: answer once the workspace is indexed, its vectors too (as reindex wait);
    ``openclaw_home``: the workspace is OpenClaw's, whose session stores are under it."""
    params = omit_none(path=str(path), name=name, wait=wait or None, openclaw_home=openclaw_home)
    return Call(
        "workspace.add", params, WorkspaceChange.from_wire_added, on_progress=on_progress, long=wait
    )


def workspace_remove(workspace: str | Path, *, delete_index: bool = False) -> Call[WorkspaceChange]:
    params = omit_none(workspace=str(workspace), delete_index=delete_index or None)
    return Call("workspace.remove", params, WorkspaceChange.from_wire_removed)


def _workspaces(result: Any) -> list[WorkspaceInfo]:
    return WorkspaceList.from_wire(result).workspaces


def workspace_list() -> Call[list[WorkspaceInfo]]:
    return Call("workspace.list", {}, _workspaces)


def jobs_list(
    *, workspace: str | None = None, name: str | None = None, history: int | None = None
) -> Call[JobsList]:
    params = omit_none(workspace=workspace, name=name, history=history)
    return Call("jobs.list", params, JobsList.from_wire)


def jobs_run(
    name: str,
    *,
    workspace: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    on_progress: ProgressCallback | None = None,
) -> Call[JobRun]:
    # Not resent after a dropped connection: the run may have happened (an LLM call, a write).
    params = omit_none(name=name, workspace=workspace, dry_run=dry_run or None, force=force or None)
    return Call("jobs.run", params, JobRun.from_wire, on_progress=on_progress, long=True)


def sync_enable(
    remote: str, *, workspace: str | None = None, branch: str | None = None, repo: str | None = None
) -> Call[SyncRun]:
    # Not resent: the first sync (a commit, a push) may have happened.
    params = omit_none(workspace=workspace, remote=remote, branch=branch, repo=repo)
    return Call("sync.enable", params, SyncRun.from_wire, long=True)


def sync_disable(*, workspace: str | None = None) -> Call[dict[str, Any]]:
    return Call("sync.disable", omit_none(workspace=workspace), _identity)


def sync_status(*, workspace: str | None = None) -> Call[SyncList]:
    return Call("sync.status", omit_none(workspace=workspace), SyncList.from_wire)


def sync_now(*, workspace: str | None = None) -> Call[list[SyncRun]]:
    def runs(data: Any) -> list[SyncRun]:
        items = data.get("workspaces") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise BadResponse("sync.now result: workspaces must be a list")
        return [SyncRun.from_wire(x) for x in items]

    # A sync twice is a sync: resent after a dropped connection.
    return Call("sync.now", omit_none(workspace=workspace), runs, long=True)


def shutdown() -> Call[None]:
    # Not resent: a dropped connection is the daemon going down, and a second send could
    # reach (or, with autostart, start) a daemon that came up since.
    return Call("shutdown", {}, _none)


def raw(method: str, params: dict[str, Any] | None = None) -> Call[Any]:
    """Any method by name, result as the wire map (for methods newer than this client)."""
    return Call(method, dict(params or {}), _identity)


# ------------------------------------------------------------------ answers


def progress_of(frame: dict[str, Any]) -> Progress | None:
    """The progress carried by an event frame (None for other kinds of events)."""
    if frame.get("event") != "progress":
        return None
    try:
        return Progress.from_wire(frame.get("data") or {})
    except BadResponse:
        return None


def result_of(call: Call[T], frame: dict[str, Any]) -> T:
    """The converted result of a final response frame, or the RemoteError it carries."""
    return call.convert(_connection.result_of(call.method, frame))


def check_hello(hello_result: Hello, socket: Path) -> Hello:
    if hello_result.protocol != protocol.PROTOCOL_VERSION:
        raise ProtocolMismatch(hello_result.protocol, hello_result.version, socket)
    return hello_result
