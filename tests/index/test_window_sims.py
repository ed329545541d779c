"""A search's window similarities (index/vectors/window_sims.py): kept or read, every
candidate's best window and its similarity are the doubles of one product over the
candidates' windows laid out chunk by chunk, best window first among ties."""

from __future__ import annotations

import apsw
import numpy as np
import numpy.typing as npt
import pytest

from memoryd.index.scratch import Scratch
from memoryd.index.vectors import window_sims as ws
from memoryd.index.vectors.mirror import VectorWidthError
from memoryd.index.vectors.window_sims import KeptWindows, Windows, WindowSims, window_sims
from memoryd.index.vectors.windows import WINDOW_SLOTS

DIMS = 24


def index(rng: np.random.Generator, chunks: int) -> tuple[apsw.Connection, dict[int, int]]:
    """A window_vectors table: chunk ids 1..chunks with 0-7 windows each (float16, as the
    index stores them), some of them equal (ties); the windows each chunk has."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE window_vectors(id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
    counts = {}
    with conn:
        for chunk in range(1, chunks + 1):
            counts[chunk] = int(rng.integers(0, 8))
            vecs = rng.standard_normal((counts[chunk], DIMS)).astype(np.float16)
            if counts[chunk] > 2 and rng.random() < 0.3:
                vecs[2] = vecs[0]  # a tie: the first of them is the best window
            for n, v in enumerate(vecs):
                conn.execute(
                    "INSERT INTO window_vectors VALUES (?, ?)",
                    (chunk * WINDOW_SLOTS + n, v.tobytes()),
                )
    return conn, counts


def reference(conn: apsw.Connection, ids: list[int], q: npt.NDArray[np.float32]) -> WindowSims:
    """The product it replaced: the windows concatenated chunk by chunk in the order asked,
    one matrix product, each chunk's best by a stable sort (as fill_window_sims was)."""
    parts = [ws.read_windows(conn, [i]) for i in ids]
    found = [p for p in parts if p is not None]
    if not found:
        return WindowSims([], [], [])
    wids = np.concatenate([p.ids for p in found])
    sims = np.concatenate([p.vectors for p in found]) @ q
    owner = wids // WINDOW_SLOTS
    order = np.lexsort((-sims, owner))
    firsts = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
    by_chunk = {
        int(owner[f]): (int(wids[f] % WINDOW_SLOTS), float(sims[f])) for f in firsts.tolist()
    }
    chunks = [i for i in ids if i in by_chunk]
    return WindowSims(chunks, [by_chunk[i][0] for i in chunks], [by_chunk[i][1] for i in chunks])


def exact(found: WindowSims) -> tuple[list[int], list[int], list[str]]:
    return found.chunks, found.best, [s.hex() for s in found.sims]


@pytest.fixture(params=["compiled", "numpy"])
def either(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once with the compiled gather and best windows (when built), once without."""
    if request.param == "numpy":
        monkeypatch.setattr(ws, "compiled", None)
    elif ws.compiled is None:
        pytest.skip("the compiled part is not built (no compiler)")
    return str(request.param)


@pytest.mark.parametrize("seed", range(4))
def test_kept_or_read_the_same_doubles_as_one_product_over_the_candidates(
    seed: int, either: str
) -> None:
    rng = np.random.default_rng(seed)
    conn, counts = index(rng, 60)
    kept = KeptWindows()
    scratch = Scratch()
    for search in range(30):  # the first searches read and keep, the later ones gather
        size = int(rng.integers(1, 60))
        ids = [int(i) for i in rng.choice(np.arange(1, 61), size, replace=False)]
        q = rng.standard_normal(DIMS).astype(np.float32)
        want = exact(reference(conn, ids, q))
        assert exact(window_sims(conn, ids, q, kept, 1, scratch)) == want, search
        assert exact(window_sims(conn, ids, q, None, 1, scratch)) == want
    assert all(counts[i] > 0 for i in want[0])


def test_a_chunk_without_windows_and_a_single_window(either: str) -> None:
    rng = np.random.default_rng(9)
    conn, counts = index(rng, 30)
    none = [i for i, n in counts.items() if n == 0][:2]
    one = [i for i, n in counts.items() if n == 1][:1]
    q = rng.standard_normal(DIMS).astype(np.float32)
    kept = KeptWindows()
    for ids in (none, one, none + one, one + none):
        want = exact(reference(conn, ids, q))
        assert exact(window_sims(conn, ids, q, kept, 1, Scratch())) == want
        assert exact(window_sims(conn, ids, q, kept, 1, Scratch())) == want  # kept now


def test_windows_are_kept_for_their_generation_only() -> None:
    rng = np.random.default_rng(5)
    conn, _ = index(rng, 10)
    kept = KeptWindows()
    q = rng.standard_normal(DIMS).astype(np.float32)
    window_sims(conn, [1, 2, 3], q, kept, 4, Scratch())
    assert [s is not None for s in kept.find([1, 2, 3, 4], 4)[1]] == [True, True, True, False]
    assert kept.find([1], 3)[1] == [None]  # a search older than the last change: nothing
    assert kept.add([4], ws.read_windows(conn, [4]), 3) is None  # ... and it keeps nothing
    assert kept.find([1, 4], 5)[1] == [None, None]  # the index changed: all gone
    with conn:  # a chunk rewritten under the new generation is read again, not reused
        conn.execute(
            "UPDATE window_vectors SET embedding = ? WHERE id = ?",
            (np.ones(DIMS, np.float16).tobytes(), 1 * WINDOW_SLOTS),
        )
    want = exact(reference(conn, [1, 2], q))
    assert exact(window_sims(conn, [1, 2], q, kept, 5, Scratch())) == want


def test_past_its_budget_nothing_more_is_kept_and_the_answer_is_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(6)
    conn, _ = index(rng, 40)
    monkeypatch.setattr(ws, "ARENA_BYTES_MAX", 10 * DIMS * 4)  # ten windows
    kept = KeptWindows()
    q = rng.standard_normal(DIMS).astype(np.float32)
    for ids in ([1, 2], list(range(1, 41)), [3, 1, 2]):
        want = exact(reference(conn, ids, q))
        assert exact(window_sims(conn, ids, q, kept, 1, Scratch())) == want
    assert sum(1 for s in kept.find(list(range(1, 41)), 1)[1] if s is not None) < 40


def test_an_array_that_grows_keeps_what_searches_hold() -> None:
    kept = KeptWindows()
    kept.find([], 1)
    first = Windows(np.arange(3, dtype=np.int64) + WINDOW_SLOTS, np.ones((3, 4), np.float32))
    added = kept.add([1], first, 1)
    assert added is not None and added[1] == {1: (0, 3)}
    held = added[0]
    assert held is not None
    many = 300  # more than the first array's room: a new one
    more = Windows(
        np.arange(many, dtype=np.int64) % WINDOW_SLOTS
        + 2 * WINDOW_SLOTS * (1 + np.arange(many) // WINDOW_SLOTS),
        np.full((many, 4), 2, np.float32),
    )
    grown = kept.add([2, 4, 6, 8, 10], more, 1)
    assert grown is not None and grown[0] is not held
    assert np.array_equal(held.vectors[:3], np.ones((3, 4), np.float32))  # untouched
    assert grown[1][2] == (3, WINDOW_SLOTS)


def test_a_query_of_another_width_is_refused() -> None:
    rng = np.random.default_rng(2)
    conn, counts = index(rng, 10)
    ids = [i for i, n in counts.items() if n]
    q = np.ones(DIMS + 1, np.float32)
    with pytest.raises(VectorWidthError):
        window_sims(conn, ids, q, None, 1, Scratch())
    kept = KeptWindows()
    window_sims(conn, ids, np.ones(DIMS, np.float32), kept, 1, Scratch())
    with pytest.raises(VectorWidthError):
        window_sims(conn, ids, q, kept, 1, Scratch())


def test_a_nan_similarity_sorts_last_as_before(either: str) -> None:
    rng = np.random.default_rng(8)
    conn, counts = index(rng, 20)
    ids = [i for i, n in counts.items() if n > 1][:4]
    with conn:  # one window of NaN in one chunk, every window of another
        nan = np.full(DIMS, np.nan, np.float16).tobytes()
        conn.execute("UPDATE window_vectors SET embedding = ? WHERE id = ?", (nan, ids[0] * 64))
        conn.execute("UPDATE window_vectors SET embedding = ? WHERE id / 64 = ?", (nan, ids[1]))
    q = rng.standard_normal(DIMS).astype(np.float32)
    want = exact(reference(conn, ids, q))
    assert want[2][1] == "nan" and want[2][0] != "nan"
    for kept in (None, KeptWindows(), KeptWindows()):
        assert exact(window_sims(conn, ids, q, kept, 1, Scratch())) == want


def test_a_snippets_window_spans_are_counted_once_per_text() -> None:
    from memoryd.embeddings.tokenizer import load_tokenizer
    from memoryd.index.vectors.windows import kept_window_spans, window_spans

    text = "\n".join(f"- line {i} about the blue bicycle and the dentist" for i in range(40))
    before = kept_window_spans.cache_info()
    spans = kept_window_spans(text, 32)
    assert spans == tuple(window_spans(text, load_tokenizer(), 32)) and len(spans) > 1
    assert kept_window_spans(text, 32) is spans
    assert kept_window_spans.cache_info().hits == before.hits + 1
    assert kept_window_spans(text, 64) == tuple(window_spans(text, load_tokenizer(), 64))


def test_the_compiled_gather_and_best_windows_are_the_numpy_ones() -> None:
    compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")
    rng = np.random.default_rng(12)
    for _ in range(200):
        rows = int(rng.integers(1, 120))
        vectors = rng.standard_normal((rows, DIMS)).astype(np.float32)
        vectors[rng.random(rows) < 0.05] = np.nan
        dup = rng.integers(0, rows, rows // 4)
        vectors[dup] = vectors[rng.integers(0, rows, len(dup))]  # ties
        arena = ws._Arena(rng.integers(0, 1 << 40, rows), vectors)
        spans = []
        for _ in range(int(rng.integers(1, 12))):
            start = int(rng.integers(0, rows))
            spans.append((start, int(rng.integers(1, rows - start + 1))))
        q = rng.standard_normal(DIMS).astype(np.float32)
        chunks = list(range(len(spans)))
        want = exact(ws.py_kept_sims(chunks, spans, arena, q, Scratch()))
        assert exact(ws._kept_sims(chunks, spans, arena, q, Scratch())) == want
        total = sum(n for _, n in spans)
        out = np.empty((total, DIMS), np.float32)
        assert compiled.take_spans(vectors, spans, out) == total
        assert np.array_equal(
            out, np.concatenate([vectors[a : a + n] for a, n in spans]), equal_nan=True
        )


def test_the_compiled_part_refuses_what_it_cannot_read() -> None:
    compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")
    vectors = np.ones((4, DIMS), np.float32)
    out = np.empty((4, DIMS), np.float32)
    wids = np.arange(4, dtype=np.int64)
    with pytest.raises(ValueError):
        compiled.take_spans(vectors, [(3, 2)], out)  # past the rows
    with pytest.raises(ValueError):
        compiled.take_spans(vectors, [(0, 0)], out)  # an empty span
    with pytest.raises(ValueError):
        compiled.take_spans(vectors, [(0, 4), (0, 1)], out)  # no room
    with pytest.raises(TypeError):
        compiled.take_spans(vectors.astype(np.float64), [(0, 1)], out)
    with pytest.raises(ValueError):
        compiled.span_best(np.ones(2, np.float32), [(0, 3)], wids, WINDOW_SLOTS)
    with pytest.raises(TypeError):
        compiled.span_best(np.ones(4, np.float32), [(0, 1)], wids.astype(np.int32), 64)
    with pytest.raises(ValueError):
        compiled.span_best(np.ones(4, np.float32), [(0, 1)], wids, 0)
    assert compiled.span_best(np.ones(4, np.float32), [], wids, 64) == ([], [])


def test_the_next_generation_starts_as_large_as_the_last_grew() -> None:
    rng = np.random.default_rng(4)
    conn, counts = index(rng, 200)
    kept = KeptWindows()
    q = rng.standard_normal(DIMS).astype(np.float32)
    for start in range(1, 200, 20):  # more and more chunks: the array grows
        window_sims(conn, list(range(start, start + 20)), q, kept, 1, Scratch())
    grown = kept.find([], 1)[0]
    assert grown is not None and len(grown.ids) >= sum(counts.values())
    window_sims(conn, [1, 2, 3], q, kept, 2, Scratch())  # a change: a new array, as large
    fresh = kept.find([], 2)[0]
    assert fresh is not None and fresh is not grown and len(fresh.ids) == len(grown.ids)
