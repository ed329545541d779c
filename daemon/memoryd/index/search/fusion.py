"""Hybrid retrieval over one index: FTS5 BM25 candidates, sqlite-vec KNN candidates, fusion.

Both scores are computed for every candidate of either list (a keyword hit's cosine is one
point lookup), so a strong keyword match is never scored as if its vector were zero; this
is what lets keyword-only hits pass ``min_score`` (OpenClaw drops them all).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from memoryd import sqlite
from memoryd.embeddings.base import Vectors
from memoryd.index.keyword.mirror import KeywordMirror
from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search.candidates import (
    Candidate,
    Filters,
    candidates_of,
    day_candidates,
    fill_window_sims,
    keyword_candidates,
    vector_candidates,
)
from memoryd.index.search.focus import WHEN_BOOST, refocus, timed_lines
from memoryd.index.search.line_days import named_days, on_named_day, reaches
from memoryd.index.search.query import fts_match
from memoryd.index.search.rows import (
    ChunkRows,
    ParsedQueries,
    ParsedQuery,
    Row,
    read_rows,
)
from memoryd.index.search.shown import Scored, keyword_hits, shown_hits
from memoryd.index.search.signals import Signals
from memoryd.index.search.snippets import (
    LineStems,
    line_scores,
)
from memoryd.index.types import Fusion, Mode, NotInMemory, SearchHit, SearchRequest
from memoryd.index.vectors.mirror import VectorMirror
from memoryd.index.vectors.window_sims import KeptWindows
from memoryd.runtime.config import SearchConfig
from memoryd_client.search_terms import SOURCES

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why
else:
    from memoryd.named_tuple import NamedTuple

try:  # _compiled_fusion.c: _known_top's common case; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - installs without a compiler
    compiled = None  # type: ignore[assignment]

KEYWORD_OVERFETCH = 4  # BM25 rows read per keyword candidate: t for vector candidates
# While the keyword copy loads, FTS5 asks the common words too (the copy's scores to the bit:
# keyword_ranked) when they match at most this many chunks in all: each costs a bm25() call,
# ~0.3 µs here (~15 ms for this many). Past it (a log of 100k+ chunks, a word on every line)
# the common words are left out as when the copy cannot answer: the same top, faster.
EXACT_COMMON_POSTINGS = 50_000
# A query naming a calendar date ("what did we decide on 3 June 2023?") gets that day's chunks
# as candidates, and every score becomes (1 - DATE_WEIGHT) * score + DATE_WEIGHT * same_day;
# a chunk whose lines name that day ("yesterday" in the next day's note) is on it too
# (line_days.py).
DATE_WEIGHT = 0.2


class SearchEnv(NamedTuple):
    """What a search needs of its index besides the connection and the request (a tuple:
    one per search, made for a fraction of a frozen dataclass's cost)."""

    cfg: SearchConfig
    line_stems: LineStems
    mirror: VectorMirror | None = None  # in-memory KNN; None: sqlite-vec's
    window_budget: int = 128  # tokens per vector window (index.vector_window_tokens)
    indexed_sources: tuple[str, ...] = SOURCES  # what the index can hold
    keywords: KeywordMirror | None = None  # in-memory BM25; None: FTS5's
    rows: ChunkRows | None = None  # candidates' rows kept until the index changes
    generation: int = 0  # the index's, read before any row (rows.py)
    parsed: ParsedQueries | None = None  # the latest queries, parsed
    windows: KeptWindows | None = None  # candidates' window vectors (window_sims.py)


def answers_from_memory(
    env: SearchEnv,
    mode: Mode,
    term_stems: dict[str, list[str]],
    filters: Filters,
    qvec: Vectors | None,
) -> bool:
    """Whether the in-memory copies rank this search: BM25 (and its document frequencies)
    and the KNN, leaving SQLite only the candidates' rows. Such a search takes well under a
    millisecond at 10k chunks; the others can take tens (FTS5's bm25() on every match)."""
    if filters.path_prefix:
        return False
    if term_stems and mode != "vector":
        kw = env.keywords
        if kw is None or not kw.usable or any(len(s) != 1 for s in term_stems.values()):
            return False
    if qvec is not None and mode != "keyword":
        return env.mirror is not None and env.mirror.usable
    return True


def fuse(
    cands: list[Candidate],
    mode: Mode,
    fusion: Fusion,
    cfg: SearchConfig,
    idf_total: float,
    fill_lines: Callable[[Candidate], None],
    days: Sequence[str],
    keep: int,
    adjust: Callable[[float, Candidate], float] | None = None,
) -> list[Scored]:
    """(score, vector_score, text_score, candidate), best first; scores in [0, 1].

    Three signals: v, the best window's cosine; t, BM25 relative to the best keyword hit;
    l, the best single line's share of the query's IDF. A signal a chunk lacks (no vector
    yet, or vectors off) drops out and the others are re-weighted, so keyword-only hits are
    scored on the keyword scale and can pass min_score, and semantic-only hits likewise.
    A query naming a date mixes in DATE_WEIGHT x (the chunk is that day's).

    ``fill_lines`` sets a candidate's ``lines`` (l's source, a search's costliest part).
    Weighted fusion keeps the best ``keep`` and fills no candidate that cannot reach them
    even with l = 1 (the same top, exactly); RRF ranks every candidate by every signal."""
    wt, wl, wv = cfg.text_weight, cfg.line_weight, cfg.vector_weight
    kw_sum, all_sum = wt + wl, wt + wl + wv  # summed in the order sum() would
    if compiled is not None and not days and adjust is None and (mode, fusion) != ("hybrid", "rrf"):
        # _known_top's case in C (every l known, or vector mode): the same scores and top
        weights = (wt, wl, wv, kw_sum, all_sum)
        vector, hybrid = mode == "vector", mode == "hybrid"
        top = compiled.known_top(cands, vector, hybrid, idf_total, weights, keep)
        if top is not None:
            return top
    best_bm25 = max((c.bm25 for c in cands if c.bm25 is not None and c.bm25 > 0), default=0.0)
    # When no candidate contains a query word, the keyword signals say nothing about any of
    # them: they drop out, so a purely semantic match can pass min_score on its own.
    keyword_active = best_bm25 > 0
    rrf = fusion == "rrf" and mode == "hybrid" and keyword_active
    if mode == "vector" or (not rrf and all(c.lines is not None for c in cands)):
        # Every l known (their stems were cached), or none needed: every score in one loop.
        weights = Weights(wt, wl, wv, kw_sum, all_sum)
        return _known_top(cands, mode, best_bm25, idf_total, weights, days, adjust, keep)
    rows = []
    for c in cands:
        t = (c.bm25 / best_bm25) if (c.bm25 is not None and best_bm25 > 0 and c.bm25 > 0) else 0.0
        v = max(0.0, min(1.0, c.window_sim)) if c.window_sim is not None else None
        rows.append((c, v, t))

    def line_signal(c: Candidate) -> float:
        fill_lines(c)
        return min(1.0, max(c.lines or [0.0]) / idf_total) if idf_total > 0 else 0.0

    def score(c: Candidate, v: float | None, t: float, l_: float) -> float:
        # The weighted mean of the signals the chunk has (the same operations, in the same
        # order, as sum(w * x) / sum(w) over them: a hot loop, so spelled out; _known_top
        # spells it out once more).
        if mode == "hybrid" and v is not None:
            if keyword_active:
                s = (wt * t + wl * l_ + wv * v) / all_sum if all_sum > 0 else 0.0
            else:
                s = (wv * v) / wv if wv > 0 else 0.0
        elif keyword_active:
            s = (wt * t + wl * l_) / kw_sum if kw_sum > 0 else 0.0
        else:
            s = 0.0
        return dated(s, c)

    def dated(s: float, c: Candidate) -> float:
        s = (1 - DATE_WEIGHT) * s + DATE_WEIGHT * on_named_day(c.day, c.text, days) if days else s
        return adjust(s, c) if adjust is not None else s

    # RRF scores ranks: the first of a list gets 1.0 however weak it is. With no query word
    # in any candidate only the vector list is left, and that would make min_score pass the
    # nearest chunks of any nonsense query; the cosine itself decides then, as in weighted.
    if rrf:
        full = [(c, v, t, line_signal(c)) for c, v, t in rows]
        out = [(dated(s, c), v, t, c) for s, v, t, c in _rrf(full, cfg.rrf_k)]
    else:  # some chunk's lines must be tokenized: only for those that can reach the top
        out = _weighted_top(rows, score, line_signal, keep)
    out.sort(key=lambda x: (-x[0], x[3].id))
    return out[:keep]


class Weights(NamedTuple):
    text: float
    line: float
    vector: float
    keyword_sum: float  # text + line, summed as score() sums them
    all_sum: float  # text + line + vector


def _known_top(
    cands: list[Candidate],
    mode: Mode,
    best_bm25: float,
    idf_total: float,
    w: Weights,
    days: Sequence[str],
    adjust: Callable[[float, Candidate], float] | None,
    keep: int,
) -> list[Scored]:
    """fuse's weighted scores of candidates whose lines are all known (or not needed: vector
    mode), the best ``keep`` first: score(), line_signal() and dated() inlined, the same
    operations in the same order, so the same doubles (a call each per candidate was most
    of fusion's cost)."""
    vector, hybrid, keyword_active = mode == "vector", mode == "hybrid", best_bm25 > 0
    wt, wl, wv, kw_sum, all_sum = w
    lined = not vector and idf_total > 0
    ranked: list[tuple[float, int, int]] = []  # (-score, id, n): the sort key
    scored: list[Scored] = []
    t: float | None
    for n, c in enumerate(cands):
        x = c.window_sim  # v = max(0.0, min(1.0, x)), its calls only when x is out of (0, 1)
        v = x if x is None or 0.0 < x < 1.0 else max(0.0, min(1.0, x))
        if vector:
            s, t = v or 0.0, None
        else:
            b = c.bm25
            t = b / best_bm25 if b is not None and keyword_active and b > 0 else 0.0
            if lined:  # min(1.0, share), as min() picks: the share unless it is not below 1
                l_ = max(c.lines or [0.0]) / idf_total
                if not l_ < 1.0:
                    l_ = 1.0
            else:
                l_ = 0.0
            if hybrid and v is not None:
                if keyword_active:
                    s = (wt * t + wl * l_ + wv * v) / all_sum if all_sum > 0 else 0.0
                else:
                    s = (wv * v) / wv if wv > 0 else 0.0
            elif keyword_active:
                s = (wt * t + wl * l_) / kw_sum if kw_sum > 0 else 0.0
            else:
                s = 0.0
        if days:
            s = (1 - DATE_WEIGHT) * s + DATE_WEIGHT * on_named_day(c.day, c.text, days)
        if adjust is not None:
            s = adjust(s, c)
        ranked.append((-s, c.id, n))
        scored.append((s, v, t, c))
    ranked.sort()
    return [scored[n] for _, _, n in ranked[:keep]]


def _weighted_top(
    rows: list[tuple[Candidate, float | None, float]],
    score: Callable[[Candidate, float | None, float, float], float],
    line_signal: Callable[[Candidate], float],
    keep: int,
) -> list[Scored]:
    """Weighted fusion's scores, best possible score first; stops once even l = 1 cannot
    reach the ``keep``-th best, so no line is scored for a candidate that cannot make it."""
    bounded = sorted(
        ((score(c, v, t, 1.0), c, v, t) for c, v, t in rows), key=lambda r: (-r[0], r[1].id)
    )
    out: list[Scored] = []
    best: list[float] = []  # a min-heap of the top ``keep`` exact scores
    for bound, c, v, t in bounded:
        if len(best) >= keep and bound < best[0]:
            break
        s = score(c, v, t, line_signal(c))
        out.append((s, v, t, c))
        if len(best) < keep:
            heapq.heappush(best, s)
        elif s > best[0]:
            heapq.heapreplace(best, s)
    return out


def _rrf(rows: list[tuple[Candidate, float | None, float, float]], k: int) -> list[Scored]:
    ranks: list[dict[int, int]] = []
    for signal in range(3):  # v, t, l: each list ranks the candidates that have that signal
        values = [(c, (v, t, l_)[signal]) for c, v, t, l_ in rows]
        ordered = sorted(((c, x) for c, x in values if x), key=lambda cx: -(cx[1] or 0.0))
        ranks.append({c.id: n for n, (c, _) in enumerate(ordered, 1)})
    # First in every list that has anything: 1.0, so min_score keeps its meaning (and a
    # semantic-only hit can pass it when no chunk contains a query word).
    top = max(1, sum(1 for r in ranks if r)) / (k + 1)
    out: list[Scored] = []
    for c, v, t, _l in rows:
        s = sum(1.0 / (k + r[c.id]) for r in ranks if c.id in r) / top
        out.append((s, v, t, c))
    out.sort(key=lambda x: (-x[0], x[3].id))
    return out


def doc_freqs(
    conn: apsw.Connection, stems: Sequence[str], keywords: KeywordMirror | None = None
) -> tuple[int, dict[str, int]]:
    """(chunks in the index, chunks containing each stem): the in-memory copy's counts, or
    fts5vocab's (which walks each stem's whole doclist)."""
    if keywords is not None and (known := keywords.doc_freqs(stems)) is not None:
        return known
    n = int(sqlite.scalar(conn, "SELECT count(*) FROM chunks"))
    if not stems:
        return n, {}
    found = dict(
        conn.execute(
            f"SELECT term, doc FROM chunks_vocab WHERE term IN ({','.join('?' * len(stems))})",
            list(stems),
        )
    )
    return n, {s: int(found.get(s, 0)) for s in stems}


def idf_weights(n: int, df: dict[str, int]) -> dict[str, float]:
    n = n or 1
    return {s: math.log(1 + (n - d + 0.5) / (d + 0.5)) for s, d in df.items()}


def keyword_ranked(
    conn: apsw.Connection,
    terms: Sequence[str],
    term_stems: dict[str, list[str]],
    n_chunks: int,
    df: dict[str, int],
    filters: Filters,
    limit: int,
    keywords: KeywordMirror | None = None,
    singles: Sequence[str] | None = None,
) -> list[tuple[int, float]]:
    """The BM25 top ``limit`` of the OR query of ``terms``, asked more cheaply when it can be.
    ``singles``: each term's one stem (ParsedQuery.singles), found here when not given.

    The in-memory copy answers when it is loaded, the filters are ones it holds (not a path
    prefix) and every term is one token (a phrase needs positions, which only FTS5 keeps).

    Otherwise FTS5 does. It gives a word found in at least half the chunks an IDF of 1e-6
    (fts5_aux.c), so that word cannot reorder chunks that contain any other query word; yet
    matching it costs a bm25() call for each of those chunks (in a log that names its
    speaker on every line: all of them). Such words are left out of a first query and only
    asked for when the other words find fewer than ``limit`` chunks; the top ``limit`` is
    the same either way, but not the scores' last bits (the common words' 1e-6 are missing).
    So while the copy is still loading (a daemon's first answer) and would have answered,
    the whole query is asked, which gives the copy's scores bit for bit, as long as the
    common words match at most ``EXACT_COMMON_POSTINGS`` chunks in all.
    """
    if singles is None and all(len(term_stems[t]) == 1 for t in terms):
        singles = [term_stems[t][0] for t in terms]
    answers = keywords is not None and singles is not None and not filters.path_prefix
    if keywords is not None and singles is not None and answers:
        ranked = keywords.top(
            singles,
            limit,
            filters.sources if filters.restrictive else None,
            filters.since,
            filters.until,
        )
        if ranked is not None:
            return ranked
    common = {
        t for t in terms if len(term_stems[t]) == 1 and 2 * df.get(term_stems[t][0], 0) >= n_chunks
    }
    if (
        common
        and keywords is not None
        and answers
        and keywords.scan == "loading"
        and sum(df.get(term_stems[t][0], 0) for t in common) <= EXACT_COMMON_POSTINGS
    ):
        common = set()  # the copy's scores, not only its top
    if common and len(common) < len(terms):
        ranked = keyword_candidates(
            conn, fts_match([t for t in terms if t not in common]), filters, limit
        )
        if len(ranked) >= limit:
            return ranked
    return keyword_candidates(conn, fts_match(list(terms)), filters, limit)


def _cached_line_scores(
    line_stems: LineStems, cands: list[Candidate], weights: dict[str, float], when: bool
) -> None:
    """Line scores of the candidates whose stems are cached, in one pass; the others (their
    tokenizing is the cost) are scored only when fuse needs them."""
    # compiled: peek, score, refocus and set at once
    timed = (timed_lines, 1.0 + WHEN_BOOST) if when else None
    if line_stems.score_cached(cands, weights, timed) is not None:
        return
    peeked = line_stems.peek_many([(c.id, c.text) for c in cands])
    chunks = [lines for lines in peeked if lines is not None]
    if len(chunks) == len(cands):
        known = cands
    else:
        known = [c for c, lines in zip(cands, peeked, strict=True) if lines is not None]
    scored = line_scores(chunks, weights)
    for c, scores in zip(known, scored, strict=True):  # refocus gives them back if not when
        c.lines = refocus(c.text, scores, when) if when else scores


def dating_of(
    days: Sequence[str], ranged: tuple[str | None, str | None, float] | None
) -> tuple[Any, ...] | None:
    """What the compiled keyword hits need to do fuse's dated() (``days``: the date signal,
    DATE_WEIGHT; ``ranged``: Signals.range_only, the adjust of a range the query names), or
    None when neither applies."""
    if not days and ranged is None:
        return None
    since, until, factor = ranged or (None, None, 1.0)
    named = tuple(days)
    return (named, reaches(named), named_days, 1 - DATE_WEIGHT, DATE_WEIGHT, since, until, factor)


def _keyword_answer(
    conn: apsw.Connection,
    env: SearchEnv,
    ids: list[int],
    ranked: list[tuple[int, float]] | dict[int, float],
    filters: Filters,
    weights: dict[str, float],
    asked: tuple[bool, tuple[int, float], Sequence[str], Signals | None, tuple[Any, ...] | None],
) -> tuple[list[SearchHit] | None, dict[int, Row] | None]:
    """A keyword search's hits made at once (shown.keyword_hits), or None, and the rows it
    read: none when the kept rows held them all (read in their own map, Kept.lend: no dict
    of them made), else read_rows'."""
    stems, cfg = env.line_stems, env.cfg
    lent = env.rows.lend(len(ids), env.generation) if env.rows is not None else None
    if lent is not None:
        kept, uses = lent
        hits = keyword_hits(stems, cfg, ids, kept, uses, ranked, filters, weights, *asked)
        if hits is not None:
            return hits, None
    rows = read_rows(conn, ids, env.rows, env.generation)
    if lent is not None and len(rows) == len(ids):
        return None, rows  # all were kept: the lent map said why not (a chunk to tokenize)
    return keyword_hits(stems, cfg, ids, rows, None, ranked, filters, weights, *asked), rows


def _candidate_ids(
    conn: apsw.Connection,
    env: SearchEnv,
    mode: Mode,
    parsed: ParsedQuery,
    counts: tuple[int, dict[str, int]],
    filters: Filters,
    n: int,
    qvec: Vectors | None,
) -> tuple[list[int], list[tuple[int, float]]]:
    """A search's candidate ids, in order of discovery (the BM25 top's first ``n``, the
    vector top's, the named days' chunks), and the BM25 top (over-fetched when vector or day
    candidates need their t from it)."""
    days = parsed.days if mode != "vector" else ()
    ids: list[int] = []
    ranked_kw: list[tuple[int, float]] = []
    if parsed.terms and mode != "vector":
        # The same first n either way (ties go by id): only other candidates need more.
        limit = n if mode == "keyword" and not days else n * KEYWORD_OVERFETCH
        ranked_kw = keyword_ranked(
            conn,
            parsed.terms,
            parsed.term_stems,
            *counts,
            filters,
            limit,
            env.keywords,
            parsed.singles,
        )
        top = ranked_kw if len(ranked_kw) <= n else ranked_kw[:n]
        ids = [i for i, _ in top]  # distinct: one entry a chunk
    if (qvec is not None and mode != "keyword") or days:
        found = dict.fromkeys(ids)
        if qvec is not None and mode != "keyword":
            found.update((i, None) for i in vector_candidates(conn, qvec, filters, n, env.mirror))
        if days:
            on_days = day_candidates(conn, days, filters, n, env.keywords)
            found.update((i, None) for i in on_days)
        ids = list(found)
    return ids, ranked_kw


def run_search(
    conn: apsw.Connection,
    tokenize: TokenizeOffsets,
    req: SearchRequest,
    env: SearchEnv,
    qvec: Vectors | None,
    vectors_usable: bool,
    memory_only: bool = False,
    signals: Signals | None = None,
) -> tuple[list[SearchHit], Mode]:
    """The ranked hits and the mode actually used (vectors off -> keyword).

    ``memory_only``: raise NotInMemory, before any work, unless the in-memory copies can
    rank it (answers_from_memory). ``signals``: importance, project, recency and the time
    the query names (signals.py), and the per-line meta the hits show."""
    cfg = env.cfg
    max_results = req.max_results or cfg.max_results
    min_score = cfg.min_score if req.min_score is None else req.min_score
    fusion: Fusion = req.fusion or cfg.fusion  # type: ignore[assignment]
    mode: Mode = req.mode if (qvec is not None and vectors_usable) else "keyword"
    filters = Filters(req.sources, req.path_prefix, req.since, req.until, env.indexed_sources)
    parsed = (env.parsed or ParsedQueries(1)).get(
        req.query, lambda t: [s for _, _, s in tokenize(t.encode())]
    )
    terms, term_stems = parsed.terms, parsed.term_stems
    if memory_only and not answers_from_memory(env, mode, term_stems, filters, qvec):
        raise NotInMemory
    stems = parsed.stems
    n_chunks, df = doc_freqs(conn, stems, env.keywords)
    weights = idf_weights(n_chunks, df)
    n = max_results * cfg.candidate_multiplier

    days = parsed.days if mode != "vector" else ()
    ids, ranked_kw = _candidate_ids(conn, env, mode, parsed, (n_chunks, df), filters, n, qvec)
    when = parsed.when
    adjust = signals.adjuster() if signals is not None else None
    ranged = signals.range_only() if signals is not None and adjust is not None else None
    rows = None
    if mode == "keyword" and (adjust is None or ranged is not None):
        # a named day's candidates take their t from the over-fetched tail: by id then
        asked = (when, (max_results, min_score), terms, signals, dating_of(days, ranged))
        bm25 = dict(ranked_kw) if days else ranked_kw
        shown, rows = _keyword_answer(conn, env, ids, bm25, filters, weights, asked)
        if shown is not None:
            return shown, mode
    if rows is None:
        rows = read_rows(conn, ids, env.rows, env.generation)

    def fill_lines(c: Candidate) -> None:
        if c.lines is None:
            scores = line_scores([env.line_stems.get(c.id, c.text, tokenize)], weights)[0]
            c.lines = refocus(c.text, scores, when)

    cands = filters.accepted(candidates_of(ids, rows, dict(ranked_kw)))
    if qvec is not None and mode != "keyword":
        windows = env.windows
        kept = windows if windows and windows.fits(n_chunks, qvec.shape[0]) else None
        fill_window_sims(conn, cands, qvec, kept, env.generation)
    _cached_line_scores(env.line_stems, cands, weights, when)
    # Only the best max_results can be shown: fuse tokenizes no uncached candidate that
    # cannot reach them (keep).
    idf_total = sum(weights.values())
    fused = fuse(cands, mode, fusion, cfg, idf_total, fill_lines, days, max_results, adjust)
    hits = shown_hits(
        fused, min_score, max_results, fill_lines, env.window_budget, terms, cfg, signals
    )
    return hits, mode
