"""The candidates made by the compiled part (index/_compiled_candidates.c: make_candidates)
against load_candidates' Python version (Candidate(i, *row, bm25.get(i))): the same
objects field for field, in the same order, rows missing left out; and None, leaving it to
Python, for a row that is not a plain Row or names that do not fit. An install without a
compiler has only the Python version: these tests are skipped there."""

from __future__ import annotations

import random
from dataclasses import astuple
from typing import Any

import pytest

from memoryd.index.search import candidates
from memoryd.index.search.candidates import Candidate, load_candidates
from memoryd.index.search.rows import Row

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")


def _rows(rng: random.Random, ids: list[int]) -> dict[int, Row]:
    return {
        i: Row(f"memory/{i}.md", "memory", rng.choice(("", "2024-01-02")), i, i + 9, "", "t", True)
        for i in ids
        if rng.random() < 0.8
    }


def _python(ids: list[int], found: dict[int, Row], bm25: dict[int, float] | None) -> list[Any]:
    score = (bm25 or {}).get
    return [Candidate(i, *row, score(i)) for i in ids if (row := found.get(i)) is not None]


def test_the_compiled_candidates_are_the_python_ones() -> None:
    rng = random.Random(38)
    names, tail = candidates._FIELDS, candidates._TAIL
    assert tail == (None, -1, None)
    for case in range(300):
        ids = rng.sample(range(1, 10_000), rng.choice((0, 1, 5, 40, 200)))
        found = _rows(rng, ids)
        bm25 = rng.choice((None, {i: rng.uniform(0.1, 9.0) for i in ids if rng.random() < 0.7}))
        got = compiled.make_candidates(Candidate, names, ids, found, bm25, tail)
        want = _python(ids, found, bm25)
        assert got is not None
        assert [type(c) for c in got] == [Candidate] * len(want), case
        assert [astuple(c) for c in got] == [astuple(c) for c in want], case
        assert all(g.text is w.text and g.path is w.path for g, w in zip(got, want, strict=True))


def test_load_candidates_is_the_same_with_and_without_the_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(5)
    ids = rng.sample(range(1, 500), 60)
    found = _rows(rng, ids)
    monkeypatch.setattr(candidates, "read_rows", lambda *a: found)
    bm25 = {i: float(i) for i in ids[::2]}
    made = load_candidates(None, ids, None, 0, bm25)  # type: ignore[arg-type]
    monkeypatch.setattr(candidates, "compiled", None)
    assert [astuple(c) for c in made] == [
        astuple(c)
        for c in load_candidates(None, ids, None, 0, bm25)  # type: ignore[arg-type]
    ]


def test_anything_else_is_left_to_python() -> None:
    names, tail = candidates._FIELDS, candidates._TAIL
    row = Row("a.md", "memory", "", 1, 2, "", "t", False)
    assert compiled.make_candidates(Candidate, names, [1], {1: tuple(row)[:7]}, None, tail) is None
    assert compiled.make_candidates(Candidate, names[:-1], [1], {1: row}, None, tail) is None
    assert compiled.make_candidates(Candidate, names, [1], {1: row}, [], tail) is None
    assert compiled.make_candidates(Candidate, names, [2], {1: row}, None, tail) == []
    assert compiled.make_candidates(type(iter(())), names, [1], {1: row}, None, tail) is None


_EMPTIED: list[Any] = []  # the ids and rows _Emptying empties


class _Emptying:
    """A candidate class whose ``lines`` is set by Python (a property) that empties the ids
    and rows being made into candidates."""

    __slots__ = (*candidates._FIELDS[:-1], "_lines")

    @property
    def lines(self) -> Any:
        return self._lines

    @lines.setter
    def lines(self, value: Any) -> None:
        for made_of in _EMPTIED:
            made_of.clear()
        self._lines = value


def test_ids_and_rows_changed_while_they_are_made_are_not_read_freed() -> None:
    ids = [1, 2, 3]
    found = {i: Row(f"{i}.md", "memory", "", i, i, "", "t", False) for i in ids}
    _EMPTIED[:] = [ids, found]
    # the ids' and rows' references were borrowed: a crash
    got = compiled.make_candidates(_Emptying, candidates._FIELDS, ids, found, None, (None,) * 3)
    _EMPTIED.clear()
    assert [c.path for c in got] == ["1.md"]  # the rest gone from the rows, as Python sees it
