"""Incremental sync: what is re-read, re-chunked and removed, and how bad files are handled."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import apsw
import pytest
from structlog.testing import capture_logs

from engine_util import IndexFactory, paths, search

DAILY = (
    "# 2024-05-01\n\n## Morning\n\n- Bought a blue bicycle for commuting.\n- Called the dentist.\n"
)


def chunk_ids(db: Path, rel: str) -> list[int]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            r[0] for r in conn.execute("SELECT id FROM chunks WHERE path = ? ORDER BY id", (rel,))
        ]
    finally:
        conn.close()


def test_new_file_is_searchable_by_keyword_when_sync_returns(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", DAILY)
    ix = make_index()
    report = ix.sync()
    assert report.files_changed == 1 and report.chunks_written >= 1
    assert paths(search(ix, "bicycle")) == ["memory/2024-05-01.md"]


def test_unchanged_and_touched_files_keep_their_chunks(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", DAILY)
    ix = make_index()
    ix.sync()
    before = chunk_ids(make_index.db, "memory/2024-05-01.md")
    assert ix.sync().files_changed == 0
    make_index.bump_mtime("memory/2024-05-01.md")  # same bytes, new mtime
    assert ix.sync().files_changed == 0
    assert chunk_ids(make_index.db, "memory/2024-05-01.md") == before


def test_changed_file_is_rechunked_and_old_text_disappears(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", DAILY)
    ix = make_index()
    ix.sync()
    make_index.write("memory/2024-05-01.md", DAILY.replace("bicycle", "kayak"))
    make_index.bump_mtime("memory/2024-05-01.md")
    assert ix.sync().files_changed == 1
    assert search(ix, "bicycle").results == []
    assert paths(search(ix, "kayak")) == ["memory/2024-05-01.md"]


def test_deleted_file_leaves_the_index(make_index: IndexFactory) -> None:
    p = make_index.write("memory/2024-05-01.md", DAILY)
    ix = make_index()
    ix.sync()
    p.unlink()
    report = ix.sync()
    assert report.files_removed == 1
    assert search(ix, "bicycle").results == []
    assert ix.status()["files"] == 0


def test_sync_of_named_paths_only_touches_those(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", DAILY)
    ix = make_index()
    ix.sync()
    other = make_index.write("memory/2024-05-02.md", "- Planted tomatoes.\n")
    report = ix.sync([other])
    assert report.files_scanned == 1 and report.files_changed == 1
    other.unlink()
    assert ix.sync([other]).files_removed == 1


def test_which_files_are_indexed(make_index: IndexFactory) -> None:
    make_index.write("MEMORY.md", "# Memory\n\nThe user prefers tea.\n")
    make_index.write("memory/projects/garden.md", "Tomatoes need sun.\n")
    make_index.write("memory/.history/MEMORY.old.md", "tea history backup\n")
    make_index.write("memory/notes.txt", "tea in a text file\n")
    make_index.write("README.md", "tea readme\n")
    make_index.write("docs/extra.md", "tea in extra docs\n")
    ix = make_index({"index": {"extra_paths": ["docs"]}})
    ix.sync()
    assert sorted(paths(search(ix, "tea", max_results=10))) == ["MEMORY.md", "docs/extra.md"]
    assert paths(search(ix, "tomatoes")) == ["memory/projects/garden.md"]


def test_invalid_utf8_is_indexed_with_replacement(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", b"- caf\xe9 au lait with Marguerite\n")
    ix = make_index()
    assert ix.sync().files_changed == 1
    hit = search(ix, "Marguerite").results[0]
    assert "\ufffd" in hit.snippet


def test_binary_and_huge_files_are_skipped_with_a_reason(make_index: IndexFactory) -> None:
    make_index.write("memory/blob.md", b"\x00\x01binary\x00")
    make_index.write("memory/huge.md", "word " * 1000)
    make_index.write("memory/empty.md", "")
    ix = make_index({"index": {"max_file_bytes": 2048}})
    report = ix.sync()
    assert set(report.skipped) == {"memory/blob.md", "memory/huge.md"}
    skipped = ix.status()["skipped"]
    assert "binary" in skipped["memory/blob.md"]
    assert "too large" in skipped["memory/huge.md"]
    assert search(ix, "word").results == []


def test_a_memory_folder_linked_outside_the_workspace_says_so(make_index: IndexFactory) -> None:
    outside = make_index.tmp / "cloud-notes"
    outside.mkdir()
    (outside / "2024-05-01.md").write_text("- a private note about otters\n")
    make_index.ws.joinpath("memory").rmdir()
    make_index.ws.joinpath("memory").symlink_to(outside)
    make_index.write("MEMORY.md", "# Memory\n")
    ix = make_index()
    ix.sync()
    assert search(ix, "otters").results == []  # links that leave the workspace are not read
    reason = ix.status()["skipped"]["memory"]
    assert str(outside) in reason and "outside the workspace" in reason


def test_skipped_file_is_indexed_once_it_becomes_valid(make_index: IndexFactory) -> None:
    make_index.write("memory/x.md", b"\x00binary")
    ix = make_index()
    ix.sync()
    make_index.write("memory/x.md", "now a real note about gardening\n")
    make_index.bump_mtime("memory/x.md")
    ix.sync()
    assert paths(search(ix, "gardening")) == ["memory/x.md"]
    assert ix.status()["skipped"] == {}


class _TokenizerThatFailsOn:
    """The embedding tokenizer (a third-party boundary), failing on one marker word."""

    def __init__(self, real: Any, marker: str) -> None:
        self.real, self.marker = real, marker

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def encode_batch(self, texts: list[str], **kw: Any) -> Any:
        if any(self.marker in t for t in texts):
            raise RuntimeError("tokenizer exploded")
        return self.real.encode_batch(texts, **kw)


def test_a_file_that_fails_to_index_is_skipped_and_the_others_go_on(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.embeddings.tokenizer import load_tokenizer
    from memoryd.index import workspace

    failing = _TokenizerThatFailsOn(load_tokenizer(), "kaboom")
    monkeypatch.setattr(workspace, "load_tokenizer", lambda: failing)
    make_index.write("memory/2024-05-01.md", "- 09:00 kaboom in this note\n")
    make_index.write("memory/2024-05-02.md", "- 09:00 gardening went fine\n")
    ix = make_index()
    with capture_logs() as logs:
        report = ix.sync()
    assert paths(search(ix, "gardening")) == ["memory/2024-05-02.md"]
    reason = ix.status()["skipped"]["memory/2024-05-01.md"]
    assert reason == "could not be indexed: RuntimeError: tokenizer exploded"
    assert report.skipped == {"memory/2024-05-01.md": reason}
    assert any(e["event"] == "file_index_failed" for e in logs)
    ix.sync()  # not retried until the file changes
    make_index.write("memory/2024-05-01.md", "- 09:00 a calm note\n")
    make_index.bump_mtime("memory/2024-05-01.md")
    ix.sync()
    assert paths(search(ix, "calm")) == ["memory/2024-05-01.md"]
    assert ix.status()["skipped"] == {}


def test_corrupt_index_is_rebuilt_from_the_files(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", DAILY)
    make_index.db.parent.mkdir(parents=True)
    make_index.db.write_bytes(b"this is not a database" * 100)
    ix = make_index()
    ix.sync()
    assert paths(search(ix, "bicycle")) == ["memory/2024-05-01.md"]
    assert any("corrupt" in d for d in ix.status()["degraded"])
    assert make_index.db.with_name("ws.sqlite.corrupt").exists()


def test_index_reopens_without_reindexing(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", DAILY)
    ix = make_index()
    ix.sync()
    ix.close()
    make_index.made.remove(ix)
    again = make_index()
    assert again.sync().files_changed == 0
    assert paths(search(again, "dentist")) == ["memory/2024-05-01.md"]


def test_chunking_change_rechunks_every_file_on_next_sync(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", DAILY)
    ix = make_index()
    ix.sync()
    ix.close()
    make_index.made.remove(ix)
    again = make_index({"index": {"chunk_tokens": 64, "chunk_overlap": 8}})
    assert again.sync().files_changed == 1
    assert paths(search(again, "dentist")) == ["memory/2024-05-01.md"]


def test_folder_removed_at_once_takes_its_files_along(make_index: IndexFactory) -> None:
    make_index.write("memory/projects/a.md", "alpha project\n")
    make_index.write("memory/projects/b.md", "beta project\n")
    ix = make_index()
    ix.sync()
    shutil.rmtree(make_index.ws / "memory" / "projects")
    ix.sync([make_index.ws / "memory" / "projects"])
    assert search(ix, "project").results == []


def test_stale_hot_paths_sees_a_write_before_any_sync(make_index: IndexFactory) -> None:
    make_index.write("MEMORY.md", "# Memory\n")
    ix = make_index()
    ix.sync()
    assert ix.freshness.stale_hot_paths() == []
    make_index.write("MEMORY.md", "# Memory\n\nLikes jazz.\n")
    assert ix.freshness.stale_hot_paths() == [make_index.ws / "MEMORY.md"]
    new = make_index.write("memory/2020-01-01.md", "old day, new file\n")
    assert new in ix.freshness.stale_hot_paths()


def test_stale_hot_paths_sees_hot_files_and_folders_that_came_or_went(
    make_index: IndexFactory,
) -> None:
    make_index.write("MEMORY.md", "# Memory\n")
    ix = make_index()
    ix.sync()
    # (a file that came is listed as hot and again as new in its folder: the sync takes both)
    assert ix.freshness.stale_hot_paths() == []  # USER.md, today's log: not there, not held
    user = make_index.write("USER.md", "# User\n\nPrefers tea.\n")
    assert set(ix.freshness.stale_hot_paths()) == {user}
    ix.sync([user])
    assert ix.freshness.stale_hot_paths() == []
    user.unlink()
    assert set(ix.freshness.stale_hot_paths()) == {user}
    ix.sync([user])
    shutil.rmtree(make_index.ws / "memory")  # a watched folder went (and came back with a note)
    assert ix.freshness.stale_hot_paths() == []  # nothing in it was indexed
    old = make_index.write("memory/2020-01-01.md", "old day, new folder\n")
    assert set(ix.freshness.stale_hot_paths()) == {old}


def test_a_reopened_index_finds_a_file_that_came_while_it_was_closed_before_any_scan(
    make_index: IndexFactory,
) -> None:
    make_index.write("MEMORY.md", "# Memory\n")
    make_index.write("memory/2020-01-01.md", "an old day\n")
    ix = make_index()
    assert not ix.freshness.folders_known  # a new index: only its first scan knows them
    assert ix.freshness.stale_hot_paths() == [make_index.ws / "MEMORY.md"]  # the hot files
    ix.sync()
    assert ix.freshness.folders_known
    ix.close()
    # While no daemon ran: a day's log came and one went (neither is a hot file).
    (make_index.ws / "memory" / "2020-01-01.md").unlink()
    new = make_index.write("memory/2020-01-02.md", "another old day\n")
    ix = make_index()  # opened, not scanned: the folders' mtimes are the index's
    assert ix.freshness.folders_known
    stale = ix.freshness.stale_hot_paths()
    assert set(stale) == {make_index.ws / "memory/2020-01-01.md", new}
    ix.sync(stale)  # (what a search does with them)
    assert search(ix, "day").results[0].path == "memory/2020-01-02.md"
    assert ix.freshness.stale_hot_paths() == []
    ix.close()
    ix = make_index()  # the kept mtimes are the last scan's: the folder changed since...
    assert ix.freshness.stale_hot_paths() == []  # ...and nothing in it is unknown


def test_a_broken_folder_mtimes_entry_is_taken_for_none(make_index: IndexFactory) -> None:
    from memoryd.index import schema
    from memoryd.index.freshness import FOLDERS_KEY

    ix = make_index()
    ix.sync()
    for broken in ("{", "[1]", '{"memory": "x", "elsewhere": 1}'):
        ix.on_writer(lambda conn, b=broken: schema.set_meta(conn, {FOLDERS_KEY: b})).result()
        ix.close()
        ix = make_index()
        assert not ix.freshness.folders_known  # then the first scan alone knows the folders
        ix.sync()
        assert ix.freshness.folders_known


def test_a_busy_index_is_not_mistaken_for_a_corrupt_one(make_index: IndexFactory) -> None:
    import pytest

    from memoryd.errors import IndexUnavailable

    make_index.write("memory/2024-05-01.md", DAILY)
    ix = make_index()
    ix.sync()
    ix.close()
    make_index.made.remove(ix)
    holder = apsw.Connection(str(make_index.db))
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    try:
        from memoryd import sqlite

        sqlite.BUSY_TIMEOUT_MS = 50  # type: ignore[misc]
        with pytest.raises(IndexUnavailable):
            make_index()
    finally:
        sqlite.BUSY_TIMEOUT_MS = 5000  # type: ignore[misc]
        holder.execute("ROLLBACK")
        holder.close()
    assert not make_index.db.with_name("ws.sqlite.corrupt").exists()
    assert paths(search(make_index(), "bicycle")) == ["memory/2024-05-01.md"]


def test_memory_md_under_two_names_is_indexed_once(make_index: IndexFactory) -> None:
    import os

    # One file, two names: what a case-insensitive file system (macOS) shows.
    make_index.write("MEMORY.md", "# Memory\n\nThe cat is called Pixel.\n")
    os.link(make_index.ws / "MEMORY.md", make_index.ws / "memory.md")
    ix = make_index()
    ix.sync()
    assert paths(search(ix, "Pixel")) == ["MEMORY.md"]


def test_watcher_filter_is_safe_while_the_writer_changes_the_file_list(
    make_index: IndexFactory,
) -> None:
    import sys
    import threading

    for i in range(300):
        make_index.write(f"memory/2024-01-{i % 28 + 1:02d}-{i}.md", f"- note {i}\n")
    ix = make_index()
    errors: list[BaseException] = []
    done = threading.Event()

    def ask() -> None:
        try:
            while not done.is_set():
                ix.freshness.is_indexed_path(make_index.ws / "memory" / "x" / "y.md")
        except BaseException as exc:  # a "dict changed size" would land here
            errors.append(exc)

    t = threading.Thread(target=ask)
    # Frequent GIL switches: the spinning thread meets the writer mid-iteration sooner, and
    # the writer is not kept waiting 5 ms for every SQLite call it returns from (was 40 s).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    t.start()
    try:
        for _ in range(3):
            ix.sync(full=True)
            for p in (make_index.ws / "memory").glob("2024-01-0*"):
                p.unlink()
            ix.sync()
    finally:
        done.set()
        t.join()
        sys.setswitchinterval(interval)
    assert errors == []


def test_a_file_that_comes_during_a_whole_scan_is_found_by_the_next_check(
    make_index: IndexFactory,
) -> None:
    # The folders' mtimes the scan keeps are read before it lists them: a file that came
    # after the listing leaves them behind, so the next search's check lists the folders.
    make_index.write("memory/2020-01-01.md", "an old day\n")
    ix = make_index()
    came: list[Path] = []

    def progress(_: object) -> None:
        if not came:  # the listing is done: the scan is indexing what it found
            came.append(make_index.write("memory/2020-01-02.md", "a day written meanwhile\n"))

    ix.sync(progress=progress)
    assert came and ix.freshness.folders_known
    assert came[0] in ix.freshness.stale_hot_paths()
