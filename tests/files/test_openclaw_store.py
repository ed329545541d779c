"""OpenClaw's SQLite transcript store read by memoryd: read-only, a session's rows in order
from any row on (JSON and zstd events alike), a batch at a time, and a consistent snapshot
while OpenClaw writes in WAL mode."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fakes.openclaw_store import add_events, create_store, message, store_path
from memoryd.files import openclaw_store
from memoryd.files.transcripts import parse_transcript


def test_events_come_back_as_transcript_lines_json_and_zstd_alike(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    oc = create_store(path)
    add_events(oc, "s1", [{"type": "session", "id": "s1"}, message("user", "Use Postgres 16")])
    add_events(oc, "s1", [message("assistant", "Noted:\nPostgres 16, 鲸鱼")], zstd=True)
    add_events(oc, "s2", [message("user", "another session")])
    assert openclaw_store.is_store(path) and openclaw_store.agent_of(path) == "main"
    with openclaw_store.open_store(path) as conn:
        assert openclaw_store.session_rows(conn, "s1") == 3
        lines = openclaw_store.event_lines(conn, "s1", 0)
        assert [json.loads(line)["type"] for line in lines] == ["session", "message", "message"]
        assert openclaw_store.event_lines(conn, "s1", 2) == lines[2:]
        data = io.BufferedReader(openclaw_store.SessionReader(conn, "s1", 1)).read()
    parsed = parse_transcript(data, first_line=2)
    assert parsed.messages == [
        (2, "user: Use Postgres 16"),
        (3, "assistant: Noted:\nPostgres 16, 鲸鱼"),
    ]


def test_a_long_session_is_read_a_batch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openclaw_store, "BATCH_ROWS", 7)
    oc = create_store(store_path(tmp_path))
    add_events(oc, "s", [message("user", f"turn {i}") for i in range(30)])
    with openclaw_store.open_store(store_path(tmp_path)) as conn:
        data = io.BufferedReader(openclaw_store.SessionReader(conn, "s", 4), 16).read()
    assert parse_transcript(data).messages[-1] == (26, "user: turn 29")
    assert data.count(b"\n") == 26


def test_reading_sees_what_openclaw_committed_while_it_writes_and_changes_nothing(
    tmp_path: Path,
) -> None:
    path = store_path(tmp_path)
    oc = create_store(path)
    add_events(oc, "s", [message("user", "committed")])
    with oc:  # OpenClaw in the middle of a write transaction
        add_events(oc, "s", [message("user", "not yet")])
        before = {p.name: p.read_bytes() for p in path.parent.iterdir()}
        with openclaw_store.open_store(path) as conn:
            assert openclaw_store.session_rows(conn, "s") == 1
            with pytest.raises(Exception, match="readonly"):
                conn.execute("DELETE FROM transcript_events")
        after = {p.name: p.read_bytes() for p in path.parent.iterdir()}
        assert set(after) == set(before) and after[path.name] == before[path.name]
    with openclaw_store.open_store(path) as conn:
        assert openclaw_store.session_rows(conn, "s") == 2


def test_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with (
        pytest.raises(openclaw_store.StoreError, match="cannot open OpenClaw's store"),
        openclaw_store.open_store(tmp_path / "openclaw-agent.sqlite"),
    ):
        pass
