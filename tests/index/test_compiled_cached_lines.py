"""The compiled pass over a search's candidates (_compiled_lines.c: cached_line_scores,
through LineStems.score_cached) against the Python path it replaces (peek_many, then
line_scores, each score set as its candidate's ``lines``, refocused for a question asking
when): the same candidates scored, the same doubles (float.hex), the same LRU order; and
None, with no line set, when a cached chunk's numbering is not the current one. An install
without a compiler has only the Python path: these tests are skipped there."""

from __future__ import annotations

import random

import pytest

from compiled_util import lru
from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search import snippets
from memoryd.index.search.candidates import Candidate
from memoryd.index.search.focus import WHEN_BOOST, refocus, timed_lines
from memoryd.index.search.snippets import LineStems, line_scores

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")


WORDS = ["tea", "teas", "garden", "kite", "run", "the", "é", "x1", "sunrise", "paint", "yesterday"]
TIMES = ["yesterday", "May", "2022", "last week"]  # a line naming a time (focus.timed_lines)


class Other(Candidate):  # another type among them: read the usual way
    __slots__ = ()


def _text(rng: random.Random) -> str:
    lines = [" ".join(rng.choices(WORDS, k=rng.randint(0, 7))) for _ in range(rng.randint(1, 30))]
    lines = [f"{line} {rng.choice(TIMES)}" if rng.random() < 0.2 else line for line in lines]
    return "\n".join(lines)


def _python(cache: LineStems, cands: list[Candidate], weights: dict[str, float], when: bool) -> int:
    """fusion._cached_line_scores' Python path; how many lists refocus raised."""
    peeked = cache.peek_many([(c.id, c.text) for c in cands])
    chunks = [lines for lines in peeked if lines is not None]
    known = [c for c, lines in zip(cands, peeked, strict=True) if lines is not None]
    raised = 0
    for c, scores in zip(known, line_scores(chunks, weights), strict=True):
        c.lines = refocus(c.text, scores, when)
        raised += c.lines is not scores
    return raised


def _state(cache: LineStems, cands: list[Candidate]) -> tuple[object, ...]:
    lines = [None if c.lines is None else [x.hex() for x in c.lines] for c in cands]
    return lines, lru(cache)


def test_the_compiled_pass_scores_as_the_python_path(tokenize: TokenizeOffsets) -> None:
    rng = random.Random(38)
    raised = 0
    for case in range(200):
        texts = {i: _text(rng) for i in range(rng.randint(1, 50))}
        capacity = rng.choice((8, 4096))
        twin = [LineStems(capacity=capacity) for _ in range(2)]
        for cache in twin:  # the same chunks cached, in the same order
            for i in random.Random(case).sample(sorted(texts), len(texts) // 2):
                cache.get(i, texts[i], tokenize)
        picked = rng.sample(sorted(texts), rng.randint(0, len(texts)))
        changed = {i for i in picked if rng.random() < 0.1}  # an id reused by a new text
        weights = {w: rng.choice((0.5, 1.25, rng.uniform(1e-3, 9.0))) for w in rng.sample(WORDS, 4)}
        when = rng.random() < 0.5  # a question asking when: the lines naming a time raised
        timed = (timed_lines, 1.0 + WHEN_BOOST) if when else None
        if rng.random() < 0.1:
            weights = {"zzz": 1.0}  # no stem of the query cached: every line 0.0
        runs = []
        for cache, compiled_pass in zip(twin, (True, False), strict=True):
            cands = [
                (Other if i % 7 == 0 else Candidate)(i, text=texts[i] + ("!" * (i in changed)))
                for i in picked
            ]
            if compiled_pass:
                known = cache.score_cached(cands, weights, timed)
                assert known == [c for c in cands if c.lines is not None], case
            else:
                raised += _python(cache, cands, weights, when)
            runs.append(_state(cache, cands))
        assert runs[0] == runs[1], case
    assert raised > 50  # the lines naming a time were raised in many


def test_another_numbering_is_left_to_python(tokenize: TokenizeOffsets) -> None:
    cache = LineStems(max_stems=3)
    cache.get(1, "tea garden kite run", tokenize)  # 4 stems: the next chunk renews it
    old = cache._items[1]
    cache.get(2, "tea sunrise", tokenize)
    cache._items[1] = old  # as a search tokenizing under the old numbering left it
    cands = [Candidate(1, text="tea garden kite run"), Candidate(2, text="tea sunrise")]
    assert cache.score_cached(cands, {"tea": 1.0}) is None
    assert [c.lines for c in cands] == [None, None]
    chunks = [old[1], cache._items[2][1]]
    assert compiled.line_scores(chunks, [0], [1.0], chunks[1].vocab) is None
    assert line_scores(chunks, {"tea": 1.0}) == [[1.0], [1.0]]  # each by its own numbering


def test_without_the_module_nothing_is_scored_at_once(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = LineStems()
    cache.get(1, "tea", tokenize)
    monkeypatch.setattr(snippets, "compiled", None)
    c = Candidate(1, text="tea")
    assert cache.score_cached([c], {"tea": 1.0}) is None
    assert c.lines is None


_EMPTIED: list[list[Candidate]] = []  # the lists of candidates _Emptying empties


class _Emptying(Candidate):
    """A candidate whose text read (Python, a property) empties the list being scored."""

    __slots__ = ()

    @property  # type: ignore[override]
    def text(self) -> str:
        for cands in _EMPTIED:
            cands.clear()
        return Candidate.text.__get__(self)  # type: ignore[attr-defined,no-any-return]

    @text.setter
    def text(self, value: str) -> None:
        Candidate.text.__set__(self, value)  # type: ignore[attr-defined]


def test_a_list_changed_while_it_is_scored_is_read_as_it_was(tokenize: TokenizeOffsets) -> None:
    cache = LineStems()
    for i in (1, 2, 3):
        cache.get(i, "tea garden", tokenize)
    cands = [Candidate(1, text="tea garden"), _Emptying(2, text="tea garden")]
    cands.append(Candidate(3, text="tea garden"))
    held = list(cands)
    _EMPTIED[:] = [cands]
    tea = cache._vocab["tea"]  # the candidates were borrowed from the list: a crash
    got = compiled.cached_line_scores(cache._lent(len(cands)), cands, [tea], [1.0], cache._vocab)
    _EMPTIED.clear()
    assert [c.id for c in got] == [1, 2, 3]
    assert [c.lines for c in held] == [[1.0], [1.0], [1.0]]
