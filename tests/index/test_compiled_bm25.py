"""The compiled every-posting BM25 top (index/_compiled_bm25.c) against its Python version
(bm25.py_scored_top): the same doubles and the same top (ties by id), on random postings;
and the keyword copy's ``top`` below PRUNE_FROM chunks, which uses it, against FTS5 and
against itself with the module absent. An install without a compiler has only the Python
version: the tests of the compiled module are skipped there."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.index.keyword import bm25
from memoryd.index.keyword.bm25 import K1, MIN_IDF, B, Term, py_scored_top
from memoryd.index.keyword.build import no_freq, no_slots
from memoryd.index.keyword.mirror import PRUNE_FROM
from test_index_keyword_mirror import DAYS, WORDS, fts_top, index, insert, stems_of

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")

Case = tuple[list[Term], npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.int64], int]


def random_case(rng: random.Random) -> Case:
    """Postings as the copy holds them: sparse (slots, freq2) and dense (freq2 by slot,
    shorter or longer than the slots scored), few distinct lengths and frequencies (ties),
    deleted or filtered slots, ids in any order."""
    used = rng.choice([0, 1, 2, 7, 64, 300, 2000])
    lengths = np.array([rng.choice([1, 5, 9, 40, 300]) for _ in range(used)], np.float64)
    avgdl = float(lengths.mean()) if used else 1.0
    norm = K1 * (1 - B + B * lengths / avgdl)
    lists = []
    for _ in range(rng.randint(0, 6)):
        weight = rng.choice([MIN_IDF, 0.3, rng.uniform(1e-3, 12.0)])
        freqs = [2, 3, 4, 10, 255] if rng.random() < 0.5 else [2, 300, 0xFFFF]
        if used and rng.random() < 0.3:
            dense = np.zeros(rng.choice([used, used // 2, used + 40]), np.uint8)
            for s in rng.sample(range(len(dense)), rng.randint(0, len(dense))):
                dense[s] = rng.choice([f for f in freqs if f <= 255])
            lists.append(Term(no_slots(), no_freq(), dense, 255, weight))
        else:
            slots = rng.sample(range(used), rng.randint(0, used))
            freq2 = [rng.choice(freqs) for _ in slots]
            lists.append(
                Term(np.array(slots, np.uint32), np.array(freq2, np.uint16), None, 0xFFFF, weight)
            )
    keep = np.array([rng.random() < 0.85 for _ in range(used)], np.bool_)
    ids = np.array(rng.sample(range(1, 1 << 40), used), np.int64)
    return lists, norm, keep, ids, rng.choice([1, 2, 10, 40, used + 3])


def assert_same_top(case: Case) -> None:
    want = py_scored_top(*case)
    got = compiled.bm25_top(*case)
    assert got == want
    assert [(i, s.hex()) for i, s in got] == [(i, s.hex()) for i, s in want]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_property_the_same_top_and_doubles(seed: int) -> None:
    assert_same_top(random_case(random.Random(seed)))


def test_terms_taken_with_a_count_are_their_slices() -> None:
    """KeywordMirror.top hands the compiled top each term's whole arrays and its count (no
    numpy slice): the same top and doubles as the Terms of the sliced postings
    (bm25.term_of), in C and in Python (scored_top without the module)."""
    rng = random.Random(41)
    for _ in range(400):
        lists, norm, keep, ids, limit = random_case(rng)
        taken: list[tuple[object, ...]] = []
        for t in lists:  # the arrays as a writer left them: postings appended past count
            extra = rng.randint(0, 5) if t.dense is None else 0
            slots = np.concatenate([t.slots, np.arange(extra, dtype=np.uint32)])
            freq2 = np.concatenate([t.freq2, np.full(extra, 7, np.uint16)])
            count = len(t.slots) if t.dense is None else rng.randint(0, 3)
            taken.append((slots, freq2, t.dense, t.top_f2, t.idf, count))
        want = py_scored_top(lists, norm, keep, ids, limit)
        got = compiled.bm25_top(taken, norm, keep, ids, limit)
        assert [(i, s.hex()) for i, s in got] == [(i, s.hex()) for i, s in want]
        py = py_scored_top([bm25.term_of(t) for t in taken], norm, keep, ids, limit)
        assert [(i, s.hex()) for i, s in py] == [(i, s.hex()) for i, s in want]
    norm, keep, ids = np.ones(3), np.ones(3, np.bool_), np.arange(3, dtype=np.int64)
    one = np.array([0], np.uint32)
    with pytest.raises(ValueError):
        compiled.bm25_top([(one, np.zeros(0, np.uint16), None, 2, 1.0, 1)], norm, keep, ids, 5)
    with pytest.raises(ValueError):
        compiled.bm25_top([(one, np.ones(1, np.uint16), None, 2, 1.0, -1)], norm, keep, ids, 5)


def test_ties_go_by_id_and_the_top_stops_at_limit() -> None:
    used = 50
    norm = np.full(used, 1.2, np.float64)
    slots = np.arange(used, dtype=np.uint32)
    term = Term(slots, np.full(used, 4, np.uint16), None, 4, 0.5)  # every chunk the same
    ids = np.array(random.Random(7).sample(range(1000), used), np.int64)
    keep = np.ones(used, np.bool_)
    for limit in (1, 3, 49, 50, 51, 500):
        case = ([term], norm, keep, ids, limit)
        assert_same_top(case)
        assert [i for i, _ in compiled.bm25_top(*case)] == sorted(ids.tolist())[:limit]


def test_nothing_to_rank() -> None:
    norm, keep, ids = np.ones(3), np.ones(3, np.bool_), np.arange(3, dtype=np.int64)
    term = Term(np.array([1], np.uint32), np.array([2], np.uint16), None, 2, 1.0)
    assert compiled.bm25_top([term], norm, keep, ids, 0) == py_scored_top(
        [term], norm, keep, ids, 0
    )
    assert compiled.bm25_top([], norm, keep, ids, 5) == []
    assert compiled.bm25_top([term], norm, np.zeros(3, np.bool_), ids, 5) == []


def test_bad_input_is_refused() -> None:
    norm, keep, ids = np.ones(3), np.ones(3, np.bool_), np.arange(3, dtype=np.int64)
    term = Term(np.array([1], np.uint32), np.array([2], np.uint16), None, 2, 1.0)
    with pytest.raises(TypeError):  # slots of another type
        compiled.bm25_top([term._replace(slots=np.array([1]))], norm, keep, ids, 5)
    with pytest.raises(TypeError):
        compiled.bm25_top([term], norm.astype(np.float32), keep, ids, 5)
    with pytest.raises(TypeError):
        compiled.bm25_top([term], norm, keep, ids.astype(np.int32), 5)
    with pytest.raises(ValueError):  # slots and freq2 of different lengths
        compiled.bm25_top([term._replace(freq2=np.array([2, 2], np.uint16))], norm, keep, ids, 5)
    with pytest.raises(ValueError):  # fewer norms than slots
        compiled.bm25_top([term], norm[:2], keep, ids, 5)
    with pytest.raises(IndexError):  # a posting past the slots scored
        compiled.bm25_top([term._replace(slots=np.array([3], np.uint32))], norm, keep, ids, 5)
    with pytest.raises(TypeError):  # not postings
        compiled.bm25_top([(1, 2, None, 0, 1.0)], norm, keep, ids, 5)
    with pytest.raises(IndexError):  # not a Term
        compiled.bm25_top([(1, 2)], norm, keep, ids, 5)


def test_the_copy_below_prune_from_is_fts5s_with_and_without_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's top with every posting scored (no MaxScore below PRUNE_FROM chunks) is
    FTS5's, bit for bit, compiled or not: through inserts, deletes, dense common stems,
    filters and limits."""
    rng = random.Random(41)
    mirror, conn = index(tmp_path, prune_from=PRUNE_FROM)
    with conn:
        insert(conn, rng, 400)
        insert(conn, rng, 200, source="sessions")
    mirror.load(conn.execute("SELECT id, text, heading, source, day FROM chunks"), 600)
    with conn:  # appended after the load, and deleted
        insert(conn, rng, 60)
        conn.execute("DELETE FROM chunks WHERE abs(random()) % 4 = 0")
    asked = [rng.sample(WORDS, rng.randint(1, 4)) for _ in range(20)]
    asked += [["paint", "painting"], ["zebra"], ["kids", "kids"], WORDS[:3]]
    filters: list[tuple[list[str] | None, str | None, str | None, str, tuple[str, ...]]] = [
        (None, None, None, "1", ()),
        (["sessions"], None, None, "c.source IN ('sessions')", ()),
        (
            ["memory"],
            DAYS[2],
            DAYS[3],
            "c.source = 'memory' AND c.day != '' AND c.day >= ? AND c.day <= ?",
            (DAYS[2], DAYS[3]),
        ),
    ]

    def tops() -> list[list[tuple[int, float]] | None]:
        return [
            mirror.top(stems_of(words), limit, sources, since, until)
            for words in asked
            for limit in (1, 7, 50)
            for sources, since, until, _, _ in filters
        ]

    with_it = tops()
    want = [
        fts_top(conn, words, limit, where, args)
        for words in asked
        for limit in (1, 7, 50)
        for _, _, _, where, args in filters
    ]
    assert with_it == want
    monkeypatch.setattr(bm25, "compiled", None)
    assert tops() == want
    assert mirror.stats()["pruned_tops"] == 0
