"""The in-memory BM25 saved beside the index at close and read back at open, only when it
describes exactly the chunks in the index."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from engine_util import IndexFactory, search
from memoryd.index import schema
from memoryd.index.keyword import sidecar as keyword_sidecar
from memoryd.index.workspace import WorkspaceIndex

QUERIES = ("bicycle dentist", "garden", "coffee budget lisbon", "note3 hiking")


@pytest.fixture(autouse=True)
def debug_logs() -> Iterator[None]:
    """Where the copy came from is a debug line; a daemon test may have left info as the floor."""
    old = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    yield
    structlog.configure(**old)


def write_days(make_index: IndexFactory, n: int = 12) -> None:
    words = ["garden", "bicycle", "dentist", "lisbon", "coffee", "budget", "hiking"]
    for i in range(n):
        lines = [f"- {h:02d}:00 {words[(i + h) % 7]} {words[i * h % 7]} note{i}" for h in range(9)]
        make_index.write(f"memory/2024-05-{i + 1:02d}.md", "## Day\n\n" + "\n".join(lines) + "\n")


def top(ix: WorkspaceIndex, query: str) -> list[tuple[str, int, float]]:
    resp = search(ix, query, mode="keyword", max_results=20, min_score=0.0)
    return [(h.path, h.start_line, h.score) for h in resp.results]


def reopen(make_index: IndexFactory, ix: WorkspaceIndex) -> tuple[WorkspaceIndex, list[Any]]:
    """Close ``ix``, open the index again; the keyword copy's load events."""
    ix.close()
    make_index.made.remove(ix)
    with capture_logs() as logs:
        again = make_index()
        again.sync()  # behind the copy's load on the writer thread
    return again, [e for e in logs if e["event"] == "keyword_mirror_loaded"]


def test_a_clean_close_saves_the_copy_and_the_next_open_reads_it_back(
    make_index: IndexFactory,
) -> None:
    write_days(make_index)
    ix = make_index()
    ix.sync()
    before = {q: top(ix, q) for q in QUERIES}
    again, loaded = reopen(make_index, ix)
    assert keyword_sidecar.path_for(make_index.db).exists()
    assert [e["origin"] for e in loaded] == ["sidecar"]
    assert again.status()["keyword_scan"] == "memory"
    assert {q: top(again, q) for q in QUERIES} == before
    # and it follows writes from there as a built copy does
    make_index.write("memory/2024-06-01.md", "- 09:00 garden zeppelin\n")
    again.sync()
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    for q in (*QUERIES, "zeppelin garden"):
        assert top(again, q) == top(fts5, q)


def test_chunks_changed_behind_its_back_make_it_rebuild(make_index: IndexFactory) -> None:
    write_days(make_index)
    ix = make_index()
    ix.sync()
    ix.close()
    make_index.made.remove(ix)
    # Another writer (an older daemon, a crash after the save) replaces the last chunk: the
    # new one reuses its id and the row count stays the same.
    conn = schema.connect(make_index.db)
    with conn:
        (last,) = conn.execute("SELECT max(id) FROM chunks").fetchone()
        row = conn.execute("SELECT path, source, day FROM chunks WHERE id = ?", (last,)).fetchone()
        conn.execute("DELETE FROM chunks WHERE id = ?", (last,))
        conn.execute(
            "INSERT INTO chunks(id, path, source, day, start_line, end_line, heading, text_hash, "
            "text, embedded, updated_at) VALUES (?,?,?,?,1,1,'','other','zeppelin',0,0)",
            (last, *row),
        )
    conn.close()
    with capture_logs() as logs:
        again = make_index()
        again.sync(paths=[])
    assert [e["origin"] for e in logs if e["event"] == "keyword_mirror_loaded"] == ["chunks"]
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    for q in (*QUERIES, "zeppelin"):
        assert top(again, q) == top(fts5, q)


def test_a_damaged_file_is_rebuilt_from_the_chunks(make_index: IndexFactory) -> None:
    write_days(make_index)
    ix = make_index()
    ix.sync()
    before = {q: top(ix, q) for q in QUERIES}
    ix.close()
    make_index.made.remove(ix)
    saved = keyword_sidecar.path_for(make_index.db)
    saved.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    with capture_logs() as logs:
        again = make_index()
        again.sync()
    assert [e["origin"] for e in logs if e["event"] == "keyword_mirror_loaded"] == ["chunks"]
    assert {q: top(again, q) for q in QUERIES} == before


def test_without_a_usable_copy_no_file_is_left(make_index: IndexFactory) -> None:
    write_days(make_index)
    ix = make_index()
    ix.sync()
    ix.close()
    make_index.made.remove(ix)
    assert keyword_sidecar.path_for(make_index.db).exists()
    off = make_index({"index": {"keyword_memory_mb": 0}})
    off.sync()
    off.close()
    make_index.made.remove(off)
    assert not keyword_sidecar.path_for(make_index.db).exists()
