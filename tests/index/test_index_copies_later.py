"""An index opened with its in-memory copies left for later (a daemon's start: they load after
its first answer, issue 38 spawn -> first answer): FTS5 answers meanwhile with the copies'
scores to the bit, a write first loads them from what the index held at open, and a close
before they loaded keeps the saved BM25 copy."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from engine_util import IndexFactory, paths, search
from memoryd.index import opening
from memoryd.index.keyword import sidecar as keyword_sidecar
from memoryd.index.search import fusion
from memoryd.index.types import SyncProgress
from memoryd.index.workspace import WorkspaceIndex

# "said" is in every chunk and "garden" in most: FTS5 gives them an IDF of 1e-6, which the
# common-word shortcut leaves out of the scores.
QUERIES = (
    "what did Ana say about tea",
    "Ana said tea",
    "tea garden",
    "said river",
    "kite river",
    "garden",
)


@pytest.fixture(autouse=True)
def debug_logs() -> Iterator[None]:
    """Where the copy came from is a debug line; a daemon test may have left info as the floor."""
    old = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    yield
    structlog.configure(**old)


def write_notes(make_index: IndexFactory) -> None:
    # 100 notes of a few lines of varied length, "Ana said" on each line, "garden" in most
    # notes, "tea" in 45 (enough for a search's candidates on its own), "river" in 34.
    for i in range(100):
        lines = []
        for k in range(2 + i % 5):
            words = ["garden"] * (i % 10 != 0 and k == 1) + ["tea"] * (i % 2 == 0 and i < 90)
            words += ["river"] * (i % 3 == 0 and k % 2 == 0) + ["kite"] * (i % 13 == k)
            lines.append(f"- Ana said {' '.join(words)} n{i} line{k}" + " more" * ((i + k) % 6))
        make_index.write(f"memory/2024-05-{i:03d}.md", "\n".join(lines) + "\n")


def answers(ix: WorkspaceIndex) -> dict[str, list[Any]]:
    out = {}
    for q in QUERIES:
        for fused in ("weighted", "rrf"):
            hits = search(ix, q, mode="keyword", max_results=10, min_score=0.0, fusion=fused)
            out[f"{q}|{fused}"] = [
                (h.path, h.start_line, h.end_line, h.score.hex(), h.snippet, repr(h.meta), text)
                for h in hits.results
                for text in [None if h.text_score is None else h.text_score.hex()]
            ]
    return out


def open_later(make_index: IndexFactory) -> WorkspaceIndex:
    ix = WorkspaceIndex(make_index.ws, make_index.db, make_index.config(), None, "")
    ix.open(later=True)
    make_index.made.append(ix)
    return ix


def closed(make_index: IndexFactory, ix: WorkspaceIndex) -> None:
    ix.close()
    make_index.made.remove(ix)


def test_until_the_copies_load_fts5_gives_their_scores_to_the_bit(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes(make_index)
    ix = make_index()
    ix.sync()
    assert ix.status()["keyword_scan"] == "memory"
    want = answers(ix)
    closed(make_index, ix)
    again = open_later(make_index)
    again.sync()  # nothing changed: nothing written, the copies wait
    assert again.status()["keyword_scan"] == "loading"
    assert answers(again) == want
    # What the test would see with the common words left out (FTS5's shortcut): the same
    # hits, other last bits.
    monkeypatch.setattr(fusion, "EXACT_COMMON_POSTINGS", 0)
    shortcut = answers(again)
    assert shortcut != want
    assert {k: [h[:3] for h in v] for k, v in shortcut.items()} == {
        k: [h[:3] for h in v] for k, v in want.items()
    }
    monkeypatch.undo()
    with capture_logs() as logs:
        again.open_later()
        again.sync()  # behind the loads on the writer thread
    assert [e["origin"] for e in logs if e["event"] == "keyword_mirror_loaded"] == ["sidecar"]
    assert again.status()["keyword_scan"] == "memory"
    assert answers(again) == want
    again.open_later()  # once only
    again.sync()
    assert again.status()["keyword_scan"] == "memory"


def test_a_write_before_they_load_loads_them_first_from_the_saved_copy(
    make_index: IndexFactory,
) -> None:
    write_notes(make_index)
    ix = make_index()
    ix.sync()
    closed(make_index, ix)
    again = open_later(make_index)
    make_index.write("memory/2024-06-01.md", "- Ana said tea zeppelin\n")
    with capture_logs() as logs:
        again.sync()
    assert [e["origin"] for e in logs if e["event"] == "keyword_mirror_loaded"] == ["sidecar"]
    assert again.status()["keyword_scan"] == "memory"  # and it followed the write
    found = search(again, "zeppelin", mode="keyword")
    assert [h.path for h in found.results] == ["memory/2024-06-01.md"]
    got = answers(again)
    # the same as a copy built from the chunks now
    again.on_writer(lambda conn: again.copies.load_keywords(sidecar=False)).result()
    assert answers(again) == got


def test_a_close_before_they_load_keeps_the_saved_copy(make_index: IndexFactory) -> None:
    write_notes(make_index)
    ix = make_index()
    ix.sync()
    closed(make_index, ix)
    saved = keyword_sidecar.path_for(make_index.db).read_bytes()
    again = open_later(make_index)
    again.sync()
    closed(make_index, again)
    assert keyword_sidecar.path_for(make_index.db).read_bytes() == saved
    with capture_logs() as logs:
        third = make_index()
        third.sync()
    assert [e["origin"] for e in logs if e["event"] == "keyword_mirror_loaded"] == ["sidecar"]


def test_the_check_of_every_page_begins_at_open_later_once(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon's start leaves PRAGMA quick_check (opening.IntegrityCheck) for after its first
    answer, with the copies; a second open_later begins nothing more."""
    checked = threading.Event()
    monkeypatch.setattr(opening.IntegrityCheck, "_run", lambda self: checked.set())
    make_index.write("memory/a.md", "- Ana said tea\n")
    ix = make_index()
    ix.sync()
    closed(make_index, ix)
    again = open_later(make_index)
    assert paths(search(again, "tea")) == ["memory/a.md"]
    assert again._check._thread.ident is None  # never started
    again.open_later()
    assert checked.wait(30)
    again.open_later()  # once only: a thread starts once
    closed(make_index, again)


def test_a_first_index_of_many_files_builds_the_keyword_copy_once_at_its_end(
    make_index: IndexFactory,
) -> None:
    for i in range(260):  # over 256 new files: the keyword copy is suspended from the start
        make_index.write(f"memory/notes-{i:03d}.md", f"- Ana said garden n{i}\n")
    ix = open_later(make_index)
    with capture_logs() as logs:
        ix.sync()
    loaded = [e for e in logs if e["event"] == "keyword_mirror_loaded"]
    assert [e["origin"] for e in loaded] == ["stream"]
    assert ix.status()["keyword_scan"] == "memory"
    ix.open_later()  # already done by the write: nothing loads again
    with capture_logs() as logs:
        ix.sync()
    assert [e for e in logs if e["event"].endswith("_loaded")] == []


def test_a_file_touched_but_unchanged_leaves_them_for_later(make_index: IndexFactory) -> None:
    write_notes(make_index)
    ix = make_index()
    ix.sync()
    closed(make_index, ix)
    again = open_later(make_index)
    make_index.bump_mtime("memory/2024-05-007.md")  # its new mtime is written, no chunk
    report = again.sync()
    assert (report.files_changed, again.status()["keyword_scan"]) == (0, "loading")
    with capture_logs() as logs:
        again.open_later()
        again.sync()
    assert [e["origin"] for e in logs if e["event"] == "keyword_mirror_loaded"] == ["sidecar"]


def test_asked_while_a_scan_runs_they_load_between_two_of_its_files(
    make_index: IndexFactory,
) -> None:
    """A restart's scan is on the writer thread when the daemon's first answer goes out: the
    copies load before its next file, not after its last (at 104k chunks that scan takes
    seconds, FTS5 ranking every search meanwhile)."""
    write_notes(make_index)
    ix = make_index()
    ix.sync()
    want = answers(ix)
    closed(make_index, ix)
    again = open_later(make_index)
    seen: list[tuple[int, str]] = []

    def progress(p: SyncProgress) -> None:  # the writer thread, every 20 files
        seen.append((p.done, again.copies.keywords.scan))
        if p.done == 20:
            again.open_later()

    with capture_logs() as logs:
        again.sync(progress=progress)
        again.sync()  # the load open_later queued behind the scan: already done
    assert seen == [
        (20, "loading"),
        (40, "memory"),
        (60, "memory"),
        (80, "memory"),
        (100, "memory"),
    ]
    assert [e["origin"] for e in logs if e["event"] == "keyword_mirror_loaded"] == ["sidecar"]
    assert answers(again) == want
