"""A keyword search's hits made at once (_compiled_hits.c through LineStems.keyword_hits and
shown.keyword_hits) against the path they short-cut: candidates_of, filters.accepted,
_cached_line_scores, fuse and shown_hits. The same hits, every field (scores as float.hex),
snippets of windows that fit and of single lines longer than the budget, fragments whose
lines are not the file's, tiers, min_score; the same LRU order and timed_lines calls; a
chunk not cached left out when it cannot reach the top, None when it could (the long way
tokenizes it). An install without a compiler has only the long path: these tests are
skipped there."""

from __future__ import annotations

import random
from typing import Any

import pytest

from compiled_util import counted_timed_lines, fill_lines_of, lru, twin_caches
from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search import fusion, shown
from memoryd.index.search.candidates import Filters, candidates_of
from memoryd.index.search.rows import Row
from memoryd.index.search.snippets import LineStems, Snippet, shown_text, text_lines
from memoryd.index.types import SearchHit
from memoryd.runtime.config import SearchConfig

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")


WORDS = ["tea", "teas", "garden", "kite", "run", "the", "é", "x1", "sunrise", "paint"]
TIMES = ["yesterday", "May", "2022", "last week"]  # a line naming a time (focus.timed_lines)
SOURCES = ("memory", "sessions")
PATHS = ["MEMORY.md", "USER.md", "memory/2024-05-01.md", "memory/notes.md", "sessions/a.jsonl"]


def _text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 25)):
        k = rng.choice((0, 3, 7, 7, 60))  # now and then a line longer than a small budget
        line = " ".join(rng.choices(WORDS, k=rng.randint(0, k)))
        lines.append(f"{line} {rng.choice(TIMES)}" if rng.random() < 0.2 else line)
    if rng.random() < 0.1:
        lines.insert(rng.randrange(len(lines)), "<!-- memoryd: {} -->")  # shown_text strips
    return "\n".join(lines)


def _row(rng: random.Random, text: str) -> Row:
    start = rng.randint(1, 40)
    n = text.count("\n") + 1
    end = start + n - 1 if rng.random() < 0.85 else start + rng.randint(0, 3)  # a fragment
    return Row(
        rng.choice(PATHS), rng.choice(SOURCES), "", start, end, rng.choice(("", "# H")), text, False
    )


def _fields(hits: list[SearchHit] | None) -> object:
    if hits is None:
        return None
    out = []
    for h in hits:
        assert type(h) is SearchHit
        t = None if h.text_score is None else h.text_score.hex()
        out.append((*h[:3], h.score.hex(), *h[4:10], t, *h[11:]))
    return out


def _long_way(
    cache: LineStems,
    ids: list[int],
    rows: dict[int, Row],
    ranked: list[tuple[int, float]],
    filters: Filters,
    weights: dict[str, float],
    when: bool,
    cfg: SearchConfig,
    min_score: float,
    terms: list[str],
    tokenize: TokenizeOffsets,
    filled: list[int],
) -> list[SearchHit] | None:
    """run_search's path without the short cut (candidates_of ... shown_hits), each chunk
    its fill_lines tokenizes appended to ``filled``."""
    keep = cfg.max_results
    cands = filters.accepted(candidates_of(ids, rows, dict(ranked)))
    fusion._cached_line_scores(cache, cands, weights, when)

    fill_lines = fill_lines_of(cache, weights, when, tokenize, filled)

    fused = fusion.fuse(
        cands, "keyword", "weighted", cfg, sum(weights.values()), fill_lines, (), keep
    )
    return shown.shown_hits(fused, min_score, keep, fill_lines, 128, terms, cfg)


def test_the_compiled_hits_are_the_long_ways(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    made = 0
    for case in range(300):
        cfg = SearchConfig(
            snippet_chars=rng.choice((50, 120, 700)), max_results=rng.choice((1, 3, 10))
        )
        texts = {i: _text(rng) for i in rng.sample(range(1, 10**6), rng.randint(0, 40))}
        rows = {i: _row(rng, t) for i, t in texts.items() if rng.random() < 0.95}
        ids = list(texts)
        scores = sorted(
            (rng.choice((rng.uniform(0.01, 30.0), 2.5, 0.0)) for _ in ids), reverse=True
        )
        ranked = list(zip(ids, scores, strict=True))
        weights = {w: rng.choice((0.5, 1.25, rng.uniform(1e-3, 9.0))) for w in rng.sample(WORDS, 4)}
        terms = list(weights)
        sources = rng.choice((SOURCES, ("memory",), ("sessions",)))
        filters = Filters(sources, None, None, None)
        when = rng.random() < 0.4
        min_score = rng.choice((0.0, 0.0, 0.3, 0.6))
        cached = [i for i in ids if rng.random() < 0.98]
        twin = twin_caches(tokenize, texts, cached)
        calls: list[list[str]] = [[], []]
        with monkeypatch.context() as m:
            m.setattr(shown, "timed_lines", counted_timed_lines(calls[0]))
            short = shown.keyword_hits(
                twin[0],
                cfg,
                ids,
                rows,
                None,
                ranked,
                filters,
                weights,
                when,
                (cfg.max_results, min_score),
                terms,
                None,
            )
        filled: list[int] = []
        with monkeypatch.context() as m:
            m.setattr(fusion, "timed_lines", counted_timed_lines(calls[1]))
            asked = (filters, weights, when, cfg, min_score, terms, tokenize, filled)
            long = _long_way(twin[1], ids, rows, ranked, *asked)
        if short is not None:
            made += 1
            assert _fields(short) == _fields(long), case
            assert calls[0] == calls[1], case
            assert lru(twin[0]) == lru(twin[1]), case
            assert not filled, case  # what it left out, the long way did not tokenize
        else:
            assert filled, case  # one not cached could reach the top
    assert made > 200


def test_no_hits_are_made_where_the_long_way_must_go(tokenize: TokenizeOffsets) -> None:
    """A path prefix or dates asked, a chunk not cached, BM25 pairs that are not the
    candidates': None, having made nothing (the long way shows them)."""
    cfg = SearchConfig()
    text = "tea in the garden\nkites at sunrise"
    rows = {7: Row("memory/a.md", "memory", "", 1, 2, "", text, False)}
    cache = LineStems()
    args: tuple[Any, ...] = ([7], rows, None, [(7, 3.0)])
    rest: tuple[Any, ...] = ({"tea": 1.0}, False, (10, 0.0), ["tea"], None)
    assert (
        shown.keyword_hits(cache, cfg, *args, Filters(("memory",), None, None, None), *rest) is None
    )
    cache.get(7, text, tokenize)
    hits = shown.keyword_hits(cache, cfg, *args, Filters(("memory",), None, None, None), *rest)
    assert hits is not None and hits[0].snippet.startswith("tea in the garden")
    for asked in (
        Filters(("memory",), "memory/", None, None),
        Filters(("memory",), None, "2024-01-01", None),
    ):
        assert shown.keyword_hits(cache, cfg, *args, asked, *rest) is None
    moved = [(7, 3.0), (8, 1.0)]
    assert (
        shown.keyword_hits(
            cache, cfg, [8, 7], rows, None, moved, Filters(("memory",), None, None, None), *rest
        )
        is None
    )


def test_a_row_missing_from_the_kept_rows_own_map_sends_the_search_the_long_way(
    tokenize: TokenizeOffsets,
) -> None:
    """A lent map (Kept.lend: the kept rows' own) should hold every row: one gone from it
    (dropped by another search's rows) says None, and read_rows reads it; a row missing
    from read_rows' map is a chunk gone from the index, and the others are shown. Each row
    read in a lent map is recorded as used, its tick the first one plus its place."""
    cfg = SearchConfig()
    rows = {
        7: Row("memory/a.md", "memory", "", 1, 1, "", "tea in the garden", False),
        9: Row("memory/b.md", "memory", "", 1, 1, "", "tea at sunrise", False),
    }
    cache = LineStems()
    for i, row in rows.items():
        cache.get(i, row.text, tokenize)
    only = {9: rows[9]}
    filters = Filters(("memory",), None, None, None)
    rest: tuple[Any, ...] = ({"tea": 1.0}, False, (10, 0.0), ["tea"], None)
    ranked = [(9, 3.0), (7, 2.0)]
    used: dict[int, int] = {}
    lent = shown.keyword_hits(cache, cfg, [9, 7], only, (used, 40), ranked, filters, *rest)
    assert lent is None
    hits = shown.keyword_hits(cache, cfg, [9, 7], only, None, ranked, filters, *rest)
    assert hits is not None and [h.path for h in hits] == ["memory/b.md"]
    used.clear()
    full = shown.keyword_hits(cache, cfg, [9, 7], rows, (used, 40), ranked, filters, *rest)
    assert full is not None and [h.path for h in full] == ["memory/b.md", "memory/a.md"]
    assert used == {9: 40, 7: 41}
    assert _fields(full) == _fields(
        shown.keyword_hits(cache, cfg, [9, 7], rows, None, ranked, filters, *rest)
    )


def test_what_whole_lines_gives_is_read_as_body_and_last_alike_by_snippet_and_hits(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snippet (compiled.snippet, shown_hits') and the hits (keyword_hits) read what
    whole_lines gives with one check (_compiled.h's compiled_body_last): a pair of the body
    and its last line shown as given; anything else, the same error from both."""
    cfg = SearchConfig()
    text = "tea in the garden\nkites at sunrise"
    rows = {7: Row("memory/a.md", "memory", "", 1, 2, "", text, False)}
    cache = LineStems()
    cache.get(7, text, tokenize)
    args: tuple[Any, ...] = ([7], rows, None, [(7, 3.0)], Filters(("memory",), None, None, None))
    rest: tuple[Any, ...] = ({"tea": 1.0}, False, (10, 0.0), ["tea"], None)

    def giving(gives: Any) -> Any:
        return lambda text, first, last, budget: gives

    def by_snippet(gives: Any) -> Any:
        return compiled.snippet(text, 1, 2, [1.0, 0.0], 700, text_lines, giving(gives), Snippet)

    def by_hits(gives: Any) -> Any:
        with monkeypatch.context() as m:
            m.setattr(shown, "_SHOWN", (text_lines, giving(gives), shown_text))
            return shown.keyword_hits(cache, cfg, *args, *rest)

    made, hits = by_snippet(("kites", 1)), by_hits(("kites", 1))  # its last: line 1 of 0, 1
    assert made == ("kites", 1, 2) and hits is not None
    assert (hits[0].snippet, hits[0].snippet_start_line, hits[0].snippet_end_line) == made
    for gives in (["tea", 1], ("tea",), ("tea", 1, 2), "tea", ("tea", "1"), ("t", 2**70)):
        errors = []
        for way in (by_snippet, by_hits):
            with pytest.raises((TypeError, OverflowError)) as raised:
                way(gives)
            errors.append((raised.type, str(raised.value)))
        assert errors[0] == errors[1], gives
        assert len(gives) == 2 or errors[0] == (TypeError, "whole_lines must give (body, last)")
