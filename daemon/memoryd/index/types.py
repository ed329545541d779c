"""Plain data passed between the index engine and its callers (the daemon, bench, tests)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from memoryd.errors import InvalidParams
from memoryd.files.layout import ISO_DAY
from memoryd.records import Fields, Record
from memoryd_client.search_terms import (
    DEFAULT_MODE,
    DEFAULT_SOURCES,
    FUSIONS,
    MAX_QUERY_CHARS,
    MAX_RESULTS,
    MIN_SCORE_RANGE,
    MODES,
    SOURCES,
)
from memoryd_client.search_terms import Fusion as Fusion  # the vocabulary, for the engine's
from memoryd_client.search_terms import Mode as Mode  # callers

if TYPE_CHECKING:
    from dataclasses import dataclass as fields_record
    from dataclasses import dataclass as frozen_record  # records.py says why
    from typing import NamedTuple  # named_tuple.py says why
else:
    from memoryd.named_tuple import NamedTuple
    from memoryd.records import fields_record, frozen_record

try:  # _compiled_answer.c: the hits' maps; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - installs without a compiler
    compiled = None  # type: ignore[assignment]


class NotInMemory(Exception):
    """A search asked of the in-memory copies alone (``in_memory``) would have to ask SQLite
    for more than a few rows, or run the embedding model."""


@frozen_record(frozen=True, eq=False, repr=False)  # search_request() makes the daemon's
class SearchRequest(Record):
    """A search as asked: the query and its filters, checked when made."""

    query: str
    max_results: int | None = None  # None: config default
    min_score: float | None = None
    sources: tuple[str, ...] = DEFAULT_SOURCES  # search_terms.SOURCES
    mode: Mode = DEFAULT_MODE
    fusion: Fusion | None = None
    path_prefix: str | None = None  # workspace-relative, e.g. "memory/2024-"
    since: str | None = None  # YYYY-MM-DD, inclusive; only dated (daily/session) chunks pass
    until: str | None = None
    projects: tuple[str, ...] = ()  # active project keys: their tagged lines rank higher
    # YYYY-MM-DD: what "yesterday" and "last week" in the query count from, and recency's
    # today (None: the query's time words are not read; recency counts from the clock).
    today: str | None = None

    def __post_init__(self) -> None:
        """A request is checked once, when it is made: whoever makes one (the daemon's
        methods, bench, tests) gets ``invalid_params`` naming the field, and nothing
        downstream checks it again."""
        _check(self)


def search_request(
    query: str,
    max_results: int | None,
    min_score: float | None,
    sources: tuple[str, ...],
    mode: Mode,
    fusion: Fusion | None,
    path_prefix: str | None,
    since: str | None,
    until: str | None,
    projects: tuple[str, ...],
    today: str | None,
) -> SearchRequest:
    """``SearchRequest(...)`` of every field in order, checked the same, at a third of its
    cost (the daemon makes one a search: the generated ``__init__`` sets each field of a
    frozen class through ``object.__setattr__``)."""
    req = object.__new__(SearchRequest)
    object.__setattr__(  # its fields in order, as __init__ sets them
        req,
        "__dict__",
        {
            "query": query,
            "max_results": max_results,
            "min_score": min_score,
            "sources": sources,
            "mode": mode,
            "fusion": fusion,
            "path_prefix": path_prefix,
            "since": since,
            "until": until,
            "projects": projects,
            "today": today,
        },
    )
    _check(req)
    return req


def _check(req: SearchRequest) -> None:
    if not isinstance(req.query, str) or not req.query.strip():
        raise InvalidParams("query must be a non-empty string", {"param": "query"})
    if len(req.query) > MAX_QUERY_CHARS:
        raise InvalidParams(
            f"query must be at most {MAX_QUERY_CHARS} characters, got {len(req.query)}",
            {"param": "query"},
        )
    if req.max_results is not None and not 1 <= req.max_results <= MAX_RESULTS:
        raise InvalidParams(
            f"max_results must be 1..{MAX_RESULTS}, got {req.max_results}",
            {"param": "max_results"},
        )
    lo, hi = MIN_SCORE_RANGE
    if req.min_score is not None and not lo <= req.min_score <= hi:
        raise InvalidParams(
            f"min_score must be {lo:g}..{hi:g}, got {req.min_score}", {"param": "min_score"}
        )
    if req.mode not in MODES:
        raise InvalidParams(f"mode must be {_either(MODES)}, got {req.mode!r}", {"param": "mode"})
    if req.fusion is not None and req.fusion not in FUSIONS:
        raise InvalidParams(
            f"fusion must be {_either(FUSIONS)}, got {req.fusion!r}", {"param": "fusion"}
        )
    if not req.sources or not all(map(SOURCES.__contains__, req.sources)):
        raise InvalidParams(
            f"sources must be a non-empty subset of {', '.join(SOURCES)}, got {list(req.sources)}",
            {"param": "sources"},
        )
    if req.since is not None or req.until is not None:  # a search without them: no loop
        _check_days(req)


def _check_days(req: SearchRequest) -> None:
    for name in ("since", "until"):
        value = getattr(req, name)
        if value is not None and not (isinstance(value, str) and ISO_DAY.fullmatch(value)):
            raise InvalidParams(f"{name} must be YYYY-MM-DD, got {value!r}", {"param": name})
    if req.since and req.until and req.since > req.until:
        raise InvalidParams(
            f"since ({req.since}) must not be after until ({req.until})", {"param": "since"}
        )


def _either(words: Sequence[str]) -> str:
    return ", ".join(words[:-1]) + " or " + words[-1]


class SearchHit(NamedTuple):
    """One hit of an answer. A tuple (immutable, compared and hashed by its fields, shown as
    a dataclass would be): an answer makes ten, and a frozen dataclass's construction (a
    ``object.__setattr__`` per field) was ~5x a tuple's."""

    path: str  # workspace-relative, POSIX separators
    start_line: int
    end_line: int
    score: float
    snippet: str
    snippet_start_line: int
    snippet_end_line: int
    source: str
    heading: str = ""
    vector_score: float | None = None
    text_score: float | None = None
    tier: str = ""  # curated | episodic | sessions ('' from a peer that does not say)
    meta: HitMeta | None = None  # what the snippet's lines say of themselves (line_meta.py)

    def to_dict(self) -> dict[str, Any]:
        # Unpacked: a NamedTuple's field read is a descriptor call, an unpack is one step.
        (
            path,
            start,
            end,
            score,
            snippet,
            snip_start,
            snip_end,
            source,
            head,
            vec,
            txt,
            tier,
            meta,
        ) = self
        out: dict[str, Any] = {
            "path": path,
            "start_line": start,
            "end_line": end,
            "score": round(score, 6),
            "snippet": snippet,
            "snippet_start_line": snip_start,
            "snippet_end_line": snip_end,
            "source": source,
        }
        if head:
            out["heading"] = head
        if vec is not None:
            out["vector_score"] = round(vec, 6)
        if txt is not None:
            out["text_score"] = round(txt, 6)
        if tier:
            out["tier"] = tier
        if meta is not None:
            out.update(meta.to_dict())
        return out


@frozen_record(frozen=True, eq=False, repr=False)
class HitMeta(Record):
    """A hit's annotations and provenance; only what is known goes on the wire."""

    origin: str  # the least trusted of the snippet's lines ('owner': none has a record)
    session_id: str | None = None
    importance: int | None = None
    triggers: tuple[str, ...] = ()
    project: str | None = None
    key: str | None = None
    # Each snippet line with a recorded origin: (line, origin, session); a line not listed
    # is the owner's. Recall trims a mixed snippet to its eligible lines by them.
    lines: tuple[tuple[int, str, str | None], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"origin": self.origin}
        if self.session_id:
            out["session_id"] = self.session_id
        if self.lines:
            out["line_origins"] = [
                {"line": n, "origin": o, **({"session_id": s} if s else {})}
                for n, o, s in self.lines
            ]
        if self.importance is not None:
            out["importance"] = self.importance
        if self.triggers:
            out["triggers"] = list(self.triggers)
        if self.project:
            out["project"] = self.project
        if self.key:
            out["key"] = self.key
        return out


class SearchResponse(NamedTuple):
    """An answer (a tuple, as its hits are: one per search)."""

    results: list[SearchHit]
    provider: str  # "local" | "openai" | "none"
    model: str
    mode_used: Mode
    took_ms: float
    index_generation: int
    pending_files: int = 0
    degraded: str | None = None  # why vectors were not (fully) used
    dates: tuple[str | None, str | None] | None = None  # the time the query named (since, until)

    def to_dict(self, maps: bool = True) -> dict[str, Any]:
        """The answer's wire map; without ``maps`` its ``results`` are the hits themselves
        (the caller makes their wire form: ``hit_maps``, or rows)."""
        results, provider, model, mode_used, took_ms, generation, pending, degraded, dates = self
        out: dict[str, Any] = {
            "results": hit_maps(results) if maps else results,
            "provider": provider,
            "model": model,
            "mode_used": mode_used,
            "took_ms": round(took_ms, 3),
            "index_generation": generation,
            "pending_files": pending,
        }
        if degraded:
            out["degraded"] = degraded
        if dates is not None:
            out["dates"] = {"since": dates[0], "until": dates[1]}
        return out


def hit_maps(hits: list[SearchHit]) -> list[dict[str, Any]]:
    """``[hit.to_dict() for hit in hits]``, compiled (_compiled_answer.c) when it can be."""
    maps = compiled.hit_dicts(hits, SearchHit) if compiled is not None else None
    return [h.to_dict() for h in hits] if maps is None else maps


def hit_rows(hits: list[SearchHit]) -> dict[str, Any] | None:
    """``protocol.hit_rows(hit_maps(hits))`` made from the hits themselves (no maps) by the
    compiled part; None when it is absent or a hit has a meta (make the maps then)."""
    return compiled.hit_rows_of(hits, SearchHit) if compiled is not None else None


@frozen_record(frozen=True, eq=False, repr=False)
class SyncProgress(Record):
    """How far a sync got: its phase, and done of total."""

    phase: Literal["scanning", "indexing", "embedding"]
    done: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "done": self.done, "total": self.total}


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class SyncReport(Fields):
    """What a sync did: files scanned, changed, removed, skipped; chunks."""

    files_scanned: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    chunks_written: int = 0
    chunks_removed: int = 0
    seconds: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)  # path -> reason

    def to_dict(self) -> dict[str, Any]:
        return {
            "files_scanned": self.files_scanned,
            "files_changed": self.files_changed,
            "files_removed": self.files_removed,
            "files_skipped": self.files_skipped,
            "chunks_written": self.chunks_written,
            "chunks_removed": self.chunks_removed,
            "seconds": round(self.seconds, 3),
            "skipped": dict(self.skipped),
        }
