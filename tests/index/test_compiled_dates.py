"""A keyword search whose question names a day or a time range, its hits made at once
(_compiled_dates.c through shown.keyword_hits with fusion.dating_of) against the path they
short-cut: candidates_of, filters.accepted, _cached_line_scores, fuse with its named days
(the date signal, line_days.on_named_day) and the range's adjust (Signals.adjust), and
shown_hits. The same hits, every field (scores as float.hex), the same LRU order and
timed_lines calls; a chunk not cached left out only when it cannot reach the top. And on
real files: the same answers as an install without the compiled part, the repeat made at
once. Skipped without a compiler (only the long path there)."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from compiled_util import counted_timed_lines, fill_lines_of, lru, twin_caches
from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search import candidates, fusion, shown, snippets
from memoryd.index.search.candidates import Filters, candidates_of
from memoryd.index.search.rows import Row
from memoryd.index.search.signals import NO_PROJECTS, Signals
from memoryd.index.search.snippets import LineStems
from memoryd.index.types import SearchHit, SearchRequest
from memoryd.runtime.config import SearchConfig

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")

WORDS = ["tea", "garden", "kite", "run", "paint", "sunrise", "the", "é"]
PHRASES = ["yesterday", "Last night", "on Monday", "last Friday", "3 days ago", "40 days ago"]
DAYS = ["", "2023-10-12", "2023-10-13", "2023-10-14", "2023-10-16", "2023-11-02", "2023-02-31"]
NAMED = ["2023-10-13", "2023-10-12", "2023-10-09", "2023-02-31", "2024-01-01"]
BOUNDS = [None, None, "", "2023-10-01", "2023-10-13", "2023-10-31"]


def _text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 12)):
        line = " ".join(rng.choices(WORDS, k=rng.randint(0, 6)))
        lines.append(f"{line} {rng.choice(PHRASES)}" if rng.random() < 0.25 else line)
    return "\n".join(lines)


def _shown(hits: list[SearchHit] | None) -> object:
    if hits is None:
        return None
    return [tuple(x.hex() if type(x) is float else x for x in h) for h in hits]


def _case(rng: random.Random) -> tuple[Any, ...]:
    texts = {i: _text(rng) for i in rng.sample(range(1, 10**6), rng.randint(0, 40))}
    rows = {
        i: Row(
            "memory/a.md",
            rng.choice(("memory", "sessions")),
            rng.choice(DAYS),
            1,
            t.count("\n") + 1,
            "",
            t,
            False,
        )
        for i, t in texts.items()
        if rng.random() < 0.95
    }
    ids = list(texts)
    scores = sorted((rng.choice((rng.uniform(0.01, 30.0), 2.5, 0.0)) for _ in ids), reverse=True)
    bm25 = {i: s for i, s in zip(ids, scores, strict=True) if rng.random() < 0.9}
    weights = {w: rng.choice((0.5, 1.25, rng.uniform(1e-3, 9.0))) for w in rng.sample(WORDS, 3)}
    days = tuple(rng.sample(NAMED, rng.choice((0, 1, 1, 2))))
    since, until = rng.choice(BOUNDS), rng.choice(BOUNDS)
    signals = Signals(None, NO_PROJECTS, 0.0, dt.date(2023, 12, 1), since, until)
    return texts, rows, ids, bm25, weights, days, signals


def _long_way(
    cache: LineStems,
    ids: list[int],
    rows: dict[int, Row],
    bm25: dict[int, float],
    asked: tuple[Any, ...],
    tokenize: TokenizeOffsets,
    filled: list[int],
) -> list[SearchHit]:
    """run_search's long path: candidates_of ... fuse (days, adjust) ... shown_hits."""
    filters, weights, when, cfg, min_score, days, signals = asked
    cands = filters.accepted(candidates_of(ids, rows, bm25))
    fusion._cached_line_scores(cache, cands, weights, when)

    fill_lines = fill_lines_of(cache, weights, when, tokenize, filled)

    keep, idf_total = cfg.max_results, sum(weights.values())
    adjust = signals.adjuster()
    fused = fusion.fuse(
        cands, "keyword", "weighted", cfg, idf_total, fill_lines, days, keep, adjust
    )
    return shown.shown_hits(fused, min_score, keep, fill_lines, 128, list(weights), cfg, signals)


def test_the_dated_hits_are_the_long_ways(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(13)
    made = dated = ranged = 0
    for case in range(400):
        texts, rows, ids, bm25, weights, days, signals = _case(rng)
        cfg = SearchConfig(max_results=rng.choice((1, 3, 10)))
        filters = Filters(rng.choice((("memory", "sessions"), ("memory",))), None, None, None)
        when, min_score = rng.random() < 0.4, rng.choice((0.0, 0.0, 0.5))
        cached = [i for i in ids if rng.random() < 0.9]
        twin = twin_caches(tokenize, texts, cached)
        ranges = signals.range_only() if signals.adjuster() is not None else None
        dating = fusion.dating_of(days, ranges)
        calls: list[list[str]] = [[], []]
        with monkeypatch.context() as m:
            m.setattr(shown, "timed_lines", counted_timed_lines(calls[0]))
            asked_short = (when, (cfg.max_results, min_score), list(weights), signals, dating)
            short = shown.keyword_hits(
                twin[0], cfg, ids, rows, None, bm25, filters, weights, *asked_short
            )
        filled: list[int] = []
        with monkeypatch.context() as m:
            m.setattr(fusion, "timed_lines", counted_timed_lines(calls[1]))
            asked = (filters, weights, when, cfg, min_score, days, signals)
            long = _long_way(twin[1], ids, rows, bm25, asked, tokenize, filled)
        if short is None:
            assert filled, case  # only a chunk not cached that could reach the top
            continue
        made += 1
        dated += bool(days)
        ranged += ranges is not None
        assert _shown(short) == _shown(long), case
        assert calls[0] == calls[1], case
        assert lru(twin[0]) == lru(twin[1]), case
        assert not filled, case
    assert made > 200 and dated > 100 and ranged > 80, (made, dated, ranged)


def test_what_a_range_leaves_to_the_long_way() -> None:
    """Line meta or recency: Signals.adjust does more than the range (None: the long way)."""
    today = dt.date(2023, 12, 1)
    assert Signals(None, NO_PROJECTS, 0.0, today, "2023-10-01", None).range_only() == (
        "2023-10-01",
        None,
        1.2,
    )
    assert Signals(None, NO_PROJECTS, 0.0, today, None, None).range_only() is None
    assert Signals(None, NO_PROJECTS, 30.0, today, "2023-10-01", None).range_only() is None
    assert fusion.dating_of((), None) is None
    days, reaches, *_ = fusion.dating_of(["2023-10-13", "2023-02-31"], None) or ()
    assert days == ("2023-10-13", "2023-02-31") and reaches == ("2023-11-13", "")
    with pytest.raises(TypeError):
        compiled.keyword_hits([], {}, None, None, (), (), (), 10, (), ("bad",))


LOGS = {
    "memory/2023-10-12.md": "# Day\n- Melanie painted a sunrise by the lake.\n- Tea after.\n",
    "memory/2023-10-13.md": "# Day\n- Caroline showed Melanie a painting of the lake.\n",
    "memory/2023-10-14.md": "# Day\n- Yesterday Melanie shared a painting with Caroline.\n",
    "memory/2023-11-02.md": "# Day\n- Melanie went camping; no painting this week.\n",
    "memory/2023-06-20.md": "# Day\n- Caroline and Melanie painted the garden fence.\n",
    "MEMORY.md": "# People\n- Melanie paints; Caroline writes about painting.\n",
}
QUESTIONS = [
    "What painting did Melanie show to Caroline on October 13, 2023?",
    "What did Melanie paint in October 2023?",
    "When did Caroline and Melanie paint in June?",
    "Which painting did Melanie share on 2023-10-13 or 2023-10-14?",
]


def _answers(ix: Any, fused: list[int]) -> tuple[list[object], list[int]]:
    """Each question's hits, asked twice (the second: every line the first needed is
    cached), and how many times each search went through fuse (the long way)."""
    out, long_ways = [], []
    for q in QUESTIONS:
        for _ in range(2):
            before = len(fused)
            req = SearchRequest(q, max_results=3, min_score=0.0, mode="keyword", today="2023-12-01")
            out.append(_shown(ix.search(req).results))
            long_ways.append(len(fused) - before)
    return out, long_ways


def test_a_real_index_gives_the_same_answers_with_and_without_the_compiled_part(
    make_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_index.write_all(LOGS)
    ix = make_index()
    ix.sync()
    fused: list[int] = []
    fuse = fusion.fuse

    def counted_fuse(*a: Any, **k: Any) -> Any:
        fused.append(1)
        return fuse(*a, **k)

    monkeypatch.setattr(fusion, "fuse", counted_fuse)
    made, long_ways = _answers(ix, fused)
    assert long_ways[1::2] == [0] * len(QUESTIONS)  # each repeat made at once
    assert all(made) and made[0] == made[1]
    for module in (fusion, snippets, candidates, shown):
        monkeypatch.setattr(module, "compiled", None)
    ix.copies.line_stems.clear()
    assert _answers(ix, fused) == (made, [1] * len(made))  # the long way, the same hits


def test_the_named_days_chunks_in_one_pass_are_numpys(monkeypatch: pytest.MonkeyPatch) -> None:
    """keyword/build.chunks_on_days in C (_compiled.day_chunks) and with numpy: the same ids
    in the same order over random columns (dead slots, unknown sources, slots past ``used``,
    up to 9 days: past 8 numpy answers)."""
    from memoryd.index.keyword import build

    rng = random.Random(17)
    pool = [f"2023-10-{d:02d}" for d in range(1, 21)]
    for case in range(300):
        n = rng.randint(0, 200)
        docs = build.Docs.empty(n + rng.randint(0, 5))
        for slot in range(len(docs.day)):
            docs.day[slot] = build.day_number(rng.choice(pool))
            docs.alive[slot] = rng.random() < 0.8
            docs.source[slot] = rng.choice((0, 1, 1, -1))
        docs.chunk_id[:] = rng.sample(range(1, 10**9), len(docs.chunk_id))
        docs.used = n
        days = rng.sample(pool, rng.choice((1, 1, 2, 3, 9)))
        sources = rng.choice((("memory",), ("sessions",), ("memory", "sessions")))
        limit = rng.choice((0, 1, 5, 40, 400))
        short = build.chunks_on_days(docs, days, sources, limit)
        with monkeypatch.context() as m:
            m.setattr(build, "compiled", None)
            long = build.chunks_on_days(docs, days, sources, limit)
        assert short == long and all(type(i) is int for i in short or []), case
