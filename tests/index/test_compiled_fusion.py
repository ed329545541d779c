"""The compiled weighted fusion (index/_compiled_fusion.c) against its Python version
(fusion._known_top, with fuse's best BM25 before it): the same doubles (float.hex), the same
top in the same order (ties by id, then place), the same candidate objects, on random
candidates in every mode; and None, leaving it to Python, whenever a value is not a plain
float or a line score is not known yet. An install without a compiler has only the Python
version: these tests are skipped there."""

from __future__ import annotations

import random
from typing import Any

import pytest

from memoryd.index.search import fusion
from memoryd.index.search.candidates import Candidate
from memoryd.index.search.fusion import Weights, _known_top, fuse
from memoryd.index.types import Mode
from memoryd.runtime.config import SearchConfig

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")

MODES: tuple[Mode, ...] = ("keyword", "hybrid", "vector")
SIMS = (None, -0.0, 0.0, 1.0, 0.5, -0.3, 1.7, 0.999999)
BM25S = (None, 0.0, -1.5, 3.25, 7.0)


class Other(Candidate):  # another type among them: read the usual way
    __slots__ = ()


def _candidate(rng: random.Random, i: int) -> Candidate:
    lines = [rng.choice((0.0, 0.0, 1.5, rng.uniform(0.01, 9.0))) for _ in range(rng.randint(0, 9))]
    return (Other if rng.random() < 0.1 else Candidate)(
        rng.choice((i, rng.randint(1, 1 << 40), 5)),  # ties of ids too (place breaks them)
        bm25=rng.choice((*BM25S, rng.uniform(0.01, 9.0))),
        window_sim=rng.choice((*SIMS, rng.uniform(-0.5, 1.5))),
        lines=lines,
    )


def _weights(rng: random.Random) -> Weights:
    wt, wl, wv = (rng.choice((0.0, 0.2, 0.35, 1.0, rng.uniform(0, 1))) for _ in range(3))
    return Weights(wt, wl, wv, wt + wl, wt + wl + wv)


def _best_bm25(cands: list[Candidate]) -> float:
    return max((c.bm25 for c in cands if c.bm25 is not None and c.bm25 > 0), default=0.0)


def _hexed(top: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (s.hex(), None if v is None else v.hex(), None if t is None else t.hex(), id(c))
        for s, v, t, c in top
    ]


def _python(cands: list[Candidate], mode: Mode, idf: float, w: Weights, keep: int) -> list[Any]:
    return _known_top(cands, mode, _best_bm25(cands), idf, w, (), None, keep)


def test_the_compiled_top_is_the_python_top_bit_for_bit() -> None:
    rng = random.Random(38)
    for case in range(2000):
        cands = [_candidate(rng, i) for i in range(rng.choice((0, 1, 2, 10, 40, 60)))]
        mode = rng.choice(MODES)
        idf = rng.choice((0.0, 0.5, 6.5, 1e-3, rng.uniform(0.1, 20.0)))
        w = _weights(rng)
        keep = rng.choice((0, 1, 10, 100))
        got = compiled.known_top(cands, mode == "vector", mode == "hybrid", idf, w, keep)
        assert got is not None, case
        assert _hexed(got) == _hexed(_python(cands, mode, idf, w, keep)), case


def test_it_leaves_to_python_what_it_does_not_take_as_it_is() -> None:
    rng = random.Random(5)
    w = Weights(0.35, 0.35, 0.3, 0.7, 1.0)
    cands = [_candidate(rng, i) for i in range(5)]
    known = compiled.known_top(cands, False, False, 6.5, w, 10)
    assert known is not None

    def variant(**changed: Any) -> list[Candidate]:
        out = [Candidate(c.id, bm25=c.bm25, window_sim=c.window_sim, lines=c.lines) for c in cands]
        for name, value in changed.items():
            setattr(out[2], name, value)
        return out

    for mode in ("keyword", "hybrid"):  # a line not known yet: fuse scores it lazily
        assert compiled.known_top(variant(lines=None), False, mode == "hybrid", 6.5, w, 10) is None
    # ...but vector mode reads no lines
    assert compiled.known_top(variant(lines=None), True, False, 6.5, w, 10) is not None
    for odd in (
        {"bm25": 3},  # an int
        {"window_sim": 1},
        {"lines": (1.0, 2.0)},  # not a list
        {"lines": [1.0, 2]},
    ):
        assert compiled.known_top(variant(**odd), False, True, 6.5, w, 10) is None, odd
    nan = float("nan")  # a NaN score: Python's sort of it is its own
    assert compiled.known_top(cands, False, True, 6.5, w._replace(text=nan), 10) is None
    odd_values = variant(bm25=nan, window_sim=nan, lines=[nan, 1.0])  # no NaN score from these
    got = compiled.known_top(odd_values, False, True, 6.5, w, 10)
    assert got is not None
    assert _hexed(got) == _hexed(_python(odd_values, "hybrid", 6.5, w, 10))
    assert compiled.known_top(tuple(cands), False, False, 6.5, w, 10) is None
    assert compiled.known_top(cands, False, False, 6.5, w, -1) is None


def test_fuse_gives_the_same_answer_with_and_without_the_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(26)
    cfg = SearchConfig()
    for case in range(300):
        cands = [_candidate(rng, i) for i in range(rng.randint(0, 40))]
        mode = rng.choice(MODES)
        fused = rng.choice(("weighted", "rrf"))
        runs = []
        for module in (compiled, None):
            monkeypatch.setattr(fusion, "compiled", module)
            own = [
                Candidate(c.id, bm25=c.bm25, window_sim=c.window_sim, lines=c.lines) for c in cands
            ]
            top = fuse(own, mode, fused, cfg, 6.5, lambda c: None, (), 10)  # type: ignore[arg-type]
            runs.append([(s.hex(), v, t, own.index(c)) for s, v, t, c in top])
        assert runs[0] == runs[1], case


class _Emptying(Candidate):
    """A candidate whose window_sim read (Python, a property) empties the list being fused."""

    __slots__ = ("cands",)

    @property  # type: ignore[override]
    def window_sim(self) -> float | None:
        self.cands.clear()
        return Candidate.window_sim.__get__(self)  # type: ignore[attr-defined,no-any-return]

    @window_sim.setter
    def window_sim(self, value: float | None) -> None:
        Candidate.window_sim.__set__(self, value)  # type: ignore[attr-defined]


def test_a_list_changed_while_it_is_fused_is_read_as_it_was() -> None:
    cands: list[Candidate] = [Candidate(i, bm25=float(i), lines=[1.0]) for i in (1, 3)]
    odd = _Emptying(2, bm25=2.0, lines=[0.5])
    odd.cands = cands
    cands.insert(1, odd)
    w = Weights(1.0, 0.5, 0.0, 1.5, 1.5)
    got = compiled.known_top(cands, False, False, 2.0, w, 10)  # borrowed items: a crash
    assert [c.id for _, _, _, c in got] == [3, 2, 1]
