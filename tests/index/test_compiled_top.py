"""A keyword search's top in one compiled pass (_compiled_top.c, through
LineStems.keyword_hits and shown.keyword_hits) against the path it short-cuts:
candidates_of, filters.accepted, _cached_line_scores, fuse (compiled known_top, and
Python's _known_top) and shown_hits, on what test_compiled_hits.py does not vary: BM25
scores by id (a dict, some ids missing, scores of 0 and below), an IDF total of 0, a bounded
top (1 to 50 of up to 45 candidates), the Python versions, the ranked pairs against their
dict. The same hits, every field (scores as float.hex); the same LRU order; the same
timed_lines calls; a chunk not cached left out when it cannot reach the top (the long way
tokenizes none then), None, having made nothing, when one could (the long way tokenizes it,
and the same search again is the short way's), when a chunk is cached in another
numbering, or a value is not of the plain types; a callback's error is the search's.
An install without a compiler has only the long path: these tests are skipped there."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from compiled_util import counted_timed_lines, fill_lines_of, lru, twin_caches
from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search import candidates, fusion, shown, snippets
from memoryd.index.search.candidates import Filters, candidates_of
from memoryd.index.search.focus import timed_lines
from memoryd.index.search.rows import Row
from memoryd.index.search.snippets import LineStems, text_lines, whole_lines
from memoryd.index.types import SearchHit
from memoryd.runtime.config import SearchConfig

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")


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


def _shown(hits: list[SearchHit] | None) -> object:
    """Every field of every hit, its floats as float.hex."""
    if hits is None:
        return None
    assert all(type(h) is SearchHit for h in hits)
    return [tuple(x.hex() if type(x) is float else x for x in (type(h), *h)) for h in hits]


def _long_way(
    cache: LineStems,
    ids: list[int],
    rows: dict[int, Row],
    bm25: dict[int, float],
    filters: Filters,
    weights: dict[str, float],
    when: bool,
    cfg: SearchConfig,
    min_score: float,
    tokenize: TokenizeOffsets | None = None,
    filled: list[int] | None = None,
) -> list[SearchHit] | None:
    """run_search's path without the short cut (candidates_of ... fuse ... shown_hits);
    ``tokenize``: its fill_lines (each chunk it tokenizes appended to ``filled``), else None
    when a chunk is not cached."""
    keep = cfg.max_results
    cands = filters.accepted(candidates_of(ids, rows, bm25))
    fusion._cached_line_scores(cache, cands, weights, when)
    if tokenize is None and any(c.lines is None for c in cands):
        return None  # fuse would tokenize them

    fill_lines: Callable[[candidates.Candidate], None] = (
        (lambda c: None)  # every candidate's lines are cached
        if tokenize is None
        else fill_lines_of(cache, weights, when, tokenize, [] if filled is None else filled)
    )

    fused = fusion.fuse(
        cands, "keyword", "weighted", cfg, sum(weights.values()), fill_lines, (), keep
    )
    return shown.shown_hits(fused, min_score, keep, fill_lines, 128, list(weights), cfg)


def _short_way(
    cache: LineStems,
    ids: list[int],
    rows: dict[int, Row],
    bm25: Any,
    sources: tuple[str, ...],
    weights: dict[str, float],
    when: bool,
    cfg: SearchConfig,
    min_score: float = 0.0,
) -> list[SearchHit] | None:
    """shown.keyword_hits, ``bm25`` the ranked pairs or (as the tests ask) a dict of them."""
    filters = Filters(sources, None, None, None)
    asked = (when, (cfg.max_results, min_score), list(weights), None)
    return shown.keyword_hits(cache, cfg, ids, rows, None, bm25, filters, weights, *asked)


def _case(rng: random.Random) -> tuple[Any, ...]:
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
    cfg = SearchConfig(max_results=rng.choice((1, 3, 10, 50)))
    return texts, rows, ids, bm25, weights, sources, when, cfg


def test_the_compiled_top_is_the_long_ways(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    tops = skipped = 0
    for case in range(400):
        texts, rows, ids, bm25, weights, sources, when, cfg = _case(rng)
        min_score = rng.choice((0.0, 0.0, 0.4))
        cached = [i for i in ids if rng.random() < 0.97]  # some not cached: None, both
        twin = twin_caches(tokenize, texts, cached)
        filters = Filters(sources, None, None, None)
        calls: list[list[str]] = [[], []]
        with monkeypatch.context() as m:
            m.setattr(shown, "timed_lines", counted_timed_lines(calls[0]))
            short = _short_way(twin[0], ids, rows, bm25, sources, weights, when, cfg, min_score)
        filled: list[int] = []
        with monkeypatch.context() as m:
            m.setattr(fusion, "timed_lines", counted_timed_lines(calls[1]))
            asked = (filters, weights, when, cfg, min_score, tokenize, filled)
            long = _long_way(twin[1], ids, rows, bm25, *asked)
        if short is not None:
            tops += 1
            assert _shown(short) == _shown(long), case
            assert calls[0] == calls[1], case
            assert lru(twin[0]) == lru(twin[1]), case
            assert not filled, case  # what it left out, the long way did not tokenize
            skipped += any(i not in cached for i in ids if i in rows)
        else:  # a chunk not cached could reach the top: the long way tokenizes it ...
            assert filled, case
            again = _short_way(twin[1], ids, rows, bm25, sources, weights, when, cfg, min_score)
            assert again is not None, case  # ... and the same search is the short way's
            assert _shown(again) == _shown(long), case
    assert tops > 250
    assert skipped > 5


def test_the_python_versions_give_those_hits_too(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(38)
    for case in range(150):
        texts, rows, ids, bm25, weights, sources, when, cfg = _case(rng)
        cache = LineStems()
        for i in ids:
            cache.get(i, texts[i], tokenize)
        short = _short_way(cache, ids, rows, bm25, sources, weights, when, cfg)
        with monkeypatch.context() as m:
            m.setattr(fusion, "compiled", None)  # fuse's _known_top, in Python
            m.setattr(snippets, "compiled", None)  # peek_many, line_scores, refocus
            m.setattr(candidates, "compiled", None)  # candidates_of's Candidate(...)
            m.setattr(shown, "compiled", None)  # make_snippet itself
            filters = Filters(sources, None, None, None)
            long = _long_way(cache, ids, rows, bm25, filters, weights, when, cfg, 0.0)
        assert short is not None, case
        assert _shown(short) == _shown(long), case


def test_what_it_leaves_to_the_long_way(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = LineStems(max_stems=3)
    text = "tea garden kite run"
    rows = {1: Row("a.md", "memory", "", 1, 1, "", text, False)}
    cfg = SearchConfig()

    def top(ids: list[Any], bm25: Any, when: bool = False) -> Any:
        return _short_way(cache, ids, rows, bm25, SOURCES, {"tea": 1.0}, when, cfg)

    assert top([1], {1: 1.0}) is None  # not cached
    cache.get(1, text, tokenize)
    assert _shown(top([1], {1: 1.0})) is not None
    assert _shown(top([1], [(1, 1.0)])) is not None
    assert top([1], {1: 1}) is None  # an int bm25: not a plain float
    assert top([1], [(1, 1)]) is None
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
    with monkeypatch.context() as m, pytest.raises(ValueError):  # timed_of's error
        m.setattr(shown, "timed_lines", boom)
        top([1], {}, when=True)
    with monkeypatch.context() as m, pytest.raises(ValueError):  # shown_text's
        m.setattr(shown, "_SHOWN", (text_lines, whole_lines, boom))
        top([1], [(1, 1.0)])
    assert _shown(top([1], [(1, 1.0)])) is not None


def test_without_the_module_it_says_none(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = LineStems()
    cache.get(1, "tea", tokenize)
    monkeypatch.setattr(snippets, "compiled", None)
    rows = {1: Row("a.md", "memory", "", 1, 1, "", "tea", False)}
    hits = _short_way(cache, [1], rows, [(1, 1.0)], SOURCES, {"tea": 1.0}, False, SearchConfig())
    assert hits is None
    assert not hasattr(compiled, "keyword_top")  # the candidates' top: gone with its one use


def test_the_ranked_pairs_give_what_their_dict_gives(tokenize: TokenizeOffsets) -> None:
    """run_search passes the BM25 top itself (its first ids are the candidates' own objects)
    where a dict of it was made: the same hits, scores and LRU order; pairs whose ids are not
    the candidates' own, in order, make it say None (the long way then)."""
    rng = random.Random(11)
    compared = 0
    for case in range(200):
        texts, rows, ids, bm25, weights, sources, when, cfg = _case(rng)
        ranked = [(i, bm25.get(i, 0.0)) for i in ids] + [(-1, 0.0)] * rng.randint(0, 3)
        full = dict(ranked[: len(ids)])
        twin = twin_caches(tokenize, texts)
        asked = (sources, weights, when, cfg)
        by_dict = _short_way(twin[0], ids, rows, full, *asked)
        by_pairs = _short_way(twin[1], ids, rows, ranked, *asked)
        assert _shown(by_pairs) == _shown(by_dict), case
        assert lru(twin[0]) == lru(twin[1]), case
        compared += by_dict is not None
        if len(ids) > 1:
            swapped = [ranked[1], ranked[0], *ranked[2:]]
            assert (
                _short_way(twin[1], ids, rows, swapped, *asked) is None
                or ranked[0][0] == ranked[1][0]
            ), case
            copies = [(int(str(i)), s) for i, s in ranked]  # equal ids, other objects
            if any(i > 256 for i in ids):
                assert _short_way(twin[1], ids, rows, copies, *asked) is None or not rows, case
    assert compared > 150


def test_lines_past_the_kept_room_are_the_long_ways(tokenize: TokenizeOffsets) -> None:
    """A search's lines are kept for its hits in a room of 1024 doubles (_compiled_top.c
    ROOM_LINES): chunks past it keep theirs in arrays of their own; the same hits."""
    rng = random.Random(26)
    for case in range(12):
        texts = {i: "\n".join(_text(rng) for _ in range(4)) for i in rng.sample(range(1, 999), 30)}
        rows = {i: _row(rng, t) for i, t in texts.items()}
        assert sum(t.count("\n") + 1 for t in texts.values()) > 1024
        ids = list(texts)
        bm25 = {i: rng.uniform(0.01, 30.0) for i in ids}
        weights = {w: rng.uniform(1e-3, 9.0) for w in rng.sample(WORDS, 4)}
        cfg = SearchConfig(max_results=rng.choice((3, 10, 30)))
        when = case % 2 == 0
        twin = twin_caches(tokenize, texts)
        _same_both_ways(twin, ids, rows, bm25, weights, when, cfg, case)


def _same_both_ways(
    twin: list[LineStems],
    ids: list[int],
    rows: dict[int, Row],
    bm25: dict[int, float],
    weights: dict[str, float],
    when: bool,
    cfg: SearchConfig,
    case: int,
) -> None:
    """keyword_hits (the short way, on twin[0]) shows what fuse and shown_hits show (the
    long way, on twin[1])."""
    short = _short_way(twin[0], ids, rows, bm25, SOURCES, weights, when, cfg)
    filters = Filters(SOURCES, None, None, None)
    long = _long_way(twin[1], ids, rows, bm25, filters, weights, when, cfg, 0.0)
    assert short is not None and _shown(short) == _shown(long), case


@pytest.mark.parametrize("marks", ["bools", "ints"])
def test_past_the_stack_rooms_are_the_long_ways(
    tokenize: TokenizeOffsets, marks: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """keyword_hits keeps up to 64 entries and a chunk's timed-line marks up to 256 lines on
    its stack (_compiled_top.c ROOM_ENTRIES, MARK_ROOM); more candidates and longer chunks
    take arrays of their own: the same hits, either side of both rooms. timed_lines' tuple
    of True/False is read as it is; other marks (ints in a list) by their truth."""
    if marks == "ints":
        monkeypatch.setattr(shown, "timed_lines", lambda t: [int(x) for x in timed_lines(t)])
    rng = random.Random(64)
    for case in range(16):
        n = rng.choice((1, 63, 64, 65, 90))
        texts = {i: _text(rng) for i in rng.sample(range(1, 10**6), n)}
        for i in rng.sample(list(texts), min(n, 3)):  # some chunks past 256 lines
            texts[i] = "\n".join(_text(rng) for _ in range(rng.choice((9, 20, 30))))
        rows = {i: _row(rng, t) for i, t in texts.items()}
        ids = list(texts)
        bm25 = {i: rng.uniform(0.01, 30.0) for i in ids}
        weights = {w: rng.uniform(1e-3, 9.0) for w in rng.sample(WORDS, 4)}
        cfg = SearchConfig(max_results=rng.choice((3, 10, 50)))
        when = case % 4 != 0
        twin = twin_caches(tokenize, texts)
        _same_both_ways(twin, ids, rows, bm25, weights, when, cfg, case)
        assert lru(twin[0]) == lru(twin[1]), case
    assert max(t.count("\n") + 1 for t in texts.values()) > 256
