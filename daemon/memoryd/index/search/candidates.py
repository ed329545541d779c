"""A search's candidates: the chunks that keyword (FTS5 BM25, or the in-memory copy),
vector (the in-memory scan, or sqlite-vec KNN) and date lookups put forward, the filters
they pass, and their rows and window similarities read for fusion (fusion.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, fields
from typing import TYPE_CHECKING, Any

import apsw

from memoryd.embeddings.base import Vectors
from memoryd.index.keyword.build import chunks_on_days
from memoryd.index.keyword.counts import HEADING_WEIGHT, TEXT_WEIGHT
from memoryd.index.keyword.mirror import KeywordMirror
from memoryd.index.scratch import SCRATCH
from memoryd.index.search.rows import ChunkRows, Row, read_rows
from memoryd.index.store import VEC_TABLE
from memoryd.index.vectors.mirror import VectorMirror
from memoryd.index.vectors.window_sims import KeptWindows, window_sims
from memoryd.records import Fields
from memoryd.runtime.lazy_numpy import np
from memoryd_client.search_terms import SOURCES

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as fields_record
else:
    from memoryd.records import fields_record

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why
else:
    from memoryd.named_tuple import NamedTuple

try:  # _compiled_candidates.c: the candidates made from their rows; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - installs without a compiler
    compiled = None  # type: ignore[assignment]

BM25_WEIGHTS = f"{TEXT_WEIGHT}, {HEADING_WEIGHT}"  # bm25() column weights: text, heading
MAX_KNN = 4096  # sqlite-vec's own ceiling for k


@fields_record(slots=True, eq=False, repr=False)  # Fields' eq and repr (records.py)
class Candidate(Fields):
    """A chunk a search considers, with what ranking it needs."""

    id: int
    path: str = ""
    source: str = ""
    day: str = ""
    start_line: int = 0
    end_line: int = 0
    heading: str = ""
    text: str = ""
    embedded: bool = False
    bm25: float | None = None  # -bm25(): higher is better
    window_sim: float | None = None  # best cosine similarity among its windows
    best_window: int = -1  # which window that was
    lines: list[float] | None = None  # per-line query match (snippets.line_scores)


# What make_candidates sets: every field by name, in order (the id, a Row's, bm25, then the
# defaults of the rest: None unless each is a plain value and no __post_init__ runs).
_FIELDS = tuple(f.name for f in fields(Candidate))
_TAIL: tuple[Any, ...] | None = tuple(f.default for f in fields(Candidate)[10:])
if any(f.default is MISSING for f in fields(Candidate)[10:]) or hasattr(Candidate, "__post_init__"):
    _TAIL = None


class Filters(NamedTuple):
    """What a search lets through: sources, a path prefix, days (a tuple: one per search,
    made for a fraction of a frozen dataclass's cost)."""

    sources: tuple[str, ...]
    path_prefix: str | None
    since: str | None
    until: str | None
    indexed_sources: tuple[str, ...] = SOURCES  # what the index can hold

    @property
    def restrictive(self) -> bool:
        """Whether these filters can remove any chunk of this index."""
        return bool(
            self.path_prefix
            or self.since
            or self.until
            or (
                self.sources != self.indexed_sources  # the usual case: the same sources
                and not set(self.indexed_sources) <= set(self.sources)
            )
        )

    def chunk_sql(self, alias: str = "c") -> tuple[str, list[Any]]:
        parts = [f"{alias}.source IN ({','.join('?' * len(self.sources))})"]
        args: list[Any] = list(self.sources)
        if self.path_prefix:
            # Not LIKE: it ignores ASCII case, and "memory" would fill the LIMIT with MEMORY.md.
            parts.append(f"substr({alias}.path, 1, ?) = ?")
            args += [len(self.path_prefix), self.path_prefix]
        parts += self.day_sql(alias, args)
        return " AND ".join(parts), args

    def vec_sql(self) -> tuple[str, list[Any]]:
        if not self.restrictive:
            return "1", []
        parts = [f"source IN ({','.join('?' * len(self.sources))})"]
        args: list[Any] = list(self.sources)
        if self.path_prefix:  # sqlite-vec filters by its primary key before ranking
            parts.append("chunk_id IN (SELECT id FROM chunks WHERE substr(path, 1, ?) = ?)")
            args += [len(self.path_prefix), self.path_prefix]
        parts += self.day_sql(VEC_TABLE, args)
        return " AND ".join(parts), args

    def day_sql(self, alias: str, args: list[Any], mark: str = "?") -> list[str]:
        """The since/until conditions on ``alias.day``, their values appended to ``args``;
        ``mark``: the driver's placeholder (the fleet's Postgres takes %s)."""
        parts = []
        if self.since or self.until:
            parts.append(f"{alias}.day <> ''")  # undated chunks (MEMORY.md) have no date to match
        if self.since:
            parts.append(f"{alias}.day >= {mark}")
            args.append(self.since)
        if self.until:
            parts.append(f"{alias}.day <= {mark}")
            args.append(self.until)
        return parts

    def accepted(self, cands: Iterable[Candidate]) -> list[Candidate]:
        """The candidates it ``accepts``, in order (no call a candidate with no path or day
        to check)."""
        if self.path_prefix or self.since or self.until:
            return [c for c in cands if self.accepts(c)]
        sources = self.sources
        return [c for c in cands if c.source in sources]

    def accepts(self, c: Candidate) -> bool:
        return (
            c.source in self.sources
            and (not self.path_prefix or c.path.startswith(self.path_prefix))
            and (not (self.since or self.until) or c.day != "")
            and (not self.since or c.day >= self.since)
            and (not self.until or c.day <= self.until)
        )


def keyword_candidates(
    conn: apsw.Connection, match: str, filters: Filters, limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` best BM25 matches, best first, as (chunk id, -bm25).

    Joining ``chunks`` costs about five times the FTS query itself (it runs for every
    match, and an OR query of common words matches a third of a log), so the join is
    only made when a filter can actually remove chunks.
    """
    if filters.restrictive:
        where, args = filters.chunk_sql()
        sql = (
            f"SELECT c.id, bm25(chunks_fts, {BM25_WEIGHTS}) AS r FROM chunks_fts "
            f"JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? AND {where} "
            "ORDER BY r LIMIT ?"
        )
    else:
        sql, args = (
            (
                f"SELECT rowid, bm25(chunks_fts, {BM25_WEIGHTS}) AS r FROM chunks_fts "
                "WHERE chunks_fts MATCH ? ORDER BY r LIMIT ?"
            ),
            [],
        )
    return [(int(i), -float(r)) for i, r in conn.execute(sql, [match, *args, limit])]


def vector_candidates(
    conn: apsw.Connection,
    qvec: Vectors,
    filters: Filters,
    k: int,
    mirror: VectorMirror | None = None,
) -> list[int]:
    """Chunk ids of the ``k`` nearest chunk vectors, nearest first: the in-memory scan when
    the mirror can answer, else sqlite-vec's (the only one that filters by path prefix)."""
    if mirror is not None and not filters.path_prefix:
        sources = filters.sources if filters.restrictive else None
        ids = mirror.knn(qvec, min(k, MAX_KNN), sources, filters.since, filters.until)
        if ids is not None:
            return ids
    where, args = filters.vec_sql()
    sql = (
        f"SELECT chunk_id FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ? "
        f"AND {where} ORDER BY distance"
    )
    return [int(i) for (i,) in conn.execute(sql, [qvec.tobytes(), min(k, MAX_KNN), *args])]


def day_candidates(
    conn: apsw.Connection,
    days: Sequence[str],
    filters: Filters,
    limit: int,
    keywords: KeywordMirror | None = None,
) -> list[int]:
    """Chunks of the daily logs of the given days: the keyword copy's columns when it holds
    them and only sources filter (build.chunks_on_days: SQLite's code and pages are cold by
    the time a question naming a day comes, ~50 µs), else index chunks_by_day."""
    if keywords is not None and not (filters.path_prefix or filters.since or filters.until):
        found = chunks_on_days(keywords.docs_now(), days, filters.sources, limit)
        if found is not None:
            return found
    where, args = filters.chunk_sql()
    # chunks_by_day holds the dated chunks only (WHERE day != ''): SQLite takes it only for
    # a query that says so (a day bound as a parameter could be ''), else it scans chunks.
    sql = (
        f"SELECT c.id FROM chunks c WHERE c.day IN ({','.join('?' * len(days))}) "
        f"AND c.day != '' AND {where} ORDER BY c.id LIMIT ?"
    )
    return [int(i) for (i,) in conn.execute(sql, [*days, *args, limit])]


def load_candidates(
    conn: apsw.Connection,
    ids: Sequence[int],
    rows: ChunkRows | None = None,
    generation: int = 0,
    bm25: Mapping[int, float] | None = None,
) -> list[Candidate]:
    """The chunks of ``ids`` still in the index as candidates, in that order, each with its
    ``bm25`` (rows.read_rows: kept ones for ``generation``)."""
    return candidates_of(ids, read_rows(conn, ids, rows, generation), bm25)


def candidates_of(
    ids: Sequence[int], found: Mapping[int, Row], bm25: Mapping[int, float] | None = None
) -> list[Candidate]:
    """load_candidates' candidates from the rows ``found`` of ``ids``."""
    if compiled is not None and _TAIL is not None and type(ids) is list:
        made = compiled.make_candidates(Candidate, _FIELDS, ids, found, bm25, _TAIL)
        if made is not None:
            return made
    score = (bm25 or {}).get
    # A Candidate's fields after its id are a Row's, then bm25.
    return [Candidate(i, *row, score(i)) for i in ids if (row := found.get(i)) is not None]


def fill_window_sims(
    conn: apsw.Connection,
    cands: Sequence[Candidate],
    qvec: Vectors,
    kept: KeptWindows | None = None,
    generation: int = 0,
) -> None:
    """Each embedded candidate's best window and its similarity: one matrix product for all
    of them (their windows read in one statement, or kept from earlier searches:
    vectors/window_sims.py)."""
    q = qvec.astype(np.float32)
    embedded = {c.id: c for c in cands if c.embedded}
    if not embedded:
        return
    with SCRATCH.borrow() as scratch:
        found = window_sims(conn, list(embedded), q, kept, generation, scratch)
    for chunk_id, window, sim in zip(*found, strict=True):
        c = embedded[chunk_id]
        c.best_window, c.window_sim = window, sim
