"""Weighted fusion scores every candidate at once when their line scores are known, and
one by one (stopping at the bound) when some must still be tokenized: the same top, the
same doubles, in every mode, with dates and an adjuster."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from memoryd.index.search.candidates import Candidate
from memoryd.index.search.fusion import DATE_WEIGHT, Scored, fuse
from memoryd.index.types import Mode
from memoryd.runtime.config import SearchConfig

DAYS = ("2024-03-01", "2024-03-02", "2024-03-03")


def _candidates(rng: random.Random, n: int) -> list[Candidate]:
    out = []
    for i in range(n):
        lines = [rng.choice((0.0, 0.0, rng.uniform(0.1, 4.0))) for _ in range(rng.randint(1, 9))]
        out.append(
            Candidate(
                rng.randint(1, 10_000) * 10 + i,  # distinct ids, not in order
                path=f"memory/{rng.choice(DAYS)}.md",
                day=rng.choice((*DAYS, "")),
                bm25=rng.choice((None, 0.0, rng.uniform(0.01, 9.0), 3.25)),
                window_sim=rng.choice((None, rng.uniform(-0.2, 1.2), 0.5)),
                lines=lines,
            )
        )
    return out


def _fused(
    cands: list[Candidate], mode: Mode, lazy: bool, days: tuple[str, ...], adjusted: bool
) -> list[Scored]:
    cfg = SearchConfig()
    idf_total = 6.5
    own = [replace(c) for c in cands]
    kept = {c.id: c.lines for c in own}
    if lazy:  # lines unknown: fuse asks for them one candidate at a time
        for c in own:
            c.lines = None

    def fill_lines(c: Candidate) -> None:
        if c.lines is None:
            c.lines = kept[c.id]

    def adjust(s: float, c: Candidate) -> float:
        return s * (1.0 + 0.1 * (c.id % 3)) if c.day else s

    return fuse(
        own, mode, "weighted", cfg, idf_total, fill_lines, days, 10, adjust if adjusted else None
    )


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_scoring_all_at_once_gives_the_bounded_loops_top(mode: Mode) -> None:
    rng = random.Random(7)
    for case in range(300):
        cands = _candidates(rng, rng.randint(0, 40))
        days = DAYS[:1] if case % 3 == 0 else ()
        adjusted = case % 2 == 0
        at_once = _fused(cands, mode, False, days, adjusted)
        one_by_one = _fused(cands, mode, True, days, adjusted)
        assert [(s, v, t, c.id) for s, v, t, c in at_once] == [
            (s, v, t, c.id) for s, v, t, c in one_by_one
        ], case


def test_vector_mode_scores_the_cosine_dated_and_adjusted() -> None:
    rng = random.Random(11)
    for case in range(100):
        cands = _candidates(rng, rng.randint(0, 40))
        days = DAYS[:1] if case % 2 else ()
        got = _fused(cands, "vector", False, days, True)
        expected = []
        for c in cands:
            v = max(0.0, min(1.0, c.window_sim)) if c.window_sim is not None else None
            s = v or 0.0
            s = (1 - DATE_WEIGHT) * s + DATE_WEIGHT * (c.day in days) if days else s
            s = s * (1.0 + 0.1 * (c.id % 3)) if c.day else s
            expected.append((s, v, None, c.id))
        expected.sort(key=lambda x: (-x[0], x[3]))
        assert [(s, v, t, c.id) for s, v, t, c in got] == expected[:10], case
