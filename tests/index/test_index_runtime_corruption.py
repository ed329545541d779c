"""An index damaged while the daemon serves (issue 13, item 10): whoever finds it (a read,
the writer) has it moved aside and rebuilt from the markdown, the other workspaces never
notice, status says so under degraded, and no note is lost."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from daemon_util import Proc, RawConn, wait_for
from engine_util import IndexFactory, paths, search
from memoryd.errors import IndexUnavailable
from memoryd.index import schema

NOTES = 60


def _notes(ws: Path, word: str) -> None:
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nthe long-term notes\n")
    for i in range(NOTES):
        body = "".join(f"line {j} about {word}{i} and the harbour {j}\n" for j in range(30))
        (ws / "memory" / f"n{i}.md").write_text(f"# Note {i}\n\n{body}")


def _damage(index: Path, how: str) -> None:
    """Garbage over every page after the header, or the file cut in half."""
    size = index.stat().st_size
    with open(index, "r+b") as f:
        if how == "truncate":
            f.truncate(size // 2)
            return
        rnd = random.Random(13)
        for off in range(4096, size, 4096):
            f.seek(off)
            f.write(rnd.randbytes(4096))


def _checkpoint(index: Path) -> None:
    """Everything into the main file (WAL emptied), so the damage hits what is read."""
    conn = schema.connect(index)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _hits(c: RawConn, query: str, ws: str) -> list[str]:
    frame = c.call("search", {"query": query, "mode": "keyword", "workspace": ws})
    return [h["path"] for h in frame["result"]["results"]] if frame["ok"] else []


def _ws_status(c: RawConn, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(w for w in c.result("status")["workspaces"] if w["name"] == name)
    return found


@pytest.mark.parametrize("how", ["garbage", "truncate"])
def test_an_index_damaged_while_serving_is_rebuilt_and_the_others_keep_serving(
    md_home: Path, how: str
) -> None:
    """Before: the writer failed 'database disk image is malformed' at every sync (retried
    for ever), the appended note was never searchable, and status said nothing."""
    a, b = md_home / "a", md_home / "b"
    _notes(a, "apple")
    _notes(b, "berry")
    proc = Proc(md_home)
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=30) as c:
            for ws in (a, b):
                c.result("workspace.add", {"path": str(ws)})
            for name in ("a", "b"):
                assert wait_for(lambda n=name: _ws_status(c, n)["files"] == NOTES + 1, 60), (
                    _ws_status(c, name)
                )
            index = Path(_ws_status(c, "a")["index"])
            _checkpoint(index)
            _damage(index, how)
            c.result("append", {"workspace": "a", "text": "the okapi crossed the river"})
            assert _hits(c, "berry7", "b") == ["memory/n7.md"]  # the other one never noticed
            assert wait_for(lambda: _hits(c, "okapi", "a"), 60), proc.logs()
            assert wait_for(lambda: _ws_status(c, "a")["files"] == NOTES + 2, 60)
            for i in (0, 7, NOTES - 1):  # every earlier note is back
                assert _hits(c, f"apple{i}", "a") == [f"memory/n{i}.md"]
            degraded = _ws_status(c, "a")["degraded"]
            assert any("damaged at run time" in d and "rebuilt" in d for d in degraded), degraded
            assert not any("damaged" in d for d in _ws_status(c, "b")["degraded"])
            assert index.with_name(index.name + ".corrupt").exists()
        assert "index_rebuilt" in proc.events()
    finally:
        proc.kill()


def test_a_read_that_finds_the_index_damaged_answers_unavailable_and_has_it_rebuilt(
    make_index: IndexFactory,
) -> None:
    """A search reading a damaged page: one clear `unavailable` (not `internal`), then the
    index is rebuilt and answers again, complete."""
    for i in range(20):
        make_index.write(f"memory/n{i}.md", f"# Note {i}\n\nthe harbour note kiwi{i}\n")
    ix = make_index()
    ix.sync()
    _checkpoint(make_index.db)
    ix.readers.close()  # the next read opens the file afresh
    _damage(make_index.db, "garbage")
    with pytest.raises(IndexUnavailable, match="damaged"):
        search(ix, "kiwi7", mode="keyword")
    assert wait_for(lambda: not any("rebuilding" in d for d in ix.status()["degraded"]), 30)
    assert wait_for(lambda: ix.status()["files"] == 20, 30)
    assert paths(search(ix, "kiwi7", mode="keyword")) == ["memory/n7.md"]
    assert any("damaged at run time" in d for d in ix.status()["degraded"])


def _pages_of(index: Path, table: str) -> list[int]:
    conn = schema.connect(index, readonly=True)
    try:
        return [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("table", "when"), [("chunks_fts_data", "after opening"), ("files", "while opening")]
)
def test_damage_past_the_schema_is_found_and_rebuilt(
    make_index: IndexFactory, table: str, when: str
) -> None:
    """The check of every page runs once the index is open (opening.IntegrityCheck), not
    before the first search: damage the open itself does not read (FTS5's segments) is
    found then and handled as damage found at run time; damage it reads (the files table)
    has the file rebuilt at once, as a damaged header does."""
    for i in range(NOTES):
        body = "".join(f"line {j} about kestrel{i} and the harbour {j}\n" for j in range(30))
        make_index.write(f"memory/n{i}.md", f"# Note {i}\n\n{body}")
    ix = make_index()
    ix.sync()
    ix.close()
    make_index.made.remove(ix)
    _checkpoint(make_index.db)
    pages = _pages_of(make_index.db, table)
    assert pages
    with open(make_index.db, "r+b") as f:
        rnd = random.Random(7)
        for page in pages:
            f.seek((page - 1) * 4096)
            f.write(rnd.randbytes(4096))
    again = make_index()
    aside = make_index.db.with_name(make_index.db.name + ".corrupt")
    assert wait_for(aside.exists, 30)
    if when == "while opening":
        assert aside.exists()  # before open returned
        again.sync()

    def found() -> bool:
        try:
            return paths(search(again, "kestrel7")) == ["memory/n7.md"]
        except IndexUnavailable:  # during the swap itself: "try again in a moment"
            return False

    assert wait_for(found, 60)
    degraded = again.status()["degraded"]
    assert any("corrupt" in d or "quick_check" in d for d in degraded), degraded
