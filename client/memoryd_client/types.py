"""Typed results of the client calls, built from the wire maps (docs/protocol.md).

Forward compatible: keys this client does not know are ignored (and kept in ``raw`` on the
top-level results, which is what ``memctl --json`` prints); a missing optional key takes its
default. A missing required key or a value of the wrong type is a :class:`BadResponse`.

Plain dataclasses, each with a docstring: frozen ones (and ones without a docstring, which
dataclasses describe with ``inspect.signature``) cost twice the import time, which every
``memctl`` run pays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memoryd_client.errors import BadResponse


class _Fields:
    """Typed access to one wire map; ``what`` names it in error messages."""

    def __init__(self, data: Any, what: str) -> None:
        if not isinstance(data, dict):
            raise BadResponse(f"malformed {what} from the daemon: expected a map, got {data!r}")
        self.data: dict[str, Any] = data
        self.what = what

    def _bad(self, key: str, expected: str) -> BadResponse:
        return BadResponse(
            f"malformed {self.what} from the daemon: {key!r} should be {expected}, "
            f"got {self.data.get(key)!r}"
        )

    def get_str(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def get_opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def get_int(self, key: str, default: int | None = None) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer")
        return value

    def get_opt_int(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.get_int(key)

    def get_float(self, key: str, default: float | None = None) -> float:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, "a number")
        return float(value)

    def get_opt_float(self, key: str) -> float | None:
        return None if self.data.get(key) is None else self.get_float(key)

    def get_bool(self, key: str, default: bool = False) -> bool:
        return bool(self.data.get(key, default))

    def get_list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._bad(key, "a list")
        return value

    def get_dict(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self._bad(key, "a map")
        return value

    def get_strs(self, key: str) -> list[str]:
        """A list of strings; a single string is accepted as a list of one."""
        value = self.data.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list):
            raise self._bad(key, "a list of strings")
        return [str(v) for v in value]


@dataclass
class Hello:
    """The answer to ``hello``: who the daemon is and which protocol it speaks."""

    server: str
    version: str
    protocol: int
    pid: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> Hello:
        f = _Fields(data, "hello result")
        return cls(
            server=f.get_str("server", "memoryd"),
            version=f.get_str("version", "unknown"),
            protocol=f.get_int("protocol"),
            pid=f.get_opt_int("pid"),
            raw=f.data,
        )


@dataclass
class SearchHit:
    """One search result: a chunk's line range in a workspace-relative file, and a snippet."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str = "memory"
    snippet_start_line: int | None = None
    snippet_end_line: int | None = None
    heading: str | None = None
    vector_score: float | None = None
    text_score: float | None = None
    workspace: str | None = None  # set when one search spans several workspaces
    host: str | None = None  # fleet mode: the host that published it

    @classmethod
    def from_wire(cls, data: Any) -> SearchHit:
        f = _Fields(data, "search hit")
        return cls(
            path=f.get_str("path"),
            start_line=f.get_int("start_line"),
            end_line=f.get_int("end_line"),
            score=f.get_float("score"),
            snippet=f.get_str("snippet", ""),
            source=f.get_str("source", "memory"),
            snippet_start_line=f.get_opt_int("snippet_start_line"),
            snippet_end_line=f.get_opt_int("snippet_end_line"),
            heading=f.get_opt_str("heading"),
            vector_score=f.get_opt_float("vector_score"),
            text_score=f.get_opt_float("text_score"),
            host=f.get_opt_str("host"),
            workspace=f.get_opt_str("workspace"),
        )


@dataclass
class SearchResult:
    """The answer to ``search``: ranked hits and how they were found."""

    results: list[SearchHit]
    mode_used: str | None = None
    provider: str | None = None
    model: str | None = None
    degraded: list[str] = field(default_factory=list)
    took_ms: float | None = None
    index_generation: int | None = None
    pending_files: int = 0
    waited_ms: float | None = None
    stale: bool = False
    notices: list[str] = field(default_factory=list)  # why there are no or fewer hits
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> SearchResult:
        f = _Fields(data, "search result")
        return cls(
            results=[SearchHit.from_wire(hit) for hit in f.get_list("results")],
            mode_used=f.get_opt_str("mode_used"),
            provider=f.get_opt_str("provider"),
            model=f.get_opt_str("model"),
            degraded=f.get_strs("degraded"),
            took_ms=f.get_opt_float("took_ms"),
            index_generation=f.get_opt_int("index_generation"),
            pending_files=f.get_int("pending_files", 0),
            waited_ms=f.get_opt_float("waited_ms"),
            stale=f.get_bool("stale"),
            notices=f.get_strs("notices"),
            raw=f.data,
        )


@dataclass
class GetResult:
    """The answer to ``get``: ``lines`` lines of ``path`` from line ``from_line``."""

    path: str
    from_line: int
    lines: int
    text: str
    total_lines: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> GetResult:
        f = _Fields(data, "get result")
        return cls(
            path=f.get_str("path"),
            from_line=f.get_int("from", 1),
            lines=f.get_int("lines", 0),
            text=f.get_str("text"),
            total_lines=f.get_int("total_lines", 0),
            raw=f.data,
        )


@dataclass
class AppendResult:
    """The answer to ``append``: where the text was written."""

    path: str
    start_line: int
    end_line: int
    bytes: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> AppendResult:
        f = _Fields(data, "append result")
        return cls(
            path=f.get_str("path"),
            start_line=f.get_int("start_line", 0),
            end_line=f.get_int("end_line", 0),
            bytes=f.get_int("bytes", 0),
            raw=f.data,
        )


@dataclass
class Progress:
    """One ``progress`` event of a long call (``reindex``)."""

    phase: str
    done: int
    total: int | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> Progress:
        f = _Fields(data, "progress event")
        return cls(
            phase=f.get_str("phase", ""),
            done=f.get_int("done", 0),
            total=f.get_opt_int("total"),
            raw=f.data,
        )


@dataclass
class ReindexResult:
    """The answer to ``reindex``: counts and timings."""

    files_scanned: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    chunks_written: int = 0
    chunks_removed: int = 0
    seconds: float = 0.0
    vectors_pending: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> ReindexResult:
        f = _Fields(data, "reindex result")
        return cls(
            files_scanned=f.get_int("files_scanned", 0),
            files_changed=f.get_int("files_changed", 0),
            files_removed=f.get_int("files_removed", 0),
            files_skipped=f.get_int("files_skipped", 0),
            chunks_written=f.get_int("chunks_written", 0),
            chunks_removed=f.get_int("chunks_removed", 0),
            seconds=f.get_float("seconds", 0.0),
            vectors_pending=f.get_int("vectors_pending", 0),
            raw=f.data,
        )


@dataclass
class ProviderStatus:
    """The embedding provider in use, and why it was chosen."""

    name: str
    model: str | None = None
    dims: int | None = None
    reason: str | None = None

    @classmethod
    def from_wire(cls, data: Any) -> ProviderStatus:
        f = _Fields(data if data is not None else {}, "provider status")
        return cls(
            name=f.get_str("name", "unknown"),
            model=f.get_opt_str("model"),
            dims=f.get_opt_int("dims"),
            reason=f.get_opt_str("reason"),
        )


@dataclass
class JobRun:
    """One run of a job (``jobs.run``'s answer, ``jobs.list`` history and last runs).

    ``status`` is ``ok``, ``skipped`` or ``failed`` (``running`` while in progress);
    times are local ISO 8601 strings; ``report`` is the job's small JSON report (for a
    hippocampus dry run, ``report["diff"]`` is the unified diff it would apply).
    """

    status: str
    message: str = ""
    job: str | None = None
    workspace: str | None = None
    trigger: str | None = None
    dry_run: bool = False
    scheduled_for: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    seconds: float | None = None
    id: int | None = None
    report: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> JobRun:
        f = _Fields(data, "job run")
        return cls(
            status=f.get_str("status"),
            message=f.get_str("message", ""),
            job=f.get_opt_str("job"),
            workspace=f.get_opt_str("workspace"),
            trigger=f.get_opt_str("trigger"),
            dry_run=f.get_bool("dry_run"),
            scheduled_for=f.get_opt_str("scheduled_for"),
            started_at=f.get_opt_str("started_at"),
            ended_at=f.get_opt_str("ended_at"),
            seconds=f.get_opt_float("seconds"),
            id=f.get_opt_int("id"),
            report=f.get_dict("report"),
            raw=f.data,
        )


@dataclass
class RecallItem:
    """One snippet ``recall`` chose, with its citation ``path#Lstart-Lend``."""

    path: str
    start_line: int
    end_line: int
    score: float
    text: str
    source: str = "memory"
    citation: str = ""

    @classmethod
    def from_wire(cls, data: Any) -> RecallItem:
        f = _Fields(data, "recall item")
        return cls(
            path=f.get_str("path"),
            start_line=f.get_int("start_line"),
            end_line=f.get_int("end_line"),
            score=f.get_float("score"),
            text=f.get_str("text", ""),
            source=f.get_str("source", "memory"),
            citation=f.get_str("citation", ""),
        )


@dataclass
class RecallResult:
    """The answer to ``recall``: ``markdown``, the block to put before the model as it is
    (``""`` when nothing was worth adding), the snippets in it and its size in tokens."""

    markdown: str
    results: list[RecallItem]
    tokens: int = 0
    budget_tokens: int | None = None
    took_ms: float | None = None
    degraded: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> RecallResult:
        f = _Fields(data, "recall result")
        return cls(
            markdown=f.get_str("markdown", ""),
            results=[RecallItem.from_wire(item) for item in f.get_list("results")],
            tokens=f.get_int("tokens", 0),
            budget_tokens=f.get_opt_int("budget_tokens"),
            took_ms=f.get_opt_float("took_ms"),
            degraded=f.get_strs("degraded"),
            raw=f.data,
        )


@dataclass
class FlushResult:
    """The answer to ``flush``: the run was queued for ``workspace``; with ``wait``, ``run``
    is its record once it ended (``ok``, ``skipped`` or ``failed``, as for a job)."""

    queued: bool
    workspace: str | None = None
    run: JobRun | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> FlushResult:
        f = _Fields(data, "flush result")
        run = f.data.get("run")
        return cls(
            queued=f.get_bool("queued"),
            workspace=f.get_opt_str("workspace"),
            run=None if run is None else JobRun.from_wire(run),
            raw=f.data,
        )


@dataclass
class JobInfo:
    """One job for one workspace: schedule, next run, last result (``jobs.list``, ``status``)."""

    name: str
    schedule: str = ""
    enabled: bool = True
    next_run: str | None = None
    running: bool = False
    last_run: JobRun | None = None
    workspace: str | None = None
    summary: str | None = None
    uses_llm: bool = False
    history: list[JobRun] = field(default_factory=list)

    @classmethod
    def from_wire(cls, data: Any) -> JobInfo:
        f = _Fields(data, "job entry")
        last = f.data.get("last_run")
        return cls(
            name=f.get_str("name"),
            schedule=f.get_str("schedule", ""),
            enabled=f.get_bool("enabled", True),
            next_run=f.get_opt_str("next_run"),
            running=f.get_bool("running"),
            last_run=None if last is None else JobRun.from_wire(last),
            workspace=f.get_opt_str("workspace"),
            summary=f.get_opt_str("summary"),
            uses_llm=f.get_bool("uses_llm"),
            history=[JobRun.from_wire(r) for r in f.get_list("history")],
        )


@dataclass
class JobsList:
    """The answer to ``jobs.list``: every (job, workspace), the time zone, the LLM's state."""

    jobs: list[JobInfo]
    timezone: str | None = None
    llm: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> JobsList:
        f = _Fields(data, "jobs.list result")
        return cls(
            jobs=[JobInfo.from_wire(j) for j in f.get_list("jobs")],
            timezone=f.get_opt_str("timezone"),
            llm=f.get_dict("llm"),
            raw=f.data,
        )


def _embedding(data: dict[str, Any], key: str) -> float | None:
    block = data.get("embedding")
    value = block.get(key) if isinstance(block, dict) else None
    return float(value) if isinstance(value, int | float) else None


@dataclass
class WorkspaceStatus:
    """One workspace in ``status``."""

    name: str
    path: str
    files: int = 0
    chunks: int = 0
    pending_vectors: int = 0
    pending_files: int = 0
    last_sync: str | float | None = None
    index_generation: int | None = None
    vector_ready: bool = False
    degraded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    watcher: str | None = None
    sqlite_vec: str | None = None
    """The sqlite-vec version loaded for this index (None: not loaded or not reported)."""
    vector_scan: str | None = None
    """Where the KNN runs: "memory" (numpy over a copy of the vectors) or "sqlite-vec"."""
    keyword_scan: str | None = None
    embedding_rate: float | None = None  # chunks embedded per second, while some wait
    embedding_eta_s: float | None = None
    """Where BM25 is scored: "memory" (numpy over a copy of the keyword index), "fts5", or
    "loading" (FTS5 while the copy loads)."""
    jobs: list[JobInfo] = field(default_factory=list)
    """Each scheduled job's next run and last result for this workspace."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> WorkspaceStatus:
        f = _Fields(data, "workspace status")
        last_sync = f.data.get("last_sync")
        watcher = f.data.get("watcher")
        return cls(
            name=f.get_str("name"),
            path=f.get_str("path"),
            files=f.get_int("files", 0),
            chunks=f.get_int("chunks", 0),
            pending_vectors=f.get_int("pending_vectors", 0),
            pending_files=f.get_int("pending_files", 0),
            last_sync=last_sync if isinstance(last_sync, str | int | float) else None,
            index_generation=f.get_opt_int("index_generation"),
            vector_ready=f.get_bool("vector_ready"),
            degraded=f.get_strs("degraded"),
            skipped={str(k): str(v) for k, v in f.get_dict("skipped").items()},
            watcher=None if watcher is None else str(watcher),
            sqlite_vec=None if f.data.get("sqlite_vec") is None else str(f.data["sqlite_vec"]),
            vector_scan=None if f.data.get("vector_scan") is None else str(f.data["vector_scan"]),
            keyword_scan=(
                None if f.data.get("keyword_scan") is None else str(f.data["keyword_scan"])
            ),
            jobs=[JobInfo.from_wire(j) for j in f.get_list("jobs")],
            embedding_rate=_embedding(f.data, "rate_per_s"),
            embedding_eta_s=_embedding(f.data, "eta_s"),
            raw=f.data,
        )


@dataclass
class Status:
    """The answer to ``status``."""

    version: str
    pid: int | None
    uptime_s: float
    socket: str | None
    config_source: str | None
    provider: ProviderStatus
    workspaces: list[WorkspaceStatus]
    degraded: list[str] = field(default_factory=list)  # the daemon's own (e.g. state rebuilt)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> Status:
        f = _Fields(data, "status result")
        return cls(
            version=f.get_str("version", "unknown"),
            pid=f.get_opt_int("pid"),
            uptime_s=f.get_float("uptime_s", 0.0),
            socket=f.get_opt_str("socket"),
            config_source=None
            if f.data.get("config_source") is None
            else str(f.data["config_source"]),
            provider=ProviderStatus.from_wire(f.data.get("provider")),
            workspaces=[WorkspaceStatus.from_wire(w) for w in f.get_list("workspaces")],
            degraded=f.get_strs("degraded"),
            raw=f.data,
        )


@dataclass
class WorkspaceInfo:
    """One registered workspace (``workspace.list``)."""

    name: str
    path: str
    source: str = "registry"

    @classmethod
    def from_wire(cls, data: Any) -> WorkspaceInfo:
        f = _Fields(data, "workspace entry")
        return cls(
            name=f.get_str("name"), path=f.get_str("path"), source=f.get_str("source", "registry")
        )


@dataclass
class WorkspaceList:
    """The answer to ``workspace.list``."""

    workspaces: list[WorkspaceInfo]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, data: Any) -> WorkspaceList:
        f = _Fields(data, "workspace.list result")
        return cls(
            workspaces=[WorkspaceInfo.from_wire(w) for w in f.get_list("workspaces")], raw=f.data
        )


@dataclass
class WorkspaceChange:
    """The answer of ``workspace.add`` (``changed`` = added) or ``.remove`` (= removed)."""

    name: str
    path: str
    changed: bool
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire_added(cls, data: Any) -> WorkspaceChange:
        f = _Fields(data, "workspace.add result")
        return cls(
            name=f.get_str("name"), path=f.get_str("path"), changed=f.get_bool("added"), raw=f.data
        )

    @classmethod
    def from_wire_removed(cls, data: Any) -> WorkspaceChange:
        f = _Fields(data, "workspace.remove result")
        return cls(
            name=f.get_str("name"),
            path=f.get_str("path"),
            changed=f.get_bool("removed"),
            raw=f.data,
        )


__all__ = [
    "AppendResult",
    "GetResult",
    "Hello",
    "JobInfo",
    "JobRun",
    "JobsList",
    "Progress",
    "ProviderStatus",
    "ReindexResult",
    "SearchHit",
    "SearchResult",
    "Status",
    "WorkspaceChange",
    "WorkspaceInfo",
    "WorkspaceList",
    "WorkspaceStatus",
]
