"""The hits an answer shows: the fused candidates' snippets, meta and tiers (local and
fleet search), and a keyword search's hits made at once from its candidates' rows and
cached lines (keyword_hits: no candidate object made, the same hits)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from memoryd.files.layout import (
    CURATED_FILES,
    TIER_CURATED,
    TIER_EPISODIC,
    TIER_SESSIONS,
    tier_of,
)
from memoryd.index.line_meta import LineMetaMap, summarise
from memoryd.index.search.candidates import Candidate, Filters
from memoryd.index.search.focus import WHEN_BOOST, timed_lines
from memoryd.index.search.rows import Row
from memoryd.index.search.signals import Signals
from memoryd.index.search.snippets import (
    LineStems,
    Snippet,
    make_snippet,
    shown_text,
    text_lines,
    whole_lines,
)
from memoryd.index.types import HitMeta, SearchHit
from memoryd.index.vectors.windows import kept_window_spans
from memoryd.runtime.config import SearchConfig
from memoryd_client.search_terms import SOURCE_SESSIONS

try:  # _compiled_lines.c's snippet; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - installs without a compiler
    compiled = None  # type: ignore[assignment]

Scored = tuple[float, float | None, float | None, Candidate]
# A NamedTuple's own __new__ is a Python function (~2k instructions a call, ten hits a
# search); tuple's makes the same object from every field's value, in field order.
_new_hit: Callable[[type[SearchHit], tuple[Any, ...]], SearchHit] = tuple.__new__
_SNIPPETS = (text_lines, whole_lines, Snippet)  # what the compiled snippet calls and makes
_SHOWN = (text_lines, whole_lines, shown_text)  # ... and the compiled hits (keyword_hits)
# The curated files as a set: the compiled hits ask ``path in`` it of every hit (a path's
# hash is kept with its row; the tuple compared the path with each name).
_CURATED = frozenset(CURATED_FILES)
_TIERS = (SOURCE_SESSIONS, _CURATED, TIER_SESSIONS, TIER_CURATED, TIER_EPISODIC)


def snippet_scores(c: Candidate, window_budget: int) -> list[float]:
    """Line scores for the snippet: the query words' lines; when no query word occurs in
    the chunk (a semantic match), the lines of its best vector window."""
    scores = c.lines or [0.0] * (c.text.count("\n") + 1)
    if c.best_window < 0 or max(scores, default=0.0) > 0:
        return scores
    scores = list(scores)  # the window's lines raised in a copy: c.lines stays the query's
    spans = kept_window_spans(c.text, window_budget)
    if c.best_window < len(spans):
        a, b = spans[c.best_window]
        for i in range(a, min(b, len(scores) - 1) + 1):
            scores[i] = 1.0
    return scores


def keyword_hits(
    line_stems: LineStems,
    cfg: SearchConfig,
    ids: list[int],
    rows: Mapping[int, Row],
    uses: tuple[dict[int, int], int] | None,
    ranked: list[tuple[int, float]] | dict[int, float],
    filters: Filters,
    weights: dict[str, float],
    when: bool,
    shown: tuple[int, float],
    terms: Sequence[str],
    signals: Signals | None,
    dating: tuple[Any, ...] | None = None,
) -> list[SearchHit] | None:
    """A keyword search's hits at once (LineStems.keyword_hits: the hits candidates_of,
    filters.accepted, _cached_line_scores, fuse and shown_hits give, no candidate made),
    when only its sources filter, no line meta is asked and every candidate's lines that
    could reach the top are cached; else None. ``dating``: None, or fuse's date signal and a
    range-only adjust (fusion.dating_of). ``uses``: None (``rows``: read_rows'), or what
    Kept.lend gave with its own map as ``rows``: each row read there is used, and one not
    there says None. ``ranked``: the BM25 top, whose first ids are ``ids`` (read in place:
    no dict of it), or by id (a named day's candidates: the over-fetched tail's scores);
    ``shown``: (max results, min score)."""
    meta = signals is not None and bool(signals.meta)
    if filters.path_prefix or filters.since or filters.until or meta:
        return None  # line meta makes the signals adjust too: never here (run_search)
    keep, min_score = shown
    wt, wl, wv, budget = cfg.text_weight, cfg.line_weight, cfg.vector_weight, cfg.snippet_chars
    fusing = (sum(weights.values()), wt, wl, wv, wt + wl, wt + wl + wv)
    timed = (timed_lines, 1.0 + WHEN_BOOST) if when else None

    def snippet_of(text: str, start: int, end: int, scores: list[float]) -> Snippet:
        return make_snippet(text, start, end, scores, terms, budget)  # a line over budget

    show = (SearchHit, min_score, budget, *_SHOWN, snippet_of, _TIERS)
    hits = line_stems.keyword_hits(
        ids, rows, uses, ranked, filters.sources, weights, timed, fusing, keep, show, dating
    )
    return cast("list[SearchHit] | None", hits)


def shown_hits(
    fused: list[Scored],
    min_score: float,
    max_results: int,
    fill_lines: Callable[[Candidate], None],
    window_budget: int,
    terms: Sequence[str],
    cfg: SearchConfig,
    signals: Signals | None = None,
) -> list[SearchHit]:
    """The fused candidates an answer shows, with their snippets (local and fleet search):
    the text without annotation comments, and what its lines say of themselves."""
    hits = []
    budget = cfg.snippet_chars
    meta_map = signals.meta if signals is not None and signals.meta else None
    for score, v, t, c in [x for x in fused if x[0] >= min_score][:max_results]:
        if c.lines is None:
            fill_lines(c)  # the snippet's (vector mode ranks without them)
        # snippet_scores gives a keyword match's lines themselves (spelled out: ten a search)
        scores = c.lines if c.best_window < 0 and c.lines else snippet_scores(c, window_budget)
        snip = None  # make_snippet's common case in one call, else make_snippet itself
        if compiled is not None:
            snip = compiled.snippet(c.text, c.start_line, c.end_line, scores, budget, *_SNIPPETS)
        text, first, last = snip or make_snippet(
            c.text, c.start_line, c.end_line, scores, terms, budget
        )
        meta = None
        if meta_map is not None:
            meta = _hit_meta(meta_map, c.path, first, last)
        shown = shown_text(text)
        hits.append(
            _new_hit(
                SearchHit,
                (
                    c.path,
                    c.start_line,
                    c.end_line,
                    score,
                    shown,
                    first,
                    last,
                    c.source,
                    c.heading,
                    v,
                    t,
                    tier_of(c.path, c.source),
                    meta,
                ),
            )
        )
    return hits


def _hit_meta(meta_map: LineMetaMap, path: str, first: int, last: int) -> HitMeta | None:
    """What a hit's snippet lines say of themselves (line_meta.py), or None."""
    lines = meta_map.lines(path, first, last)
    found = summarise(m for _, m in lines)
    if found is None:
        return None
    return HitMeta(
        found.origin,
        found.session_id,
        found.importance,
        found.triggers,
        found.project,
        found.key,
        tuple((n, m.origin, m.session_id) for n, m in lines if m.origin),
    )
