"""Typed results of the client calls, built from the wire maps (docs/protocol.md) by
``_wire``: each field is read by its type, or by the reader or wire default in its metadata.

Forward compatible: keys this client does not know are ignored (and kept in ``raw`` on the
top-level results, which is what ``memctl --json`` prints); a missing optional key takes its
default. A missing required key or a value of the wrong type is a :class:`BadResponse`.

Plain dataclasses, each with a docstring: frozen ones (and ones without a docstring, which
dataclasses describe with ``inspect.signature``) cost twice the import time, which every
``memctl`` run pays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from memoryd_client._wire import Reader, _absent, _Fields, _read, _Wire
from memoryd_client._wire_rows import read_rows
from memoryd_client.trust_types import LineOrigin

# ---------------------------------------------------------------- field readers


def _any_str(f: _Fields, key: str) -> str | None:
    """Any value as its string (a name the daemon may one day give as a number)."""
    value = f.data.get(key)
    return None if value is None else str(value)


def _time(f: _Fields, key: str) -> str | float | None:
    """A time as the daemon gives it: an ISO string or seconds since the epoch."""
    value = f.data.get(key)
    return value if isinstance(value, str | int | float) else None


def _str_map(f: _Fields, key: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in f.get_dict(key).items()}


def _embedding(name: str) -> Reader:
    """One number of status's ``embedding`` block (absent while nothing waits)."""

    def read(f: _Fields, key: str) -> float | None:
        block = f.data.get("embedding")
        value = block.get(name) if isinstance(block, dict) else None
        return float(value) if isinstance(value, int | float) else None

    return read


@dataclass
class Hello(_Wire):
    """The answer to ``hello``: who the daemon is and which protocol it speaks."""

    _what: ClassVar[str] = "hello result"

    server: str = field(metadata=_absent("memoryd"))
    version: str = field(metadata=_absent("unknown"))
    protocol: int
    pid: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class SearchHit(_Wire):
    """One search result: a chunk's line range in a workspace-relative file, and a snippet."""

    _what: ClassVar[str] = "search hit"

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str = field(metadata=_absent(""))
    source: str = "memory"
    snippet_start_line: int | None = None
    snippet_end_line: int | None = None
    heading: str | None = None
    vector_score: float | None = None
    text_score: float | None = None
    workspace: str | None = None  # set when one search spans several workspaces
    host: str | None = None  # fleet mode: the host that published it
    # What the lines say of themselves (docs/provenance.md); absent: nothing known.
    tier: str | None = None  # curated | episodic | sessions
    origin: str | None = None  # owner | agent | untrusted | system (None: owner's)
    session_id: str | None = None
    importance: int | None = None
    triggers: list[str] = field(default_factory=list)
    project: str | None = None
    key: str | None = None
    supersedes: list[str] = field(default_factory=list)  # keyed lines it stands over
    superseded: bool = False  # with include_superseded: it shows a superseded line
    # Each snippet line with a recorded origin (``origin`` is the least trusted of them).
    line_origins: list[LineOrigin] = field(default_factory=list)


def _hits(f: _Fields, key: str) -> list[SearchHit]:
    """A search's hits: a list of maps, or rows (``protocol.hit_rows``: the typed clients
    ask a daemon that can for them)."""
    value = f.data.get(key)
    if value.__class__ is dict:
        return read_rows(SearchHit, value, f.what, key)
    return [SearchHit.from_wire(v) for v in f.get_list(key)]


@dataclass
class SearchResult(_Wire):
    """The answer to ``search``: ranked hits and how they were found. ``raw`` is the map
    as the daemon sent it: its ``results`` are rows when the client asked for them
    (``protocol.hit_maps`` makes them maps)."""

    _what: ClassVar[str] = "search result"

    results: list[SearchHit] = field(metadata=_read(_hits))
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
    dates: dict[str, Any] = field(default_factory=dict)  # the time the query named: {since, until}
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class GetResult(_Wire):
    """The answer to ``get``: ``lines`` lines of ``path`` from line ``from_line``."""

    _what: ClassVar[str] = "get result"

    path: str
    from_line: int = field(metadata=_absent(1, key="from"))
    lines: int = field(metadata=_absent(0))
    text: str
    total_lines: int = field(metadata=_absent(0))
    masked: int = field(metadata=_absent(0))  # secrets masked in ``text`` (not with raw)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Forgotten(_Wire):
    """One file's part of a forget: its lines (ranges) and their text (secrets masked), or
    the whole file (a transcript)."""

    _what: ClassVar[str] = "forgotten lines"

    path: str
    text: str = field(metadata=_absent(""))
    lines: list[str] = field(default_factory=list)  # "12" or "12-15"
    whole_file: bool = False
    via: list[str] = field(default_factory=list)  # the links to it the request named


@dataclass
class UnmatchedHit(_Wire):
    """A hit of ``forget --query`` no line of which holds a query word: nothing taken."""

    _what: ClassVar[str] = "unmatched hit"

    path: str
    lines: list[str] = field(default_factory=list)


@dataclass
class ForgetResult(_Wire):
    """The answer to ``forget``: what went (or, with ``dry_run``, what would go)."""

    _what: ClassVar[str] = "forget result"

    dry_run: bool
    removed: list[Forgotten]
    lines: int = field(metadata=_absent(0))
    files: int = field(metadata=_absent(0))
    pruned: int = field(metadata=_absent(0))
    cache_entries_removed: int = field(metadata=_absent(0))
    session_id: str | None = None
    left_outside: list[str] = field(default_factory=list)  # transcripts not deleted
    # --query: hits no line of which holds a query word (found by meaning): nothing taken
    unmatched: list[UnmatchedHit] = field(default_factory=list)
    kept: str | None = None  # where the pre-image is kept (None: dry run or purge)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class ExportResult(_Wire):
    """The answer to ``export``: the archive written and how many files it holds."""

    _what: ClassVar[str] = "export result"

    path: str
    files: int = field(metadata=_absent(0))
    bytes: int = field(metadata=_absent(0))
    sha256: str | None = None
    name: str | None = None  # written into the exports folder: its file name
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class ImportResult(_Wire):
    """The answer to ``import``: what the archive added (nothing twice)."""

    _what: ClassVar[str] = "import result"

    files_created: int = field(metadata=_absent(0))
    files_merged: int = field(metadata=_absent(0))
    lines_added: int = field(metadata=_absent(0))
    lines_already_there: int = field(metadata=_absent(0))
    redacted: int = field(metadata=_absent(0))
    ledger_records_added: int = field(metadata=_absent(0))
    dry_run: bool = False
    kept: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class AppendResult(_Wire):
    """The answer to ``append``: where the text was written."""

    _what: ClassVar[str] = "append result"

    path: str
    start_line: int = field(metadata=_absent(0))
    end_line: int = field(metadata=_absent(0))
    bytes: int = field(metadata=_absent(0))
    redacted: list[str] = field(default_factory=list)  # kinds of secret replaced
    # Every line was already in that day's note or MEMORY.md: nothing written; ``path`` and
    # ``start_line`` say where it is (``existing``).
    duplicate: bool = False
    # What the lines were recorded with: the least trusted of the declared origin and what
    # the session read (docs/provenance.md); None from a daemon before that.
    origin: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Progress(_Wire):
    """One ``progress`` event of a long call (``reindex``)."""

    _what: ClassVar[str] = "progress event"

    phase: str = field(metadata=_absent(""))
    done: int = field(metadata=_absent(0))
    total: int | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class ReindexResult(_Wire):
    """The answer to ``reindex``: counts and timings."""

    _what: ClassVar[str] = "reindex result"

    files_scanned: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    chunks_written: int = 0
    chunks_removed: int = 0
    seconds: float = 0.0  # the keyword index's sync
    vectors_pending: int = 0
    vectors_seconds: float | None = None  # with wait: the vectors' time after the sync
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class ProviderStatus(_Wire):
    """The embedding provider in use, and why it was chosen."""

    _what: ClassVar[str] = "provider status"

    name: str = field(metadata=_absent("unknown"))
    model: str | None = None
    dims: int | None = None
    reason: str | None = None


@dataclass
class JobRun(_Wire):
    """One run of a job (``jobs.run``'s answer, ``jobs.list`` history and last runs).

    ``status`` is ``ok``, ``skipped`` or ``failed`` (``running`` while in progress);
    times are local ISO 8601 strings; ``report`` is the job's small JSON report (for a
    hippocampus dry run, ``report["diff"]`` is the unified diff it would apply).
    """

    _what: ClassVar[str] = "job run"

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


@dataclass
class RecallItem(_Wire):
    """One snippet ``recall`` chose, with its citation ``path#Lstart-Lend``."""

    _what: ClassVar[str] = "recall item"

    path: str
    start_line: int
    end_line: int
    score: float
    text: str = field(metadata=_absent(""))
    source: str = "memory"
    citation: str = ""
    trigger: str | None = None  # the trigger phrase that brought it first (recall's lane)
    superseded: bool = False  # with include_superseded: it shows a superseded line
    superseded_by: list[str] = field(default_factory=list)  # "path#Lnn" of the newer lines


@dataclass
class RecallResult(_Wire):
    """The answer to ``recall``: ``markdown``, the block to put before the model as it is
    (``""`` when nothing was worth adding), the snippets in it and its size in tokens."""

    _what: ClassVar[str] = "recall result"

    markdown: str = field(metadata=_absent(""))
    results: list[RecallItem]
    tokens: int = 0
    budget_tokens: int | None = None
    took_ms: float | None = None
    degraded: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class FlushResult(_Wire):
    """The answer to ``flush``: the run was queued for ``workspace``; with ``wait``, ``run``
    is its record once it ended (``ok``, ``skipped`` or ``failed``, as for a job)."""

    _what: ClassVar[str] = "flush result"

    queued: bool
    workspace: str | None = None
    run: JobRun | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class AgentFlushResult(_Wire):
    """The answer to ``flush.agent``: whether the agent's own model should save the
    session's durable facts now (lines ``from_line``..``to_line``, ``chars`` of user and
    assistant text); when ``due``, the daemon has already moved the session's offset."""

    _what: ClassVar[str] = "flush.agent result"

    due: bool
    workspace: str | None = None
    from_line: int = 0
    to_line: int = 0
    chars: int = 0
    min_chars: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class JobInfo(_Wire):
    """One job for one workspace: schedule, next run, last result (``jobs.list``, ``status``)."""

    _what: ClassVar[str] = "job entry"

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


@dataclass
class JobsList(_Wire):
    """The answer to ``jobs.list``: every (job, workspace), the time zone, the LLM's state."""

    _what: ClassVar[str] = "jobs.list result"

    jobs: list[JobInfo]
    timezone: str | None = None
    llm: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class WorkspaceStatus(_Wire):
    """One workspace in ``status``."""

    _what: ClassVar[str] = "workspace status"

    name: str
    path: str
    files: int = 0
    chunks: int = 0
    pending_vectors: int = 0
    pending_files: int = 0
    last_sync: str | float | None = field(default=None, metadata=_read(_time))
    index_generation: int | None = None
    vector_ready: bool = False
    degraded: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict, metadata=_read(_str_map))
    watcher: str | None = field(default=None, metadata=_read(_any_str))
    sqlite_vec: str | None = field(default=None, metadata=_read(_any_str))
    """The sqlite-vec version loaded for this index (None: not loaded or not reported)."""
    vector_scan: str | None = field(default=None, metadata=_read(_any_str))
    """Where the KNN runs: "memory" (numpy over a copy of the vectors) or "sqlite-vec"."""
    keyword_scan: str | None = field(default=None, metadata=_read(_any_str))
    """Where BM25 is scored: "memory" (numpy over a copy of the keyword index), "fts5", or
    "loading" (FTS5 while the copy loads)."""
    # Chunks embedded per second while some wait, and when all will be: status's
    # ``embedding: {rate_per_s, eta_s}``.
    embedding_rate: float | None = field(default=None, metadata=_read(_embedding("rate_per_s")))
    embedding_eta_s: float | None = field(default=None, metadata=_read(_embedding("eta_s")))
    jobs: list[JobInfo] = field(default_factory=list)
    """Each scheduled job's next run and last result for this workspace."""
    sessions_left_out: int = 0  # transcripts index.sessions = false leaves out of the index
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class Status(_Wire):
    """The answer to ``status``."""

    _what: ClassVar[str] = "status result"

    version: str = field(metadata=_absent("unknown"))
    pid: int | None
    uptime_s: float = field(metadata=_absent(0.0))
    socket: str | None
    config_source: str | None = field(metadata=_read(_any_str))
    provider: ProviderStatus
    workspaces: list[WorkspaceStatus]
    degraded: list[str] = field(default_factory=list)  # the daemon's own (e.g. state rebuilt)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class WorkspaceInfo(_Wire):
    """One registered workspace (``workspace.list``)."""

    _what: ClassVar[str] = "workspace entry"

    name: str
    path: str
    source: str = "registry"


@dataclass
class WorkspaceList(_Wire):
    """The answer to ``workspace.list``."""

    _what: ClassVar[str] = "workspace.list result"

    workspaces: list[WorkspaceInfo]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class WorkspaceChange:
    """The answer of ``workspace.add`` (``changed`` = added) or ``.remove`` (= removed)."""

    name: str
    path: str
    changed: bool
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    indexed: ReindexResult | None = None  # workspace.add with wait: the sync it waited for

    @classmethod
    def from_wire_added(cls, data: Any) -> WorkspaceChange:
        f = _Fields(data, "workspace.add result")
        indexed = f.data.get("indexed")
        return cls(
            name=f.get_str("name"),
            path=f.get_str("path"),
            changed=f.get_bool("added"),
            raw=f.data,
            indexed=None if indexed is None else ReindexResult.from_wire(indexed),
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
    "ExportResult",
    "ForgetResult",
    "Forgotten",
    "GetResult",
    "Hello",
    "ImportResult",
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
