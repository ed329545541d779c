"""A forget without ``--purge`` keeps its own pre-image (``memory/.history``) and nothing
else: the index database, its WAL and the keyword copy's file beside it hold none of the
removed line's words, while the daemon runs and after a clean stop (its deletes are FTS5
secure deletes: index/secure_delete.py)."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from memoryd.files.lines import line_key
from memoryd.lifecycle import journal
from memoryd_client import MemoryClient
from test_purge import DAY, daemon_on, holders, workspace

__all__ = ["workspace"]  # the fixture

pytestmark = pytest.mark.timeout(120)

SECRET = "- The courier password is xylophone quagmire blunderbuss."
WORDS = (b"xylophon", b"quagmir", b"blunderbus")  # stems too: the keyword copy keeps those


def _more_days(ws: Path, start: int, n: int) -> None:
    """Other notes, indexed after the line: its terms end in an older FTS5 segment."""
    for i in range(start, start + n):
        day = ws / "memory" / f"2025-02-{i:02d}.md"
        day.write_text(f"# 2025-02-{i:02d}\n\n- Note {i} about the garden and the roses.\n")


def test_a_plain_forget_leaves_no_word_of_the_line_in_the_index(
    workspace: Path, md_home: Path
) -> None:
    day = workspace / DAY
    day.write_text(day.read_text() + f"{SECRET}\n")
    _more_days(workspace, 1, 5)
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        _more_days(workspace, 6, 5)
        c.reindex(workspace="ws", wait=True)
        assert c.search("courier password", workspace="ws", mode="keyword").results
    # A clean stop wrote the keyword copy's file (its stems) and checkpointed the WAL.
    index_dir = next(p.parent for p in md_home.rglob("*.sqlite.bm25"))
    assert holders(index_dir, words=WORDS)  # the test sees the copies it means
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        # Hit counts of the line written in this run (its samples in the state's WAL).
        assert c.search("courier password xylophone", workspace="ws", mode="keyword").results
        assert daemon.daemon is not None and daemon.daemon.services.hits is not None
        assert daemon.daemon.services.hits.wait_idle()
        n = day.read_text().splitlines().index(SECRET) + 1
        done = c.forget(workspace="ws", path=DAY, lines=str(n))
        assert done.raw["kept"]  # its pre-image, kept for keep_days
        assert c.search("courier password", workspace="ws", mode="keyword").results == []
        assert holders(index_dir, words=WORDS) == []  # running: database, WAL, keyword file
        # The only copy left anywhere is the forget's own pre-image.
        kept = [h for h in holders(workspace, md_home, words=WORDS) if "/.history/" not in h]
        assert kept == []
    assert holders(index_dir, words=WORDS) == []  # after a clean stop
    kept = [h for h in holders(workspace, md_home, words=WORDS) if "/.history/" not in h]
    assert kept == []
    assert any("/.history/changes/" in h for h in holders(workspace, words=WORDS))
    # Secure deletes were for the forget's files only: never left on for later edits.
    (db,) = index_dir.glob("*.sqlite")
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    setting = conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'secure-delete'")
    assert list(setting) in ([], [(0,)])
    conn.close()


def test_a_forget_finished_by_the_next_start_leaves_no_word_in_the_index(
    workspace: Path, md_home: Path
) -> None:
    """A kill after the files changed and before the index followed: the start-up syncs the
    forget's files the same way (lifecycle/forget_run.catch_up_index)."""
    day = workspace / DAY
    day.write_text(day.read_text() + f"{SECRET}\n")
    _more_days(workspace, 1, 10)
    with daemon_on(md_home, workspace):
        pass
    index_dir = next(p.parent for p in md_home.rglob("*.sqlite.bm25"))
    assert holders(index_dir, words=WORDS)
    # What the killed forget left: the file without the line, its plan done, not indexed.
    before = day.read_bytes()
    after = before.replace(f"{SECRET}\n".encode(), b"")
    meta = {"forgotten": [[DAY, line_key(SECRET)]], "at": 1.0}
    change = journal.Change(
        "forget", [journal.FileChange(DAY, before, after)], meta, keep=True, reindex=True
    )
    journal.apply(workspace, change)
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        assert c.search("courier password", workspace="ws", mode="keyword").results == []
        assert holders(index_dir, words=WORDS) == []
    assert holders(index_dir, words=WORDS) == []


def test_a_forget_leaves_none_of_the_line_in_what_the_search_keeps_in_memory(
    workspace: Path, md_home: Path
) -> None:
    """Between searches the search keeps chunks' rows, lines and stems, snippets and masked
    snippets, and which lines name a time or a day (index/forget_cache.drop_kept_text): a
    forget empties them, so no copy of the line stays in the daemon's memory either."""
    from memoryd import secrets
    from memoryd.index.search import focus, line_days, snippets

    caches = (
        snippets.text_lines,
        snippets.whole_lines,
        snippets.shown_text,
        focus.timed_lines,
        line_days.named_days,
        secrets.masked_snippet,
    )
    day = workspace / DAY
    day.write_text(day.read_text() + f"{SECRET}\n")
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        for q in ("courier password", "when was the courier password set", "xylophone"):
            assert c.search(q, workspace="ws", mode="keyword").results
        assert daemon.daemon is not None
        index = daemon.daemon.registry.resolve("ws").usable_index()
        ((chunk_id, text),) = index.on_writer(
            lambda conn: list(
                conn.execute("SELECT id, text FROM chunks WHERE text LIKE '%xylophone%'")
            )
        ).result()
        stems = index.copies.line_stems
        assert stems.peek(chunk_id, text) is not None  # the test sees what it means
        kept_at = index.generation
        assert chunk_id in index.rows.get_many([chunk_id], kept_at)
        assert all(cached.cache_info().currsize for cached in caches[:3])
        n = day.read_text().splitlines().index(SECRET) + 1
        c.forget(workspace="ws", path=DAY, lines=str(n))
        assert stems.peek(chunk_id, text) is None
        assert index.rows.get_many([chunk_id], kept_at) == {}  # no search since: not renewed
        assert [cached.cache_info().currsize for cached in caches] == [0] * len(caches)
        assert c.search("courier password", workspace="ws", mode="keyword").results == []
