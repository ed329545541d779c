"""Appends to a markdown file re-chunk only its tail (index/tails.py): the index holds what
a whole re-chunk would, the head's rows (ids, vectors) stay, any other edit re-chunks whole."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import apsw
from hypothesis import HealthCheck, given, settings
from structlog.testing import capture_logs

from daemon_util import DaemonThread, RawConn, wait_for
from engine_util import IndexFactory, paths, search
from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.index.chunker import MarkdownState, chunk_markdown_state
from memoryd.index.tails import WARM_MIN_BYTES, WARM_WITHIN_S, TailStates
from memoryd.index.types import SyncProgress
from memoryd.index.workspace import WorkspaceIndex
from test_chunker_append import appends

DAY = "memory/2024-05-01.md"
SMALL = {"index": {"chunk_tokens": 64, "chunk_overlap": 16}}
LONG = 2200  # sections: a log long enough for its state to be warmed after a restart


def rows(db: Path, rel: str = DAY) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(
            "SELECT id, start_line, end_line, heading, text, text_hash, source, day, embedded, "
            "updated_at "
            "FROM chunks WHERE path = ? ORDER BY id",
            (rel,),
        ).fetchall()
    finally:
        conn.close()


def content(db: Path) -> list[tuple[Any, ...]]:
    """The rows without ids and embedding state: what a whole re-chunk must equal."""
    return [r[1:8] for r in rows(db)]


def append(factory: IndexFactory, text: str) -> None:
    with open(factory.ws / DAY, "a", encoding="utf-8", newline="") as f:
        f.write(text)
    factory.bump_mtime(DAY)


def log_of(sections: int) -> str:
    return "# 2024-05-01\n\n" + "\n".join(
        f"## 10:{i % 60:02d} meeting {i}\n\n- Talked with Alice about build number {i}.\n"
        for i in range(sections)
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(appends())
def test_the_index_after_appends_is_what_a_whole_reindex_gives(
    case: tuple[str, list[str]],
) -> None:
    doc, added = case
    with tempfile.TemporaryDirectory() as tmp:
        factory = IndexFactory(Path(tmp))
        factory.write(DAY, doc)
        ix = factory(SMALL)
        try:
            ix.sync()
            for more in added:
                append(factory, more)
                ix.sync([factory.ws / DAY])
            after_appends = content(factory.db)
            ix.sync(full=True)  # from scratch
            assert after_appends == content(factory.db)
        finally:
            factory.close_all()


def append_rewrites_the_tail(
    ix: WorkspaceIndex, factory: IndexFactory, before: list[tuple[Any, ...]], word: str
) -> None:
    """Append a section naming ``word``: only the tail rows are rewritten (the head keeps
    its ids), ``word`` is found, and the rows are what a whole re-chunk gives."""
    append(factory, f"\n## 13:00 review\n\n- The {word} deploy went fine.\n")
    report = ix.sync([factory.ws / DAY])
    after = rows(factory.db)
    assert report.chunks_written <= 2 and report.chunks_removed <= 1
    assert after[: len(before) - 1] == before[:-1]  # same ids, same rows
    assert paths(search(ix, word)) == [DAY]
    ix.sync(full=True)
    assert [r[1:8] for r in after] == content(factory.db)


def test_an_append_rewrites_only_the_tail_rows(make_index: IndexFactory) -> None:
    make_index.write(DAY, log_of(200))
    ix = make_index(SMALL)
    ix.sync()
    append_rewrites_the_tail(ix, make_index, rows(make_index.db), "zeppelin")


def test_a_touched_log_keeps_its_state_for_the_next_append(make_index: IndexFactory) -> None:
    make_index.write(DAY, log_of(200))
    ix = make_index(SMALL)
    ix.sync()
    make_index.bump_mtime(DAY)  # touched: a new mtime, the same bytes
    assert ix.sync([make_index.ws / DAY]).chunks_written == 0
    append_rewrites_the_tail(ix, make_index, rows(make_index.db), "zeppelin")


def test_an_edit_before_the_tail_rechunks_the_file_whole(make_index: IndexFactory) -> None:
    make_index.write(DAY, log_of(50))
    ix = make_index(SMALL)
    ix.sync()
    before = len(rows(make_index.db))
    text = (make_index.ws / DAY).read_text().replace("build number 3.", "kayak number 3.")
    make_index.write(DAY, text + "- and one more line\n")  # longer, but not an append
    make_index.bump_mtime(DAY)
    assert ix.sync([make_index.ws / DAY]).chunks_removed == before  # every row rewritten
    assert paths(search(ix, "kayak")) == [DAY]
    assert search(ix, "build number 3").results[0].start_line != 1  # the old text is gone
    after = content(make_index.db)
    ix.sync(full=True)
    assert after == content(make_index.db)


def restarted(factory: IndexFactory, *days: str) -> WorkspaceIndex:
    """Index ``days`` (long logs, worth a warmed state), close, and open again: a restart
    with no chunker state in memory."""
    for day in days:
        factory.write(day, log_of(LONG))
        assert (factory.ws / day).stat().st_size >= WARM_MIN_BYTES
    ix = factory(SMALL)
    ix.sync()
    ix.close()
    return factory(SMALL)


def test_after_a_restart_the_first_append_rechunks_only_the_tail(
    make_index: IndexFactory,
) -> None:
    ix = restarted(make_index, DAY)
    before = rows(make_index.db)
    assert ix.sync().files_changed == 0  # the start-up scan; the states are warmed after it
    assert ix.warmer.wait(timeout=60)
    append_rewrites_the_tail(ix, make_index, before, "walrus")


def test_a_file_changed_while_the_daemon_was_down_is_rechunked_whole(
    make_index: IndexFactory,
) -> None:
    ix = restarted(make_index, DAY)
    ix.close()
    path = make_index.ws / DAY
    st = path.stat()
    # Same size and mtime: the scan takes it for unchanged, only its hash tells.
    path.write_text(path.read_text().replace("build number 7.", "kayak number 7."))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    ix = make_index(SMALL)
    assert ix.sync().files_changed == 0
    assert ix.warmer.wait(timeout=60)
    assert ix._syncer is not None and DAY not in ix._syncer.tails
    whole = len(rows(make_index.db))
    append(make_index, "\n## 13:00 review\n\n- Walrus.\n")
    assert ix.sync([make_index.ws / DAY]).chunks_removed == whole
    assert paths(search(ix, "kayak")) == paths(search(ix, "walrus")) == [DAY]
    after = content(make_index.db)
    ix.sync(full=True)
    assert after == content(make_index.db)


def test_a_log_not_written_lately_is_not_warmed(make_index: IndexFactory) -> None:
    ix = restarted(make_index, DAY, "memory/2024-05-02.md")
    old = time.time() - WARM_WITHIN_S - 3600
    os.utime(make_index.ws / DAY, (old, old))
    ix.sync()  # the new mtime noted, the file unchanged
    ix.close()
    ix = make_index(SMALL)
    assert ix.sync().files_changed == 0
    assert ix.warmer.wait(timeout=60)
    assert ix._syncer is not None
    tails = ix._syncer.tails
    assert len(tails) == 1 and "memory/2024-05-02.md" in tails


def test_a_sync_pending_goes_before_the_warm_up(make_index: IndexFactory) -> None:
    days = [f"memory/2024-05-0{d}.md" for d in (1, 2, 3)]
    ix = restarted(make_index, *days)
    blocked, go = threading.Event(), threading.Event()
    kept_then: list[int] = []
    futures = []

    def block(p: SyncProgress) -> None:  # the writer thread busy, the warm-up queued
        blocked.set()
        assert go.wait(30)

    def at_scan_end(p: SyncProgress) -> None:
        if p.done == p.total and not futures:
            futures.append(ix.submit_sync([make_index.ws / days[0]], progress=block))

    def record(p: SyncProgress) -> None:
        assert ix._syncer is not None
        kept_then.append(len(ix._syncer.tails))

    scan = ix.submit_sync(progress=at_scan_end)
    assert blocked.wait(30)
    futures.append(ix.submit_sync([make_index.ws / days[1]], progress=record))
    go.set()
    assert scan.result().files_changed == 0 and all(f.result() for f in futures)
    assert ix.warmer.wait(timeout=60)
    assert kept_then == [0]  # queued after the first warm step, it ran before it
    assert ix._syncer is not None and len(ix._syncer.tails) == len(days)


def test_appended_chunks_are_embedded_and_the_head_keeps_its_vectors(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write(DAY, log_of(60))
    provider = OpenAIProvider(
        base_url=openai_server.base_url, api_key="sk-test", max_retries=0, timeout=2
    )
    ix: WorkspaceIndex = make_index({**SMALL, "embedding": {"retry_after_seconds": 0.2}}, provider)
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    before = rows(make_index.db)
    sent = len(openai_server.requests_to("embeddings"))
    append(make_index, "\n## 14:00 call\n\n- Discussed the platypus budget.\n")
    ix.sync([make_index.ws / DAY])
    assert ix.wait_embedded(timeout=30)
    after = rows(make_index.db)
    assert after[: len(before) - 1] == before[:-1]  # never written again: still embedded
    texts = [
        t
        for req in openai_server.requests_to("embeddings")[sent:]
        for t in ([req.body["input"]] if isinstance(req.body["input"], str) else req.body["input"])
    ]
    assert texts and all("platypus" in t or "meeting 59" in t for t in texts)
    assert all(r[8] == 1 for r in after)


def test_an_append_that_completes_a_character_or_follows_bad_bytes(
    make_index: IndexFactory,
) -> None:
    # The tail is decoded from a line start: a character split across two writes, and
    # invalid bytes in the head, give the index a whole decode gives.
    head = log_of(120).encode() + b"- caf\xff\xfe bytes\n- half a caf\xc3"
    make_index.write(DAY, head)
    ix = make_index(SMALL)
    ix.sync()
    with open(make_index.ws / DAY, "ab") as f:
        f.write(b"\xa9 then more\n\n## 12:00 t\xc3\xa9a\n\n- oolong\n")
    make_index.bump_mtime(DAY)
    assert ix.sync([make_index.ws / DAY]).chunks_removed <= 2
    assert paths(search(ix, "oolong")) == [DAY]
    after = content(make_index.db)
    assert any("half a café then more" in r[3] for r in after)
    ix.sync(full=True)
    assert after == content(make_index.db)


def test_a_restarted_daemon_warms_the_states_and_appends_rechunk_the_tail(
    md_home: Path,
) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / DAY).write_text(log_of(LONG))
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        assert wait_for(lambda: c.result("status")["workspaces"][0]["chunks"] > 0, timeout=30)
    with capture_logs() as logs, DaemonThread(md_home) as d, RawConn(d.socket_path) as c:

        def events(name: str) -> list[Any]:
            return [e for e in logs if e["event"] == name]

        # The start-up scan finds nothing changed; then the writer warms the day's state.
        assert wait_for(lambda: events("tail_states_warmed"), timeout=30)
        assert events("tail_states_warmed")[0]["files"] == 1
        c.result("append", {"text": "remember the walrus", "date": "2024-05-01"})
        assert [r["path"] for r in c.result("search", {"query": "walrus"})["results"]] == [DAY]
        assert wait_for(lambda: events("index_synced"), timeout=30)
        [synced] = events("index_synced")
        assert synced["files_changed"] == 1 and synced["chunks_removed"] <= 1


def test_a_warmed_state_is_kept_as_the_oldest_and_never_drops_another() -> None:
    tok = load_tokenizer()

    def state(lines: int) -> MarkdownState:
        return chunk_markdown_state("- note\n" * (lines - 1), tok, 64, 16)[1]

    tails = TailStates(files=3, lines=100)
    tails.put("new.md", "h", 1, state(40))
    assert tails.put_older("warm.md", "h", 1, state(40))
    assert not tails.put_older("big.md", "h", 1, state(30))  # 110 lines: no room
    assert not tails.put_older("new.md", "h", 1, state(10))  # kept already
    tails.put("newer.md", "h", 1, state(30))  # over the lines: the warmed one goes first
    assert "warm.md" not in tails and "new.md" in tails and "newer.md" in tails
