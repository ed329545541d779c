"""A bulk sync (a first index, or most of one): files share transactions, the in-memory BM25
is suspended and loaded once after, and the result is what one file at a time gives."""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
from structlog.testing import capture_logs

import worker_faults
from engine_util import IndexFactory, paths, search
from memoryd.index import schema, store
from memoryd.index.chunker import Chunk
from memoryd.index.keyword.build import _LOOSE_RUN, Build, Postings, Stream
from memoryd.index.keyword.counts import count_chunks, fts5_stems
from memoryd.index.keyword.mirror import KeywordMirror
from memoryd.index.store import FileRow
from memoryd.index.sync import BATCH_FILES
from memoryd.index.types import SyncReport
from memoryd.index.workspace import WorkspaceIndex

FILES = 300  # past the 256 new files that make a run bulk from its start
WORDS = ("garden", "bicycle", "dentist", "lisbon", "coffee")
WORDS += ("budget", "deploy", "hiking", "museum", "pottery")
DAY = "memory/2024-{:02d}-{:02d}.md"


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bulk runs hand their files to the chunking workers however little they chunk
    (prepare.WORKERS_MIN_BYTES: below it, the writer chunks them)."""
    from memoryd.index import sync

    monkeypatch.setattr(sync, "WORKERS_MIN_BYTES", 0)


def write_days(make_index: IndexFactory, n: int = FILES) -> None:
    for i in range(n):
        body = "\n".join(
            f"- {h:02d}:00 {WORDS[(i + h) % 10]} {WORDS[(i * h) % 10]} note{i}"
            for h in range(8, 8 + 1 + i % 5)
        )
        make_index.write(DAY.format(1 + i // 28, 1 + i % 28), f"# Day {i}\n\n{body}\n")


def top(ix: WorkspaceIndex, query: str) -> list[tuple[str, int, float]]:
    resp = search(ix, query, mode="keyword", max_results=20, min_score=0.0)
    return [(h.path, h.start_line, h.score) for h in resp.results]


def count_commits(ix: WorkspaceIndex) -> list[int]:
    commits = [0]

    def hook() -> bool:
        commits[0] += 1
        return False

    assert ix._wconn is not None
    conn = ix._wconn  # on the writer thread: it may still be loading the copies
    ix._writer.submit(lambda: conn.set_commit_hook(hook, id="test_commits")).result()
    return commits


def test_a_first_index_commits_in_batches_and_ends_on_the_in_memory_bm25(
    make_index: IndexFactory,
) -> None:
    write_days(make_index)
    ix = make_index()
    commits = count_commits(ix)
    report = ix.sync()
    assert report.files_changed == FILES
    assert commits[0] <= FILES // BATCH_FILES + 2  # not one per file
    assert ix.status()["keyword_scan"] == "memory"  # loaded once, when the run ended
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    for q in ("garden", "note7", "coffee budget hiking", "pottery note299"):
        assert top(ix, q) == top(fts5, q)
    assert [h.path for h in search(ix, "note123", mode="keyword").results] == [
        "memory/2024-05-12.md"
    ]


def test_small_syncs_keep_one_transaction_per_file_and_follow_the_copy(
    make_index: IndexFactory,
) -> None:
    write_days(make_index, 20)
    ix = make_index()
    ix.sync()
    commits = count_commits(ix)
    for i in range(3):
        make_index.write(f"memory/2025-01-0{i + 1}.md", f"- 09:00 zeppelin{i} marmalade\n")
    ix.sync()
    assert commits[0] == 3 + 1  # one per file, then memory/'s new mtime (freshness.py)
    assert ix.status()["keyword_scan"] == "memory"
    assert [h.path for h in search(ix, "zeppelin1", mode="keyword").results] == [
        "memory/2025-01-02.md"
    ]


def _bulk_with_a_marked_file(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch, stand_in: Callable[..., Any]
) -> tuple[WorkspaceIndex, SyncReport]:
    """A first index whose workers chunk with ``stand_in`` (worker_faults), one file
    holding its marker: memory/2023-12-31.md."""
    from memoryd.index import sync

    monkeypatch.setattr(sync, "prepare_markdown", stand_in)
    write_days(make_index)
    marked = make_index.write(
        "memory/2023-12-31.md", f"- 09:00 {worker_faults.MARKER} and garden\n"
    )
    os.utime(marked, (0, 0))  # not among the files written last, which the writer chunks
    ix = make_index()
    return ix, ix.sync()


@pytest.mark.usefixtures("workers")
def test_a_file_failing_inside_a_batch_is_skipped_and_the_batch_commits(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It fails in a chunking process: the exception comes back with the file's turn.
    ix, report = _bulk_with_a_marked_file(make_index, monkeypatch, worker_faults.fails_on_marker)
    assert report.files_changed == FILES
    assert list(report.skipped) == ["memory/2023-12-31.md"]
    assert "chunker exploded" in report.skipped["memory/2023-12-31.md"]
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    assert top(ix, "garden note42") == top(fts5, "garden note42")
    assert ix.status()["keyword_scan"] == "memory"


def count_chunk_inserts(ix: WorkspaceIndex) -> list[int]:
    """Executions of statements inserting into chunks (executemany runs one per row)."""
    runs = [0]

    def tracer(cursor: Any, sql: str, bindings: Any) -> bool:
        if sql.lstrip().upper().startswith("INSERT INTO CHUNKS("):
            runs[0] += 1
        return True

    assert ix._wconn is not None
    conn = ix._wconn

    def trace() -> None:
        conn.exec_trace = tracer

    ix._writer.submit(trace).result()
    return runs


def test_a_bulk_batch_reaches_chunks_and_fts5_in_one_statement(make_index: IndexFactory) -> None:
    # A statement on chunks makes FTS5 write out what it holds (a statement journal): one
    # per chunk made each chunk an FTS5 segment of its own, merged over and over.
    write_days(make_index)
    ix = make_index({"index": {"chunk_tokens": 32, "chunk_overlap": 0}})
    inserts = count_chunk_inserts(ix)
    report = ix.sync()
    assert report.chunks_written > FILES  # more chunks than files...
    assert inserts[0] <= FILES // BATCH_FILES + 1  # ...one insert a batch
    make_index.write("memory/2025-02-01.md", "# Day\n\n- 09:00 zeppelin\n\n## Later\n\n- x\n")
    inserts[0] = 0
    ix.sync()  # one file: its own transaction, one insert all the same
    assert inserts[0] == 1
    assert paths(search(ix, "zeppelin", mode="keyword")) == ["memory/2025-02-01.md"]


def _session(i: int) -> str:
    header = {"type": "session", "version": 1, "id": f"s{i}", "timestamp": "2024-05-01T10:00:00Z"}
    msgs = [
        {"type": "message", "message": {"role": "user", "content": f"{WORDS[k % 10]} talk{i}"}}
        for k in range(i, i + 30)
    ]
    return "\n".join(json.dumps(m) for m in [header, *msgs]) + "\n"


def test_staged_rows_take_the_ids_they_would_have_taken_at_once(tmp_path: Path) -> None:
    # Deleting the chunks that hold the last ids before the staged rows go in would hand
    # those ids out again: staged rows go in first.
    def ids(defer: bool) -> list[tuple[Any, ...]]:
        conn = schema.connect(tmp_path / f"{defer}.sqlite")
        schema.migrate(conn)
        store.create_staging(conn)
        one = [Chunk(1, 1, "alpha", ()), Chunk(2, 2, "beta", ("H",))]
        with conn:
            for p in "abcd":
                store.upsert_file(conn, FileRow(p, "memory", "", 0, 0, "", 0, 0, 0, 1, 0, None))
            store.insert_chunks(conn, "a", "memory", "", one)
            store.insert_chunks(conn, "b", "memory", "", one)
        with conn:
            store.insert_chunks(conn, "c", "memory", "", one, defer=defer)
            store.delete_chunks(conn, "b")
            store.insert_chunks(conn, "d", "memory", "", one, defer=defer)
            store.delete_chunks(conn, "zz")  # nothing to delete: nothing moves
            store.move_staged(conn)
        rows = conn.execute("SELECT id, path, start_line FROM chunks ORDER BY id").fetchall()
        conn.close()
        return [tuple(r) for r in rows]

    assert (
        ids(defer=True)
        == ids(defer=False)
        == [(1, "a", 1), (2, "a", 2), (5, "c", 1), (6, "c", 2), (7, "d", 1), (8, "d", 2)]
    )


@pytest.mark.parametrize("chunked_by", ["writer", "workers"])
def test_a_bulk_run_gives_the_ids_and_rows_of_one_file_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunked_by: str
) -> None:
    # Changed files, removed files and transcripts between new files, in one bulk run.
    if chunked_by == "workers":
        from memoryd.index import sync

        monkeypatch.setattr(sync, "WORKERS_MIN_BYTES", 0)

    def history(factory: IndexFactory, bulk: bool) -> list[tuple[Any, ...]]:
        ix = factory({"index": {"sessions": True}})
        assert ix._syncer is not None
        if not bulk:
            ix._syncer.keywords = None  # nothing to suspend: never bulk
        write_days(factory, 40)
        ix.sync()
        write_days(factory, 40 + FILES)  # bulk: more than 256 new files
        for i in range(20, 40):
            factory.write(DAY.format(1 + i // 28, 1 + i % 28), f"# Day {i}\n\n- changed{i}\n")
        for i in range(0, 20, 3):
            (factory.ws / DAY.format(1 + i // 28, 1 + i % 28)).unlink()
        for i in range(20):
            factory.write(f"sessions/s{i}.jsonl", _session(i))
        ix.sync()
        assert ix._wconn is not None
        rows = ix._wconn.execute(
            "SELECT id, path, start_line, end_line, heading, text FROM chunks ORDER BY id"
        ).fetchall()
        assert ix._syncer.keywords is None or ix._syncer.keywords.stats()["chunks"] == len(rows)
        ix.close()
        return [tuple(r) for r in rows]

    one_by_one = history(IndexFactory(tmp_path / "a"), bulk=False)
    assert history(IndexFactory(tmp_path / "b"), bulk=True) == one_by_one
    assert any(p.startswith("sessions/") for _, p, *_ in one_by_one)


@pytest.mark.usefixtures("workers")
def test_a_bulk_run_chunks_the_next_files_in_processes_of_their_own(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.index import sync

    threads: list[str] = []  # where this process chunked markdown
    real = sync.chunk_markdown_state

    def chunk(*args: Any, **kw: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args, **kw)

    monkeypatch.setattr(sync, "chunk_markdown_state", chunk)
    write_days(make_index)
    ix = make_index()
    loads = count_loads(monkeypatch)
    report = ix.sync()
    assert report.files_changed == FILES
    # The workers chunked all but the files written last, whose chunker states the writer
    # keeps for appends (tails.py): it chunks those itself.
    assert ix._syncer is not None
    assert len(threads) == ix._syncer.tails.files == len(ix._syncer.tails)
    assert {t.split("_")[0] for t in threads} == {"memoryd-writer"}
    threads.clear()
    assert loads == []  # the copy was merged as the batches committed: not loaded after
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    assert top(ix, "garden note42") == top(fts5, "garden note42")
    make_index.write("memory/2025-02-01.md", "- 09:00 zeppelin\n")
    ix.sync()  # a small sync chunks on the writer thread, as it writes
    assert {t.split("_")[0] for t in threads} == {"memoryd-writer"}


def count_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the keyword copy's loads from the chunks from now on (not the empty
    index's at open)."""
    loads: list[int] = []
    real = KeywordMirror.load

    def load(self: KeywordMirror, rows: Any, expected: int) -> None:
        if expected:
            loads.append(expected)
        real(self, rows, expected)

    monkeypatch.setattr(KeywordMirror, "load", load)
    return loads


def _copy(ix: WorkspaceIndex) -> Postings:
    got = ix.copies.keywords.export()
    assert got is not None
    return got


def _same(a: Postings, b: Postings) -> None:
    assert a.stems == b.stems and (a.rows, a.tokens) == (b.rows, b.tokens)
    for name in ("length", "source", "day", "chunk_id", "counts", "slots", "freq2"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


# Besides write_days' English: what tokenizes unlike it (CJK bigrams, accents removed,
# curly quotes, other scripts, emoji, long and repeated tokens, headings of each kind).
VARIED = {
    "memory/2023-01-01.md": "# 東京\n\n- 09:00 数据库选择 naïve café\n",
    "memory/2023-01-02.md": "",
    "memory/2023-01-04.md": "# 会議メモ\n\n## 한국어 회의\n\n"
    "カタカナとひらがな、漢字。서울에서 만나요\n",
    "memory/2023-01-05.md": "# Ünïcödé — “quotes” \u2018single\u2019\n\n"
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac Русский текст "
    "e\u0301le\u0300ve ﬁnance 😀 emoji🎉mixed\n\n```\ncode block ナ\n```\n",
    "memory/2023-01-06.md": "# Repeats\n\n" + "buffalo " * 3000 + "\n\n" + "x" * 300 + "\n",
    "memory/2023-01-07.md": "## 数据\n\n### 数据 data Daten\n\n- running runs ran 数据库\n",
    "MEMORY.md": "# Memory\n\n- 猫 a single-character run, 東京タワー and Seoul 서울\n",
}


def fts5_postings(conn: Any) -> tuple[dict[tuple[str, int], int], dict[int, int]]:
    """FTS5's own postings, read through fts5vocab: (stem, chunk id) -> 2 x (text
    frequency) + 1 x (heading frequency), the copy's freq2; and tokens per chunk."""
    conn.execute("CREATE VIRTUAL TABLE temp.vi USING fts5vocab(main, chunks_fts, instance)")
    f2: dict[tuple[str, int], int] = {}
    length: dict[int, int] = {}
    for term, doc, col in conn.execute("SELECT term, doc, col FROM temp.vi"):
        f2[term, doc] = min(0xFFFF, f2.get((term, doc), 0) + (2 if col == "text" else 1))
        length[doc] = length.get(doc, 0) + 1
    conn.execute("DROP TABLE temp.vi")
    return f2, length


def copy_postings(p: Postings) -> tuple[dict[tuple[str, int], int], dict[int, int]]:
    """The copy's postings the same way (chunks without a token have no length here)."""
    ids = p.chunk_id.tolist()
    f2: dict[tuple[str, int], int] = {}
    at = 0
    for stem, n in zip(p.stems, p.counts.tolist(), strict=True):
        slots, freq2 = p.slots[at : at + n].tolist(), p.freq2[at : at + n].tolist()
        for slot, f in zip(slots, freq2, strict=True):
            f2[stem, ids[slot]] = f
        at += n
    length = {c: int(n) for c, n in zip(ids, p.length.tolist(), strict=True) if n}
    return f2, length


@pytest.mark.parametrize("chunked_by", ["writer", "workers"])
def test_a_streamed_copy_is_the_copy_a_load_from_the_chunks_gives(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch, chunked_by: str
) -> None:
    from memoryd.index import sync

    if chunked_by == "workers":
        monkeypatch.setattr(sync, "WORKERS_MIN_BYTES", 0)
    write_days(make_index)
    make_index.write_all(VARIED)
    (make_index.ws / "memory/2023-01-03.md").write_bytes(b"- bad \xff utf-8 garden\n")
    for i in range(5):  # rows no worker counted: the writer counts them
        make_index.write(f"sessions/s{i}.jsonl", _session(i))
    ix = make_index({"index": {"sessions": True, "chunk_tokens": 64, "chunk_overlap": 8}})
    loads = count_loads(monkeypatch)
    started: list[int] = []
    real_pool = sync.start_pool
    monkeypatch.setattr(sync, "start_pool", lambda: started.append(1) or real_pool())
    ix.sync()
    assert bool(started) == (chunked_by == "workers")
    assert loads == []  # streamed
    assert ix._wconn is not None
    streamed = _copy(ix)
    assert copy_postings(streamed) == fts5_postings(ix._wconn)  # what FTS5 itself holds
    ix.copies.load_keywords(sidecar=False)  # nothing streams now: from the chunks
    _same(streamed, _copy(ix))
    stems = set(streamed.stems)
    assert {"数据", "東京", "서울", "ひら", "buffalo", "cafe", "elev", "русский"} <= stems


def _postings(built: Any) -> tuple[list[float], dict[tuple[str, int], int]]:
    docs, post = built
    out: dict[tuple[str, int], int] = {}
    for stem, p in post.items():
        if p.dense is not None:
            slots = np.flatnonzero(p.dense[: docs.used])
            out.update(((stem, int(s)), int(p.dense[s])) for s in slots)
        else:
            out.update(((stem, int(s)), int(f)) for s, f in zip(p.slots, p.freq2, strict=True))
    return docs.length[: docs.used].tolist(), out


def test_a_commits_rows_counted_in_runs_make_the_copy_one_count_makes() -> None:
    # A bulk commit counts the rows no worker counted a run at a time (a search may go
    # first between runs): the copy is the one counting them all at once gives.
    stems = fts5_stems(apsw.Connection(":memory:"))
    rng = random.Random(38)
    words = [*WORDS, "数据库选择", "東京タワー", "서울", "naïve", "the", "a", "x" * 120]
    rows = [
        (i + 1, " ".join(rng.choices(words, k=rng.randint(0, 40))), f"H{i // 9}", "memory", "")
        for i in range(3 * _LOOSE_RUN + 5)
    ]
    stream = Stream(stems, 1 << 30)
    for row in rows:
        stream.stage(row)
    stream.apply()
    whole = Build(len(rows))
    counted = count_chunks([(r[1], r[2]) for r in rows], stems)
    whole.add(counted, [r[0] for r in rows], [r[3] for r in rows], [r[4] for r in rows])
    assert _postings(stream.finish()) == _postings(whole.finish(1 << 30))
    assert len(whole.number) > 10


def test_a_stream_that_cannot_follow_leaves_the_copy_to_a_load(make_index: IndexFactory) -> None:
    make_index.write("memory/a.md", "- alpha\n")
    make_index.write("memory/b.md", "- beta\n")
    ix = make_index()
    ix.sync()  # the files' rows, which chunk rows refer to
    assert ix._wconn is not None
    conn, keywords = ix._wconn, ix.copies.keywords
    stems = fts5_stems(conn)
    one = [(1, 1, "", "h1", "garden zeppelin"), (2, 2, "", "h2", "marmalade")]

    def stream(write: Callable[[], None]) -> str | None:
        keywords.suspend()
        keywords.stream()
        with conn:
            store.insert_rows(conn, "memory/a.md", "memory", "", one)
        keywords.expect(
            [(r[4], r[2]) for r in one], count_chunks([(r[4], r[2]) for r in one], stems)
        )
        write()
        return keywords.finish_stream()

    def delete() -> None:
        with conn:
            store.delete_chunks(conn, "memory/a.md")

    def roll_back() -> None:
        with contextlib.suppress(RuntimeError), conn:
            store.insert_rows(conn, "memory/b.md", "memory", "", one)
            raise RuntimeError("the write failed")

    assert stream(lambda: None) is None  # followed: installed
    assert keywords.stats()["chunks"] == 2  # (those it streamed: the caller knows when)
    assert stream(delete) == "a chunk was deleted"
    assert stream(roll_back) == "a transaction rolled back"
    keywords.suspend()
    assert keywords.finish_stream() == ""  # none streamed


@pytest.mark.usefixtures("workers")
def test_a_worker_that_dies_leaves_its_files_to_the_writer(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.index import sync

    monkeypatch.setattr(sync, "prepare_markdown", worker_faults.dies)
    write_days(make_index)
    ix = make_index()
    with capture_logs() as logs:
        report = ix.sync()
    assert report.files_changed == FILES and not report.skipped
    assert any(e["event"] == "chunking_workers_failed" for e in logs)
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    assert top(ix, "garden note42") == top(fts5, "garden note42")
    assert ix.status()["keyword_scan"] == "memory"


@pytest.mark.usefixtures("workers")
def test_without_worker_processes_the_writer_chunks_everything(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.index import sync

    def refuse() -> Executor:
        raise OSError(11, "Resource temporarily unavailable")  # as fork at a process limit

    monkeypatch.setattr(sync, "start_pool", refuse)
    write_days(make_index)
    ix = make_index()
    with capture_logs() as logs:
        report = ix.sync()
    assert report.files_changed == FILES and not report.skipped
    assert [e["event"] for e in logs].count("chunking_workers_unavailable") == 1
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    assert top(ix, "coffee budget hiking") == top(fts5, "coffee budget hiking")


@pytest.mark.usefixtures("workers")
def test_the_chunking_processes_run_at_a_lower_priority(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from memoryd.runtime.priority import BACKGROUND_NICE

    _, report = _bulk_with_a_marked_file(make_index, monkeypatch, worker_faults.tells_its_priority)
    lowered = min(19, os.nice(0) + BACKGROUND_NICE)  # the writer's own stays
    assert f"worker nice {lowered}" in report.skipped["memory/2023-12-31.md"]


@pytest.mark.parametrize("chunked_by", ["writer", "workers"])
def test_a_bulk_run_keeps_the_states_of_the_files_modified_last(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch, chunked_by: str
) -> None:
    # Those an append would find kept had the daemon seen them written (what a restart's
    # warm-up keeps too), not the last in the listing's order; whoever chunks the others.
    if chunked_by == "workers":
        from memoryd.index import sync

        monkeypatch.setattr(sync, "WORKERS_MIN_BYTES", 0)
    write_days(make_index)
    days = sorted(p for p in (make_index.ws / "memory").iterdir())
    for age, path in enumerate(days):  # the first listed modified last
        os.utime(path, (1_700_000_000 - age, 1_700_000_000 - age))
    ix = make_index()
    assert ix.sync().files_changed == FILES
    assert ix._syncer is not None
    tails = ix._syncer.tails
    assert len(tails) == tails.files
    assert all(f"memory/{p.name}" in tails for p in days[: tails.files])
