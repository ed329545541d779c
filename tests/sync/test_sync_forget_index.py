"""A forget that arrives by sync leaves the index as securely as a local one: on the host
that applies the tombstone, the index database, its WAL and the keyword copy's file hold
none of the line's words, while the daemon runs and after a clean stop
(workspace/sync_forgets.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw
import pytest

from daemon_util import DaemonThread, short_tmp
from fakes.clock import FakeClock
from sync_util import DAILY, START, Host, host, make_remote
from word_grep import holders

pytestmark = pytest.mark.timeout(180)

SECRET = "- The courier password is xylophone quagmire blunderbuss."
WORDS = (b"xylophon", b"quagmir", b"blunderbus")  # stems too: the keyword copy keeps those


def _index_dir(home: Path) -> Path:
    return next(p.parent for p in home.rglob("*.sqlite.bm25"))


def test_a_forget_from_another_host_leaves_no_word_of_the_line_in_the_index(
    tmp_path: Path,
) -> None:
    bare = make_remote(tmp_path)
    remote = f"file://{bare}"
    home = short_tmp()
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    config = {
        "workspaces": [{"path": str(ws), "name": "notes", "sync_remote": remote}],
        "sync": {"host": "desktop"},
    }
    clock = FakeClock(START)
    try:
        with host("laptop", remote=remote) as a:
            a.append("- keep this one")
            a.append(SECRET)
            a.sync()
            with DaemonThread(home, config, clock=clock) as d:
                b = Host("desktop", home, ws, d, clock)
                assert b.sync()["error"] is None
                assert SECRET in b.read(DAILY)
                for i in range(1, 9):  # other notes after it: its terms in an older segment
                    b.append(f"- Note {i} about the garden and the roses.", day=f"2026-02-{i:02d}")
                with b.client() as c:
                    c.reindex(workspace="notes", wait=True)
                    assert c.search("courier password", workspace="notes", mode="keyword").results
            index_dir = _index_dir(home)  # a clean stop wrote the keyword copy's file
            assert holders(index_dir, words=WORDS)  # the test sees the copies it means
            with DaemonThread(home, config, clock=clock) as d:
                b = Host("desktop", home, ws, d, clock)
                with b.client() as c:  # the index open (its first scan done)
                    c.reindex(workspace="notes", wait=True)
                b.sync()  # after the start-up's own sync: the next one is the test's
                n = a.read(DAILY).split("\n").index(SECRET) + 1
                with a.client() as c:
                    c.forget(workspace="notes", path=DAILY, lines=str(n))
                a.sync()
                report = b.sync()
                assert report["forgotten"] == {DAILY: 1}, report
                assert SECRET not in b.read(DAILY)
                with b.client() as c:
                    hits = c.search("courier password", workspace="notes", mode="keyword")
                    assert hits.results == []
                assert holders(index_dir, words=WORDS) == []  # running: database, WAL, keywords
            assert holders(index_dir, words=WORDS) == []  # after a clean stop
            # Secure deletes were for those files only: never left on for later edits.
            (db,) = index_dir.glob("*.sqlite")
            conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
            setting = conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'secure-delete'")
            assert list(setting) in ([], [(0,)])
            conn.close()
            # B kept its own pre-image of the note (forget.keep_days), as a forget there would.
            assert any("/.history/" in h for h in holders(ws, words=WORDS))
    finally:
        shutil.rmtree(home, ignore_errors=True)
