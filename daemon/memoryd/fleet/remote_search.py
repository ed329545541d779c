"""Searching and reading a workspace another daemon published (docs/fleet.md, Remote search).

Postgres finds the candidates: BM25 as FTS5 computes it, in SQL over the published term
frequencies (GIN on the lexemes finds the matches; ``ts_rank`` is not BM25), pgvector's
cosine distance over the chunk mean vectors, and a dated query's days. The local engine's
own code then scores them: window cosines, the line signal, fusion, snippets.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np
import psycopg
from psycopg import sql

from memoryd.embeddings.base import Vectors
from memoryd.errors import InvalidParams, NotFound
from memoryd.files.reader import LinesRead
from memoryd.index.keyword.bm25 import K1, B, idf
from memoryd.index.keyword.text import FTS_TOKENIZER, TokenizeOffsets, with_offsets
from memoryd.index.search.candidates import Candidate, Filters
from memoryd.index.search.focus import asks_when, refocus
from memoryd.index.search.fusion import KEYWORD_OVERFETCH, fuse, idf_weights
from memoryd.index.search.query import query_days, query_terms
from memoryd.index.search.shown import shown_hits
from memoryd.index.search.snippets import LineStems, line_scores
from memoryd.index.types import Fusion, Mode, SearchHit, SearchRequest
from memoryd.runtime.config import SearchConfig


@dataclass(frozen=True)
class RemoteWorkspace:
    id: int
    host: str
    name: str
    provider: str
    model: str
    dims: int
    n_chunks: int
    n_tokens: int
    published_at: dt.datetime | None
    lease_live: bool
    holder_info: dict[str, Any]
    sync_id: str = ""  # the same git-synced workspace on several hosts shares it

    def freshness(self, now: dt.datetime) -> dict[str, Any]:
        age = (now - self.published_at).total_seconds() if self.published_at else None
        return {
            "host": self.host,
            "workspace": self.name,
            "published_at": self.published_at.isoformat() if self.published_at else None,
            "published_age_s": round(age, 3) if age is not None else None,
            "publisher_live": self.lease_live,
        }


def porter_tokenizer() -> TokenizeOffsets:
    """The local index's tokens (FTS5's porter over keyword_text: CJK runs as bigrams), with
    offsets into the text, as workspace.py's readers have them."""
    conn = apsw.Connection(":memory:")
    porter = conn.fts5_tokenizer(*FTS_TOKENIZER)

    def tokenize(raw: bytes) -> list[tuple[int, int, str]]:
        found = porter(
            raw, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True, include_colocated=False
        )
        return found  # type: ignore[return-value]  # offsets on, colocated off

    return with_offsets(tokenize)


def fold_synced(
    found: list[RemoteWorkspace], own_host: str
) -> tuple[list[RemoteWorkspace], dict[tuple[str, str], RemoteWorkspace]]:
    """One copy of each git-synced workspace (docs/sync.md, fleet): the same lines on every
    host that syncs it are searched once. The copy kept: this host's own, else a live
    publisher's, else the newest publish. Answers (kept, {(host, name): the copy kept})."""
    groups: dict[str, list[RemoteWorkspace]] = {}
    kept: list[RemoteWorkspace] = []
    for ws in found:
        if ws.sync_id:
            groups.setdefault(ws.sync_id, []).append(ws)
        else:
            kept.append(ws)
    folded: dict[tuple[str, str], RemoteWorkspace] = {}
    oldest = dt.datetime.min.replace(tzinfo=dt.UTC)
    for members in groups.values():
        best = max(
            members, key=lambda w: (w.host == own_host, w.lease_live, w.published_at or oldest)
        )
        kept.append(best)
        folded.update({(w.host, w.name): best for w in members if w is not best})
    kept.sort(key=lambda w: (w.host, w.name))
    return kept, folded


class RemoteIndex:
    """Queries over the published tables; one per searching thread (not thread-safe)."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self.tokenize = porter_tokenizer()
        self.line_stems = LineStems()

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=sql.Identifier(self.schema))

    def workspaces(
        self, conn: psycopg.Connection[Any], host: str | None = None, name: str | None = None
    ) -> list[RemoteWorkspace]:
        rows = conn.execute(
            self._q(
                "SELECT id, host, name, provider, model, dims, n_chunks, n_tokens, published_at, "
                "coalesce(lease_expires > now(), false), holder_info, sync_id FROM {s}.workspaces "
                "WHERE (%(host)s::text IS NULL OR host = %(host)s) "
                "AND (%(name)s::text IS NULL OR name = %(name)s) ORDER BY host, name"
            ),
            {"host": host, "name": name},
        ).fetchall()
        return [
            RemoteWorkspace(
                int(r[0]),
                r[1],
                r[2],
                r[3],
                r[4],
                int(r[5]),
                int(r[6]),
                int(r[7]),
                r[8],
                bool(r[9]),
                dict(r[10] or {}),
                str(r[11] or ""),
            )
            for r in rows
        ]

    def one(self, conn: psycopg.Connection[Any], host: str, name: str) -> RemoteWorkspace:
        found = self.workspaces(conn, host, name)
        if not found:
            raise NotFound(
                f"no workspace {name!r} of host {host!r} in the fleet "
                "(memctl fleet status lists them)",
                {"host": host, "workspace": name},
            )
        return found[0]

    # ---------------------------------------------------------------- search

    def search(
        self,
        conn: psycopg.Connection[Any],
        ws: RemoteWorkspace,
        req: SearchRequest,
        cfg: SearchConfig,
        qvec: Vectors | None,
        window_budget: int,
    ) -> tuple[list[SearchHit], Mode]:
        """The local engine's ranking (index/search/fusion.py run_search) over candidates from
        Postgres. ``qvec``: the query embedded with this workspace's model, or None."""
        max_results = req.max_results or cfg.max_results
        min_score = cfg.min_score if req.min_score is None else req.min_score
        fusion: Fusion = req.fusion or cfg.fusion  # type: ignore[assignment]
        mode: Mode = req.mode if qvec is not None else "keyword"
        filters = Filters(req.sources, req.path_prefix, req.since, req.until)
        terms = query_terms(req.query)
        term_stems = {t: [s for _, _, s in self.tokenize(t.encode())] for t in terms}
        stems = list(dict.fromkeys(s for ts in term_stems.values() for s in ts))
        df = self._doc_freqs(conn, ws, stems)
        weights = idf_weights(ws.n_chunks, df)
        n = max_results * cfg.candidate_multiplier
        where, args = self._filters(ws, filters)

        days = query_days(req.query) if mode != "vector" else []
        found: dict[int, None] = {}
        bm25: dict[int, float] = {}
        if stems and mode != "vector":
            limit = n if mode == "keyword" and not days else n * KEYWORD_OVERFETCH
            ranked = self._bm25(
                conn, ws, [s for t in terms for s in term_stems[t]], df, filters, limit
            )
            bm25 = dict(ranked)
            found.update((i, None) for i, _ in ranked[:n])
        if qvec is not None and mode != "keyword":
            vwhere, vargs = self._filters(ws, filters, "v")
            rows = conn.execute(
                sql.SQL("SELECT v.chunk_id FROM {}.vectors v WHERE ").format(
                    sql.Identifier(self.schema)
                )
                + vwhere
                + sql.SQL(
                    # Another width (a re-embed half published) would make <=> fail.
                    " AND vector_dims(v.embedding) = %s "
                    "ORDER BY v.embedding <=> %s, v.chunk_id LIMIT %s"
                ),
                [*vargs, int(qvec.shape[0]), qvec, n],
            ).fetchall()
            found.update((int(r[0]), None) for r in rows)
        if days:
            rows = conn.execute(
                sql.SQL("SELECT c.chunk_id FROM {}.chunks c WHERE ").format(
                    sql.Identifier(self.schema)
                )
                + where
                + sql.SQL(" AND c.day = ANY(%s) ORDER BY c.chunk_id LIMIT %s"),
                [*args, days, n],
            ).fetchall()
            found.update((int(r[0]), None) for r in rows)
        cands = self._load(conn, ws, list(found), bm25, qvec)

        tokenize = self.tokenize

        when = asks_when(req.query)

        def fill_lines(c: Candidate) -> None:
            if c.lines is None:
                scores = line_scores([self.line_stems.get(c.id, c.text, tokenize)], weights)[0]
                c.lines = refocus(c.text, scores, when)

        fused = fuse(cands, mode, fusion, cfg, sum(weights.values()), fill_lines, days, max_results)
        hits = shown_hits(fused, min_score, max_results, fill_lines, window_budget, terms, cfg)
        return hits, mode

    def _filters(
        self, ws: RemoteWorkspace, f: Filters, alias: str = "c"
    ) -> tuple[sql.Composable, list[Any]]:
        """The WHERE of a query on chunks (alias c), vectors (v) or postings (p): all carry
        source and day; a path prefix looks the chunk up."""
        a = alias
        parts = [f"{a}.workspace_id = %s", f"{a}.source = ANY(%s)"]
        args: list[Any] = [ws.id, list(f.sources)]
        if f.path_prefix:
            parts.append(
                f"EXISTS (SELECT 1 FROM {{s}}.chunks pc WHERE pc.workspace_id = "
                f"{a}.workspace_id AND pc.chunk_id = {a}.chunk_id "
                "AND left(pc.path, %s) = %s)"
            )
            args += [len(f.path_prefix), f.path_prefix]
        parts += f.day_sql(a, args, mark="%s")
        return self._q(" AND ".join(parts)), args

    def _doc_freqs(
        self, conn: psycopg.Connection[Any], ws: RemoteWorkspace, stems: list[str]
    ) -> dict[str, int]:
        """Chunks holding each stem: the length of its postings (an index-only count)."""
        if not stems:
            return {}
        rows = conn.execute(
            self._q(
                "SELECT stem, count(*) FROM {s}.postings WHERE workspace_id = %s "
                "AND stem = ANY(%s) GROUP BY stem"
            ),
            (ws.id, stems),
        ).fetchall()
        found = {str(s): int(n) for s, n in rows}
        return {s: found.get(s, 0) for s in stems}

    def _bm25(
        self,
        conn: psycopg.Connection[Any],
        ws: RemoteWorkspace,
        stems: list[str],
        df: dict[str, int],
        f: Filters,
        limit: int,
    ) -> list[tuple[int, float]]:
        """FTS5's bm25() of the OR query (fts5_aux.c: k1, b, the IDF with its floor, the
        document lengths over both columns, repeated terms counted again), summed over the
        query stems' postings, as (chunk id, score) best first."""
        rows, tokens = max(ws.n_chunks, 1), ws.n_tokens
        avgdl = (tokens / rows) or 1.0
        # The counts come from two reads: a host publishing meanwhile can put more
        # postings of a stem than chunks in its row (bm25.idf holds them to it).
        idfs = [idf(rows, df.get(s, 0)) for s in stems]
        where, args = self._filters(ws, f, "p")
        query = sql.SQL(
            "SELECT p.chunk_id, sum(q.idf * ((p.freq * 0.5 * %s) / (p.freq * 0.5 + "
            "%s * (1 - %s + %s * p.tokens / %s)))) AS score "
            "FROM unnest(%s::text[], %s::float8[]) AS q(stem, idf) "
            "JOIN {s}.postings p ON p.stem = q.stem WHERE {where} "
            "GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %s"
        ).format(s=sql.Identifier(self.schema), where=where)
        params = [K1 + 1.0, K1, B, B, avgdl, stems, idfs, *args, limit]
        return [(int(i), float(x)) for i, x in conn.execute(query, params).fetchall()]

    def _load(
        self,
        conn: psycopg.Connection[Any],
        ws: RemoteWorkspace,
        ids: list[int],
        bm25: dict[int, float],
        qvec: Vectors | None,
    ) -> list[Candidate]:
        if not ids:
            return []
        rows = conn.execute(
            self._q(
                "SELECT chunk_id, path, source, day, start_line, end_line, heading, text, windows "
                "FROM {s}.chunks WHERE workspace_id = %s AND chunk_id = ANY(%s)"
            ),
            (ws.id, ids),
        ).fetchall()
        by_id = {int(r[0]): r for r in rows}
        q = qvec.astype(np.float32) if qvec is not None else None
        out = []
        for i in ids:
            r = by_id.get(i)
            if r is None:
                continue
            c = Candidate(
                i, r[1], r[2], r[3], int(r[4]), int(r[5]), r[6], r[7], r[8] is not None, bm25.get(i)
            )
            if q is not None and r[8] is not None and len(r[8]) % (2 * q.shape[0]) == 0:
                m = np.frombuffer(r[8], dtype=np.float16).reshape(-1, q.shape[0])
                sims = m.astype(np.float32) @ q
                c.best_window = int(np.argmax(sims))
                c.window_sim = float(sims[c.best_window])
            out.append(c)
        return out

    # ---------------------------------------------------------------- get

    def get(
        self,
        conn: psycopg.Connection[Any],
        ws: RemoteWorkspace,
        path: str,
        from_line: int | None,
        lines: int | None,
    ) -> LinesRead:
        row = conn.execute(
            self._q("SELECT body, source FROM {s}.files WHERE workspace_id = %s AND path = %s"),
            (ws.id, path),
        ).fetchone()
        if row is None:
            raise NotFound(
                f"{path}: not published by {ws.host}:{ws.name}",
                {"path": path, "host": ws.host, "workspace": ws.name},
            )
        if row[0] is None:
            raise InvalidParams(
                f"{path}: only markdown files can be read with get (it is {row[1]})",
                {"param": "path"},
            )
        all_lines = str(row[0]).split("\n")
        if all_lines and all_lines[-1] == "":
            all_lines.pop()
        start = from_line or 1
        chosen = (
            all_lines[start - 1 :] if lines is None else all_lines[start - 1 : start - 1 + lines]
        )
        return LinesRead(path, start, len(chosen), "\n".join(chosen), len(all_lines))
