"""Session transcripts in the index: opt-in, incremental from the stored offset."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from engine_util import IndexFactory, paths, search
from memoryd import sqlite
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.files.layout import Layout
from memoryd.index import opening, store
from memoryd.index.sync import Syncer
from memoryd.index.transcript_steps import TRANSCRIPT_STEP_BYTES
from memoryd.runtime.config import MiB

HEADER = {"type": "session", "version": 1, "id": "s1", "timestamp": "2024-05-01T10:00:00Z"}


def line(role: str, text: str) -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": text}}) + "\n"


def test_sessions_are_opt_in(make_index: IndexFactory) -> None:
    make_index.write("sessions/s1.jsonl", json.dumps(HEADER) + "\n" + line("user", "zeppelin"))
    ix = make_index()
    ix.sync()
    assert search(ix, "zeppelin", sources=("memory", "sessions")).results == []


def test_transcript_is_searchable_with_physical_line_numbers(make_index: IndexFactory) -> None:
    make_index.write(
        "sessions/s1.jsonl",
        json.dumps(HEADER)
        + "\n"
        + line("user", "hello")
        + '{"type": "tool_call", "name": "x"}\n'
        + line("assistant", "the zeppelin landed"),
    )
    ix = make_index({"index": {"sessions": True}})
    ix.sync()
    resp = search(ix, "zeppelin", sources=("sessions",))
    hit = resp.results[0]
    assert (hit.path, hit.source) == ("sessions/s1.jsonl", "sessions")
    assert hit.start_line == 2 and hit.end_line == 4
    assert "assistant: the zeppelin landed" in hit.snippet
    assert search(ix, "zeppelin").results == []  # default sources: memory only
    assert paths(search(ix, "zeppelin", since="2024-05-01", sources=("sessions",))) == [
        "sessions/s1.jsonl"
    ]


def test_appends_are_ingested_and_a_torn_line_waits(make_index: IndexFactory) -> None:
    p = make_index.write("sessions/s1.jsonl", json.dumps(HEADER) + "\n" + line("user", "alpha"))
    ix = make_index({"index": {"sessions": True}})
    ix.sync()
    with open(p, "a", encoding="utf-8") as f:
        f.write(line("assistant", "bravo")[:-10])  # torn: no newline yet
    make_index.bump_mtime("sessions/s1.jsonl")
    ix.sync()
    assert search(ix, "bravo", sources=("sessions",)).results == []
    with open(p, "a", encoding="utf-8") as f:
        f.write(line("assistant", "bravo")[-10:])
    make_index.bump_mtime("sessions/s1.jsonl")
    ix.sync()
    hits = search(ix, "alpha bravo", sources=("sessions",), min_score=0.0).results
    assert len(hits) == 1 and hits[0].end_line == 3  # one chunk, re-chunked as it grew


def test_malformed_lines_are_counted_not_fatal(make_index: IndexFactory) -> None:
    make_index.write(
        "sessions/s1.jsonl",
        json.dumps(HEADER) + "\n{broken\n" + "[1, 2]\n" + line("user", "survives"),
    )
    ix = make_index({"index": {"sessions": True}})
    ix.sync()
    assert paths(search(ix, "survives", sources=("sessions",))) == ["sessions/s1.jsonl"]
    assert ix.status()["malformed_lines"] == 2


def test_half_a_surrogate_pair_is_replaced_not_fatal(make_index: IndexFactory) -> None:
    # json.dumps escapes the lone half as "\\ud83d": valid JSON that no UTF-8 encoder takes
    make_index.write(
        "sessions/s1.jsonl",
        json.dumps(HEADER)
        + "\n"
        + line("user", "cut emoji \ud83d here, zebra")
        + line("assistant", "giraffe"),
    )
    ix = make_index({"index": {"sessions": True}})
    ix.sync()
    hits = search(ix, "zebra", sources=("sessions",)).results
    assert [h.path for h in hits] == ["sessions/s1.jsonl"]
    assert "cut emoji \ufffd here" in hits[0].snippet
    assert paths(search(ix, "giraffe", sources=("sessions",))) == ["sessions/s1.jsonl"]
    assert ix.status()["skipped"] == {}


def test_rewritten_transcript_is_reingested_from_the_start(make_index: IndexFactory) -> None:
    p = make_index.write("sessions/s1.jsonl", json.dumps(HEADER) + "\n" + line("user", "alpha"))
    ix = make_index({"index": {"sessions": True}})
    ix.sync()
    p.write_text(json.dumps({**HEADER, "id": "s2"}) + "\n" + line("user", "charlie") * 3)
    make_index.bump_mtime("sessions/s1.jsonl")
    ix.sync()
    assert search(ix, "alpha", sources=("sessions",)).results == []
    assert paths(search(ix, "charlie", sources=("sessions",))) == ["sessions/s1.jsonl"]


def test_a_transcript_larger_than_max_file_bytes_is_ingested_in_pieces(
    make_index: IndexFactory,
) -> None:
    body = "".join(line("user", f"message number {i} about topic{i}") for i in range(400))
    p = make_index.write("sessions/s1.jsonl", json.dumps(HEADER) + "\n" + body)
    assert p.stat().st_size > 4 * 2048
    ix = make_index({"index": {"sessions": True, "max_file_bytes": 2048}})
    ix.sync()
    assert paths(search(ix, "topic399", sources=("sessions",))) == ["sessions/s1.jsonl"]
    assert paths(search(ix, "topic0", sources=("sessions",))) == ["sessions/s1.jsonl"]
    with open(p, "a", encoding="utf-8") as f:
        f.write(line("assistant", "the very last word is zeppelin"))
    make_index.bump_mtime("sessions/s1.jsonl")
    ix.sync()
    assert paths(search(ix, "zeppelin", sources=("sessions",))) == ["sessions/s1.jsonl"]
    assert ix.status()["skipped"] == {}


def test_a_line_longer_than_max_file_bytes_is_skipped_and_counted(
    make_index: IndexFactory,
) -> None:
    huge = json.dumps({"type": "tool_result", "output": "x" * 5000}) + "\n"
    p = make_index.write(
        "sessions/s1.jsonl", json.dumps(HEADER) + "\n" + line("user", "first gecko") + huge[:3000]
    )
    ix = make_index({"index": {"sessions": True, "max_file_bytes": 2048}})
    ix.sync()  # the long line is still being written: nothing to step over yet
    assert paths(search(ix, "gecko", sources=("sessions",))) == ["sessions/s1.jsonl"]
    with open(p, "a", encoding="utf-8") as f:
        f.write(huge[3000:] + line("assistant", "after the big line heron"))
    make_index.bump_mtime("sessions/s1.jsonl")
    ix.sync()
    hits = search(ix, "heron", sources=("sessions",)).results
    assert [(h.path, h.start_line, h.end_line) for h in hits] == [("sessions/s1.jsonl", 4, 4)]
    assert paths(search(ix, "gecko", sources=("sessions",))) == ["sessions/s1.jsonl"]
    status = ix.status()
    assert status["malformed_lines"] == 1 and status["skipped"] == {}
    with open(p, "a", encoding="utf-8") as f:
        f.write(huge + line("user", "and a kestrel"))  # a long line after the first read
    make_index.bump_mtime("sessions/s1.jsonl")
    ix.sync()
    hits = search(ix, "kestrel", sources=("sessions",)).results
    assert [(h.start_line, h.end_line) for h in hits] == [(6, 6)]
    assert ix.status()["malformed_lines"] == 2


def test_a_long_first_line_does_not_hide_the_transcript(make_index: IndexFactory) -> None:
    make_index.write(
        "sessions/s1.jsonl", "x" * 5000 + "\n" + json.dumps(HEADER) + "\n" + line("user", "ibis")
    )
    ix = make_index({"index": {"sessions": True, "max_file_bytes": 2048}})
    ix.sync()
    hits = search(ix, "ibis", sources=("sessions",)).results
    assert [(h.start_line, h.end_line) for h in hits] == [(3, 3)]
    assert ix.status()["malformed_lines"] == 1


def test_nul_bytes_after_the_first_line_are_a_malformed_line(make_index: IndexFactory) -> None:
    p = make_index.write("sessions/s1.jsonl", json.dumps(HEADER) + "\n" + line("user", "quokka"))
    ix = make_index({"index": {"sessions": True}})
    ix.sync()
    with open(p, "ab") as f:  # what a crash mid-write can leave behind
        f.write(b"\x00" * 64 + b"\n" + line("assistant", "numbat").encode())
    make_index.bump_mtime("sessions/s1.jsonl")
    ix.sync()
    assert paths(search(ix, "quokka numbat", sources=("sessions",))) == ["sessions/s1.jsonl"]
    status = ix.status()
    assert status["malformed_lines"] == 1 and status["skipped"] == {}


def test_a_binary_file_named_jsonl_is_skipped(make_index: IndexFactory) -> None:
    make_index.write("sessions/s1.jsonl", b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(200))
    ix = make_index({"index": {"sessions": True}})
    ix.sync()
    assert ix.status()["skipped"] == {"sessions/s1.jsonl": "binary: contains NUL bytes"}


def _transcript_syncer(
    tmp: Path, ws: Path, name: str, stopping: Callable[[], bool] = lambda: False
) -> tuple[Syncer, apsw.Connection]:
    conn, _ = opening.open_or_rebuild(tmp / f"{name}.sqlite")
    syncer = Syncer(
        conn,
        Layout(ws, True, ()),
        load_tokenizer,
        400,
        80,
        16 * MiB,
        on_commit=lambda rel, row: None,
        stopping=stopping,
    )
    return syncer, conn


def _stored(conn: apsw.Connection) -> tuple[Any, ...]:
    chunks = sqlite.rows(
        conn, "SELECT start_line, end_line, text FROM chunks ORDER BY start_line, end_line"
    )
    row = store.read_files(conn)["sessions/s1.jsonl"]
    return chunks, (row.ingested, row.lines, row.tail_offset, row.tail_line, row.malformed)


def test_a_transcript_sync_stopped_between_steps_resumes_exactly_where_it_stopped(
    tmp_path: Path,
) -> None:
    """SIGTERM during a big transcript waited for its 16 MiB step (7.5 s); steps are 1 MiB
    now, and one stopped after any of them leaves offsets that resume with nothing ingested
    twice or skipped: the same chunks and row as one uninterrupted sync."""
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    body = "".join(
        line("user", f"message {i} about topic{i} " + "filler " * 20) for i in range(16_000)
    )
    path = ws / "sessions" / "s1.jsonl"
    path.write_text(json.dumps(HEADER) + "\n" + body + '{"torn": ')
    assert path.stat().st_size > 2.5 * TRANSCRIPT_STEP_BYTES
    whole, whole_conn = _transcript_syncer(tmp_path, ws, "whole")
    whole.run(None, False)
    steps: list[int] = []
    stop = threading.Event()
    parts, conn = _transcript_syncer(tmp_path, ws, "parts", stop.is_set)
    parts.on_commit = lambda rel, row: (steps.append(row.ingested if row else -1), stop.set())
    parts.run(None, False)
    assert len(steps) == 1 and steps[0] < path.stat().st_size - TRANSCRIPT_STEP_BYTES
    stop.clear()
    parts.on_commit = lambda rel, row: steps.append(row.ingested if row else -1)
    parts.run(None, False)
    assert len(steps) > 2  # the rest, a step at a time
    assert _stored(conn) == _stored(whole_conn)
    conn.close()
    whole_conn.close()
