"""A keyword search's top in one compiled pass (_compiled_top.c: keyword_top, through
LineStems.keyword_top and fusion._keyword_top) against the path it short-cuts:
candidates_of, filters.accepted, _cached_line_scores and fuse (compiled known_top, and
Python's _known_top). The same top: each (score, v, t) as float.hex and each shown
candidate's every field, its lines too; the same LRU order; the same timed_lines calls; and
None, having made nothing, when a chunk is not cached, is cached in another numbering, or a
value is not of the plain types. An install without a compiler has only the long path:
these tests are skipped there."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search import fusion, snippets
from memoryd.index.search.candidates import MAKE, Candidate, Filters, candidates_of
from memoryd.index.search.focus import WHEN_BOOST, timed_lines
from memoryd.index.search.rows import Row
from memoryd.index.search.snippets import LineStems
from memoryd.runtime.config import SearchConfig

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")


def _lru(cache: LineStems) -> list[int]:
    """The cached chunks, least recently used first (each one's last use: a tick)."""
    return sorted(cache._used_at, key=cache._used_at.__getitem__)


WORDS = ["tea", "teas", "garden", "kite", "run", "the", "é", "x1", "sunrise", "paint", "yesterday"]
TIMES = ["yesterday", "May", "2022", "last week"]  # a line naming a time (focus.timed_lines)
SOURCES = ("memory", "sessions")


def _text(rng: random.Random) -> str:
    lines = [" ".join(rng.choices(WORDS, k=rng.randint(0, 7))) for _ in range(rng.randint(1, 30))]
    lines = [f"{line} {rng.choice(TIMES)}" if rng.random() < 0.2 else line for line in lines]
    return "\n".join(lines)


def _row(rng: random.Random, text: str) -> Row:
    source = rng.choice(SOURCES)
    return Row(
        f"memory/{rng.randint(1, 9)}.md", source, "", 1, text.count("\n") + 1, "", text, False
    )


def _shown(top: list[Any] | None) -> object:
    if top is None:
        return None
    out = []
    for s, v, t, c in top:
        fields = dataclasses.astuple(c)[:-1]  # every field but lines, which are floats:
        lines = None if c.lines is None else [x.hex() for x in c.lines]
        out.append((s.hex(), v, t.hex(), type(c), fields, lines))
    return out


def _long_way(
    cache: LineStems,
    ids: list[int],
    rows: dict[int, Row],
    bm25: dict[int, float],
    filters: Filters,
    weights: dict[str, float],
    when: bool,
    cfg: SearchConfig,
    keep: int,
) -> list[Any] | None:
    """run_search's path without the short cut (candidates_of ... fuse)."""
    cands = filters.accepted(candidates_of(ids, rows, bm25))
    fusion._cached_line_scores(cache, cands, weights, when)
    if any(c.lines is None for c in cands):
        return None  # fuse would tokenize them: the short cut says None then
    return fusion.fuse(
        cands, "keyword", "weighted", cfg, sum(weights.values()), lambda c: None, (), keep
    )


def _case(rng: random.Random, case: int, tokenize: TokenizeOffsets) -> tuple[Any, ...]:
    texts = {i: _text(rng) for i in rng.sample(range(1, 10**6), rng.randint(0, 45))}
    rows = {i: _row(rng, t) for i, t in texts.items() if rng.random() < 0.95}  # some gone
    ids = list(texts)
    scores = [rng.choice((rng.uniform(0.01, 30.0), 2.5, 0.0, -1.0)) for _ in ids]
    bm25 = {
        i: s for i, s in zip(ids, sorted(scores, reverse=True), strict=True) if rng.random() < 0.97
    }
    weights = {w: rng.choice((0.5, 1.25, rng.uniform(1e-3, 9.0))) for w in rng.sample(WORDS, 4)}
    if rng.random() < 0.05:
        weights = {w: 0.0 for w in weights}  # idf total 0: no line share
    sources = rng.choice((SOURCES, ("memory",), ("sessions",)))
    when = rng.random() < 0.4
    return texts, rows, ids, bm25, weights, sources, when, rng.choice((1, 3, 10, 50))


def test_the_compiled_top_is_the_long_ways(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    cfg = SearchConfig()
    tops = 0
    for case in range(400):
        texts, rows, ids, bm25, weights, sources, when, keep = _case(rng, case, tokenize)
        twin = [LineStems(), LineStems()]
        cached = [i for i in ids if rng.random() < 0.97]  # some not cached: None, both
        for cache in twin:
            for i in cached:
                cache.get(i, texts[i], tokenize)
        filters = Filters(sources, None, None, None)
        calls: list[list[str]] = [[], []]

        def counted(k: int, calls: list[list[str]] = calls) -> Any:
            def timed(text: str) -> tuple[bool, ...]:
                calls[k].append(text)
                return timed_lines(text)

            return timed

        short = twin[0].keyword_top(
            ids,
            rows,
            bm25,
            sources,
            _make(),
            weights,
            (counted(0), 1.0 + WHEN_BOOST) if when else None,
            _fusing(cfg, weights),
            keep,
        )
        with monkeypatch.context() as m:
            m.setattr(fusion, "timed_lines", counted(1))
            long = _long_way(twin[1], ids, rows, bm25, filters, weights, when, cfg, keep)
        if short is not None:
            tops += 1
            assert _shown(short) == _shown(long), case
            assert calls[0] == calls[1], case
            assert _lru(twin[0]) == _lru(twin[1]), case
        else:  # an accepted chunk not cached: the long way tokenizes it
            assert long is None, case
    assert tops > 250


def _make() -> tuple[type[Candidate], tuple[str, ...], tuple[Any, ...]]:
    assert MAKE is not None  # a Candidate the compiled parts may make
    return MAKE


def _fusing(
    cfg: SearchConfig, weights: dict[str, float]
) -> tuple[float, float, float, float, float, float]:
    wt, wl, wv = cfg.text_weight, cfg.line_weight, cfg.vector_weight
    return (sum(weights.values()), wt, wl, wv, wt + wl, wt + wl + wv)


def test_the_python_fusion_gives_that_top_too(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(38)
    cfg = SearchConfig()
    for case in range(150):
        texts, rows, ids, bm25, weights, sources, when, keep = _case(rng, case, tokenize)
        cache = LineStems()
        for i in ids:
            cache.get(i, texts[i], tokenize)
        timed = (timed_lines, 1.0 + WHEN_BOOST) if when else None
        short = cache.keyword_top(
            ids,
            rows,
            bm25,
            sources,
            _make(),
            weights,
            timed,
            _fusing(cfg, weights),
            keep,
        )
        with monkeypatch.context() as m:
            m.setattr(fusion, "compiled", None)  # fuse's _known_top, in Python
            m.setattr(snippets, "compiled", None)  # peek_many, line_scores, refocus
            filters = Filters(sources, None, None, None)
            long = _long_way(cache, ids, rows, bm25, filters, weights, when, cfg, keep)
        assert _shown(short) == _shown(long), case


def test_what_it_leaves_to_the_long_way(tokenize: TokenizeOffsets) -> None:
    cache = LineStems(max_stems=3)
    text = "tea garden kite run"
    rows = {1: Row("a.md", "memory", "", 1, 1, "", text, False)}
    fusing = (1.0, 0.3, 0.2, 0.5, 0.5, 1.0)  # idf total, wt, wl, wv, kw_sum, all_sum

    def top(ids: list[int], bm25: dict[int, Any]) -> Any:
        return cache.keyword_top(ids, rows, bm25, SOURCES, _make(), {"tea": 1.0}, None, fusing, 10)

    assert top([1], {1: 1.0}) is None  # not cached
    cache.get(1, text, tokenize)
    assert _shown(top([1], {1: 1.0})) is not None
    assert top([1], {1: 1}) is None  # an int bm25: not a plain float
    assert top([True], {1: 1.0}) is None  # an id that is not a plain int
    old = cache._items[1]
    cache.get(2, "tea sunrise", tokenize)  # a new numbering (past max_stems)
    cache._items[1] = old
    assert top([1], {1: 1.0}) is None
    assert top([], {}) == []
    assert top([5], {5: 1.0}) == []  # no row: gone from the index

    def boom(text: str) -> tuple[bool, ...]:
        raise ValueError(text)

    cache = LineStems()
    cache.get(1, text, tokenize)
    with pytest.raises(ValueError):  # timed_of's error is the search's
        cache.keyword_top([1], rows, {}, SOURCES, _make(), {"tea": 1.0}, (boom, 2.0), fusing, 10)


def test_without_the_module_it_says_none(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = LineStems()
    cache.get(1, "tea", tokenize)
    monkeypatch.setattr(snippets, "compiled", None)
    rows = {1: Row("a.md", "memory", "", 1, 1, "", "tea", False)}
    fusing = (1.0, 0.3, 0.2, 0.5, 0.5, 1.0)  # idf total, wt, wl, wv, kw_sum, all_sum
    assert (
        cache.keyword_top([1], rows, {1: 1.0}, SOURCES, _make(), {"tea": 1.0}, None, fusing, 5)
        is None
    )
    assert isinstance(MAKE, tuple) and MAKE[0] is Candidate


def test_the_ranked_pairs_give_what_their_dict_gives(tokenize: TokenizeOffsets) -> None:
    """run_search passes the BM25 top itself (its first ids are the candidates' own objects)
    where a dict of it was made: the same top, scores and LRU order; pairs whose ids are not
    the candidates' own, in order, make it say None (the long way then)."""
    rng = random.Random(11)
    cfg = SearchConfig()
    compared = 0
    for case in range(200):
        texts, rows, ids, bm25, weights, sources, when, keep = _case(rng, case, tokenize)
        ranked = [(i, bm25.get(i, 0.0)) for i in ids] + [(-1, 0.0)] * rng.randint(0, 3)
        full = dict(ranked[: len(ids)])
        twin = [LineStems(), LineStems()]
        for cache in twin:
            for i in ids:
                cache.get(i, texts[i], tokenize)
        timed = (timed_lines, 1.0 + WHEN_BOOST) if when else None
        fusing = _fusing(cfg, weights)
        by_dict = twin[0].keyword_top(
            ids, rows, full, sources, _make(), weights, timed, fusing, keep
        )
        by_pairs = twin[1].keyword_top(
            ids, rows, ranked, sources, _make(), weights, timed, fusing, keep
        )
        assert _shown(by_pairs) == _shown(by_dict), case
        assert _lru(twin[0]) == _lru(twin[1]), case
        compared += by_dict is not None
        if len(ids) > 1:
            swapped = [ranked[1], ranked[0], *ranked[2:]]
            assert (
                twin[1].keyword_top(
                    ids, rows, swapped, sources, _make(), weights, timed, fusing, keep
                )
                is None
                or ranked[0][0] == ranked[1][0]
            ), case
            copies = [(int(str(i)), s) for i, s in ranked]  # equal ids, other objects
            if any(i > 256 for i in ids):
                assert (
                    twin[1].keyword_top(
                        ids, rows, copies, sources, _make(), weights, timed, fusing, keep
                    )
                    is None
                    or not rows
                ), case
    assert compared > 150
