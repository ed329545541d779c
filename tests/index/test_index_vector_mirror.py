"""The in-memory KNN scan: the same answers as sqlite-vec, committed changes only."""

from __future__ import annotations

import apsw
import numpy as np
import pytest

from engine_util import IndexFactory, in_memory, search
from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.index.row_codes import day_number
from memoryd.index.scratch import SCRATCH
from memoryd.index.types import SearchRequest
from memoryd.index.vectors.mirror import (
    QUANTISED_FROM,
    VectorMirror,
    VectorWidthError,
)

DIMS = 16


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def hooked(mirror: VectorMirror) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.set_commit_hook(mirror.commit)
    conn.set_rollback_hook(mirror.rollback)
    conn.execute("CREATE TABLE t(x)")
    return conn


def loaded(max_bytes: int = 1 << 30) -> tuple[VectorMirror, apsw.Connection]:
    mirror = VectorMirror(max_bytes)
    conn = hooked(mirror)
    mirror.load(conn, None)
    return mirror, conn


def put_all(
    conn: apsw.Connection,
    mirror: VectorMirror,
    vecs: dict[int, np.ndarray],
    day: str = "2024-05-01",
    source: str = "memory",
) -> None:
    with conn:
        for i, v in vecs.items():
            mirror.stage_put(i, v, source, day)
        conn.execute("INSERT INTO t VALUES (1)")


def test_knn_is_the_exact_nearest_neighbours_through_puts_deletes_and_regrowth() -> None:
    rng = np.random.default_rng(7)
    mirror, conn = loaded()
    live: dict[int, np.ndarray] = {}
    for round_ in range(6):  # > 1024 rows: the arrays grow and compact under deletes
        batch = {round_ * 1000 + i: unit(rng) for i in range(400)}
        put_all(conn, mirror, batch)
        live.update(batch)
        gone = [i for i in list(live) if rng.random() < 0.3]
        with conn:
            mirror.stage_delete(gone)
            conn.execute("INSERT INTO t VALUES (1)")
        for i in gone:
            del live[i]
        again = dict(list(live.items())[:20])  # re-put: replaces, never duplicates
        put_all(conn, mirror, again)
    q = unit(rng)
    ids = np.array(list(live))
    expected = ids[np.argsort(-(np.stack(list(live.values())) @ q), kind="stable")][:25]
    assert mirror.knn(q, 25) == [int(i) for i in expected]
    assert mirror.stats()["vectors"] == len(live)
    assert len(mirror.knn(q, 10**6) or []) == len(live)


def test_a_mirror_without_deletes_ranks_as_the_filtered_scan_does() -> None:
    rng = np.random.default_rng(11)
    mirror, conn = loaded()
    vecs = {i: unit(rng) for i in range(1, 301)}
    for i in range(1, 301, 7):
        vecs[i + 1] = vecs[i]  # ties: their order is the scan's
    put_all(conn, mirror, vecs)
    for deleted in ([], [5, 6, 100]):
        with conn:
            mirror.stage_delete(deleted)
            conn.execute("INSERT INTO t VALUES (1)")
        for _ in range(5):
            q = unit(rng) if rng.random() < 0.6 else vecs[8]
            for k in (1, 10, 40, 297, 300, 1000):
                # shortlist=0: the same exact scan through the filtered path
                assert mirror.knn(q, k) == mirror.knn(q, k, shortlist=0)


def test_changes_show_only_once_committed() -> None:
    rng = np.random.default_rng(1)
    mirror, conn = loaded()
    v = unit(rng)
    with pytest.raises(RuntimeError), conn:
        mirror.stage_put(1, v, "memory", "")
        conn.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("the transaction fails")
    assert mirror.knn(v, 5) == []
    put_all(conn, mirror, {1: v})
    assert mirror.knn(v, 5) == [1]
    with pytest.raises(RuntimeError), conn:
        mirror.stage_delete([1])
        mirror.stage_clear()
        conn.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("the transaction fails")
    assert mirror.knn(v, 5) == [1]
    with conn:
        mirror.stage_clear()
        conn.execute("INSERT INTO t VALUES (1)")
    assert mirror.knn(v, 5) == []


def test_filters_by_source_and_day_as_sqlite_vec_does() -> None:
    rng = np.random.default_rng(3)
    mirror, conn = loaded()
    v = unit(rng)
    with conn:
        mirror.stage_put(1, v, "memory", "2024-05-01")
        mirror.stage_put(2, v, "sessions", "2024-05-03")
        mirror.stage_put(3, v, "memory", "")  # MEMORY.md: no day
        conn.execute("INSERT INTO t VALUES (1)")
    assert sorted(mirror.knn(v, 10) or []) == [1, 2, 3]
    assert sorted(mirror.knn(v, 10, sources=["memory"]) or []) == [1, 3]
    assert mirror.knn(v, 10, since="2024-05-02") == [2]
    assert mirror.knn(v, 10, until="2024-05-02") == [1]  # undated chunks never match a range
    assert mirror.knn(v, 10, sources=["memory"], since="2024-05-02") == []
    assert day_number("2024-05-01") < day_number("2024-12-31") and day_number("junk") == 0


def test_not_loaded_or_over_budget_defers_to_sqlite_vec() -> None:
    rng = np.random.default_rng(5)
    mirror = VectorMirror(64 * 1024)
    assert mirror.knn(unit(rng), 3) is None  # before load
    conn = hooked(mirror)
    mirror.load(conn, None)
    put_all(conn, mirror, {i: unit(rng) for i in range(2000)})  # 2048 x 16 x 4 > 64 KiB
    assert mirror.knn(unit(rng), 3) is None
    assert mirror.stats()["over_budget"] is True


def test_a_query_of_another_width_is_an_error_not_a_wrong_answer() -> None:
    rng = np.random.default_rng(9)
    mirror, conn = loaded()
    put_all(conn, mirror, {1: unit(rng)})
    with pytest.raises(VectorWidthError):
        mirror.knn(np.ones(DIMS * 2, np.float32), 3)


# ------------------------------------------------------------------ the quantised scan

WIDE = 96  # two 64-bit words of sign bits, the second half empty


def clustered(rng: np.random.Generator, n: int, clusters: int = 300) -> np.ndarray:
    """Unit vectors around a few hundred directions (the same ones every call), as
    embeddings of related texts are."""
    centers = np.random.default_rng(0).standard_normal((clusters, WIDE)).astype(np.float32)
    vecs = centers[rng.integers(0, clusters, n)]
    vecs += 0.4 * rng.standard_normal((n, WIDE)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def test_above_quantised_from_the_bit_scan_finds_what_the_exact_scan_finds() -> None:
    rng = np.random.default_rng(21)
    n = QUANTISED_FROM + 5000
    vecs = clustered(rng, n)
    mirror, conn = loaded()
    put_all(conn, mirror, dict(enumerate(vecs)))  # puts alone: the bits move with regrowth
    ids = np.arange(n)
    found = 0
    for q in clustered(rng, 20):
        exact = ids[np.argsort(-(vecs @ q), kind="stable")][:24]
        assert mirror.knn(q, 24, shortlist=0) == [int(i) for i in exact]
        got = mirror.knn(q, 24) or []
        assert len(got) == 24 and len(set(got)) == 24
        found += len(set(got) & set(exact.tolist()))
    assert found >= 0.95 * 20 * 24
    assert mirror.knn(vecs[77], 1) == [77]


def sparse(rng: np.random.Generator, n: int, words: int) -> np.ndarray:
    """Unit vectors with ``words`` nonzero dimensions of WIDE: hashed bags of words, as the
    fake OpenAI endpoint answers (and no embedding model does)."""
    vecs = np.zeros((n, WIDE), np.float32)
    for row in vecs:
        row[rng.choice(WIDE, words, replace=False)] = rng.integers(1, 4, words)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def test_the_bit_scan_weighs_each_rows_bits_by_its_factor() -> None:
    # Short bags of words and long ones: a long row has as many of the query's bits set as
    # a short one, but is far less near it. Its sign bits alone cannot say so (the short
    # rows come first here, so where the estimates tie the newer, long rows were kept);
    # the factor (|r|^2 / |r|_1, larger for a row whose weight sits on few dimensions) does.
    rng = np.random.default_rng(6)
    n = QUANTISED_FROM + 1000
    vecs = np.vstack([sparse(rng, n // 2, 4), sparse(rng, n - n // 2, 40)])
    mirror, conn = loaded()
    put_all(conn, mirror, dict(enumerate(vecs)))
    found = 0
    for q in sparse(np.random.default_rng(9), 20, 3):
        exact = np.argsort(-(vecs @ q), kind="stable")[:24]
        found += len(set(mirror.knn(q, 24, shortlist=1000) or []) & set(exact.tolist()))
    assert found >= 0.3 * 20 * 24  # .41 (the bits alone: .008)


def test_a_shortlist_is_never_longer_than_asked_when_estimates_tie() -> None:
    # A query of two words: most rows' estimates tie. All the tied rows were rescored
    # before: several times the shortlist's length, at the cost of the exact scan.
    rng = np.random.default_rng(6)
    n = QUANTISED_FROM + 1000
    vecs = sparse(rng, n, 8)
    mirror, conn = loaded()
    put_all(conn, mirror, dict(enumerate(vecs)))
    rows = mirror._rows
    assert rows is not None
    q = sparse(rng, 1, 2)[0]
    keep = rows.ids[: rows.n] >= 0
    with SCRATCH.borrow() as sc:
        at = VectorMirror._shortlist(rows, rows.n, q, keep, 300, sc)
    assert len(at) == 300 and len(set(at.tolist())) == 300
    assert np.all(np.diff(at) > 0)
    got = mirror.knn(q, 24) or []
    assert len(got) == 24 and len(set(got)) == 24


def test_the_bit_scan_keeps_filters_and_deletes() -> None:
    rng = np.random.default_rng(23)
    n = QUANTISED_FROM + 100
    vecs = clustered(rng, n)
    mirror, conn = loaded()
    put_all(conn, mirror, dict(enumerate(vecs[:-3])), day="2024-05-01")
    put_all(conn, mirror, {n - 3 + i: vecs[n - 3 + i] for i in range(3)}, day="2024-06-02")
    with conn:
        mirror.stage_delete([n - 1, 5])
        conn.execute("INSERT INTO t VALUES (1)")
    q = vecs[5]
    june = mirror.knn(q, 10, since="2024-06-01") or []
    assert sorted(june) == [n - 3, n - 2]  # the only ones left that day, whatever their bits
    assert 5 not in (mirror.knn(q, 50) or [])
    assert mirror.knn(q, 10, sources=["sessions"]) == []


# ------------------------------------------------------------------ with a real index

NOTES = {
    f"memory/2024-05-{d:02d}.md": f"# 2024-05-{d:02d}\n\n- {text}\n"
    for d, text in enumerate(
        [
            "Bought a blue bicycle for commuting to work.",
            "The dentist moved the appointment to Friday.",
            "Planted tomatoes and basil on the balcony.",
            "Booked flights to Lisbon for the conference.",
            "The cat knocked the plant off the shelf again.",
            "Fixed the flaky integration test in the payments service.",
        ],
        start=1,
    )
}
QUERIES = ["bicycle", "teeth", "garden herbs", "travel to Portugal", "pets", "unit tests", "x"]


def results(make_index: IndexFactory, server: FakeOpenAIServer, memory_mb: int) -> list[object]:
    provider = OpenAIProvider(base_url=server.base_url, api_key="sk-t", max_retries=0, timeout=2)
    ix = make_index({"index": {"vector_memory_mb": memory_mb}}, provider)
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    assert ix.status()["vector_scan"] == ("memory" if memory_mb else "sqlite-vec")
    out: list[object] = []
    # The event loop's path never runs the model: a query not embedded yet is declined.
    assert in_memory(ix, SearchRequest("a query never asked", mode="hybrid")) is None
    for q in QUERIES:
        for mode in ("vector", "hybrid"):
            resp = search(ix, q, mode=mode, min_score=0.0, max_results=3)
            assert resp.mode_used == mode and resp.degraded is None
            inline = in_memory(ix, SearchRequest(q, mode=mode, min_score=0.0, max_results=3))
            assert (inline.results if inline else None) == (resp.results if memory_mb else None)
            out.append([(h.path, round(h.score, 6)) for h in resp.results])
        out.append(
            [h.path for h in search(ix, q, mode="vector", since="2024-05-03", min_score=0).results]
        )
    ix.close()
    make_index.made.remove(ix)
    return out


def test_search_answers_the_same_with_and_without_the_in_memory_scan(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    with_mirror = results(make_index, openai_server, 256)
    (make_index.ws / "memory/2024-05-04.md").unlink()  # deletes reach the mirror too
    after_delete = results(make_index, openai_server, 256)
    sqlite_vec_only = results(make_index, openai_server, 0)
    assert after_delete == sqlite_vec_only
    assert with_mirror != after_delete


def test_load_reads_the_stored_vectors_and_respects_the_budget() -> None:
    rng = np.random.default_rng(11)
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE vecs(chunk_id INTEGER PRIMARY KEY, embedding, source, day)")
    vecs = {i: unit(rng) for i in range(1, 301)}
    conn.executemany(
        "INSERT INTO vecs VALUES (?, ?, 'memory', '2024-05-01')",
        [(i, v.tobytes()) for i, v in vecs.items()],
    )
    mirror = VectorMirror(1 << 20)
    mirror.load(conn, "vecs")
    assert mirror.stats()["vectors"] == 300 and mirror.knn(vecs[7], 1) == [7]
    small = VectorMirror(300 * DIMS * 4)  # the vectors, but not the room to grow
    small.load(conn, "vecs")
    assert small.knn(vecs[7], 1) is None and small.usable is False


def test_a_zero_budget_mirror_holds_nothing_and_never_answers() -> None:
    rng = np.random.default_rng(13)
    mirror, conn = loaded(max_bytes=0)
    put_all(conn, mirror, {i: unit(rng) for i in range(50)})
    assert mirror.knn(unit(rng), 3) is None
    assert mirror.stats()["bytes"] == 0 and mirror.usable is False


def test_a_commit_that_fails_after_the_hook_makes_the_copy_reload() -> None:
    rng = np.random.default_rng(17)
    reloads: list[int] = []
    mirror = VectorMirror(1 << 30, on_stale=lambda: reloads.append(1))
    conn = hooked(mirror)
    veto = {"on": False}
    conn.set_commit_hook(lambda: veto["on"], id="after-ours")  # runs after the mirror's hook
    mirror.load(conn, None)
    v = unit(rng)
    put_all(conn, mirror, {1: v})
    assert mirror.knn(v, 1) == [1] and reloads == []
    veto["on"] = True  # the commit fails after the mirror applied its ops
    with pytest.raises(apsw.ConstraintError), conn:
        mirror.stage_delete([1])
        conn.execute("INSERT INTO t VALUES (1)")
    assert reloads == [1]
    assert mirror.knn(v, 1) is None  # sqlite-vec answers until the reload
    mirror.load(conn, None)
    assert mirror.usable


def test_searches_stay_well_formed_while_files_change_and_vectors_are_written(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    import threading

    make_index.write_all(NOTES)
    provider = OpenAIProvider(
        base_url=openai_server.base_url, api_key="sk-t", max_retries=0, timeout=5
    )
    ix = make_index({"embedding": {"retry_after_seconds": 0.2}}, provider)
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    errors: list[BaseException] = []
    stop = threading.Event()

    def searcher() -> None:
        try:
            while not stop.is_set():
                for q in QUERIES:
                    for h in search(ix, q, min_score=0.0).results:
                        assert h.path.startswith("memory/") and h.start_line <= h.end_line
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for round_ in range(15):  # rewrite, add and delete files: puts and deletes staged
            day = 10 + round_ % 5
            rel = f"memory/2024-05-{day:02d}.md"
            note = f"- round {round_}: notes about {QUERIES[round_ % 7]}"
            make_index.write(rel, f"# {rel}\n\n{note}\n")
            if round_ % 3 == 2:
                (make_index.ws / f"memory/2024-05-{10 + (round_ + 1) % 5:02d}.md").unlink(
                    missing_ok=True
                )
            ix.sync()
        assert ix.wait_embedded(timeout=30)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    mirror_answers = [
        [h.path for h in search(ix, q, mode="vector", min_score=0.0).results] for q in QUERIES
    ]
    ix.close()
    make_index.made.remove(ix)
    again = make_index({"index": {"vector_memory_mb": 0}}, provider)
    assert again.status()["vector_scan"] == "sqlite-vec"
    assert mirror_answers == [
        [h.path for h in search(again, q, mode="vector", min_score=0.0).results] for q in QUERIES
    ]
