"""Appends to a markdown file re-chunk only its tail (index/tails.py): the index holds what
a whole re-chunk would, the head's rows (ids, vectors) stay, any other edit re-chunks whole."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import apsw
from hypothesis import HealthCheck, given, settings

from engine_util import IndexFactory, paths, search
from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.index.workspace import WorkspaceIndex
from test_chunker_append import appends

DAY = "memory/2024-05-01.md"
SMALL = {"index": {"chunk_tokens": 64, "chunk_overlap": 16}}


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


def test_an_append_rewrites_only_the_tail_rows(make_index: IndexFactory) -> None:
    make_index.write(DAY, log_of(200))
    ix = make_index(SMALL)
    ix.sync()
    before = rows(make_index.db)
    append(make_index, "\n## 11:00 standup\n\n- The zeppelin deploy went fine.\n")
    report = ix.sync([make_index.ws / DAY])
    after = rows(make_index.db)
    assert report.chunks_written <= 2 and report.chunks_removed <= 1
    assert after[: len(before) - 1] == before[:-1]  # same ids, same rows
    assert paths(search(ix, "zeppelin")) == [DAY]
    ix.sync(full=True)
    assert [r[1:8] for r in after] == content(make_index.db)


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


def test_after_a_restart_the_first_append_rechunks_whole_then_tails(
    make_index: IndexFactory,
) -> None:
    make_index.write(DAY, log_of(100))
    ix = make_index(SMALL)
    ix.sync()
    ix.close()
    whole = len(rows(make_index.db))
    ix = make_index(SMALL)  # no chunker state kept across a restart
    append(make_index, "\n## 12:00 lunch\n\n- Soup.\n")
    assert ix.sync([make_index.ws / DAY]).chunks_removed == whole
    append(make_index, "\n## 13:00 review\n\n- Walrus.\n")
    assert ix.sync([make_index.ws / DAY]).chunks_removed <= 1
    assert paths(search(ix, "walrus")) == [DAY]


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
