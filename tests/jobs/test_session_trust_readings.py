"""A transcript's reading is kept per session: the watch reads a transcript for the session
its lines name, a write for the session its file is named after; each reading sees every
line, so neither uses up what the other has not seen (a test of the daemon's once raced on
this: the watch read first under load and the write's session stayed clean)."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from memoryd.files.transcripts import head_sessions
from memoryd.jobs.session_trust import SessionTrust
from memoryd.runtime.state import StateDB

NOW = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


def _line(kind: str, minutes: float, message: dict[str, Any]) -> str:
    stamp = (NOW + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
    return json.dumps({"type": kind, "sessionId": "s1", "timestamp": stamp, "message": message})


def _web_turn() -> list[str]:
    fetch = {"type": "tool_use", "id": "t1", "name": "WebFetch", "input": {"url": "https://e.org"}}
    return [
        _line("user", -5, {"role": "user", "content": "Summarise https://e.org for me"}),
        _line("assistant", -4, {"role": "assistant", "content": [fetch]}),
    ]


def test_a_transcript_read_for_the_session_its_lines_name_is_read_whole_for_its_file_name(
    tmp_path: Path,
) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join(_web_turn()) + "\n")
    trust = SessionTrust(StateDB(tmp_path / "state.sqlite"), now=NOW.timestamp)
    assert trust.observe_transcript("s1", path).turn == "untrusted"  # the watch's reading
    assert trust.observe_transcript("huge", path).turn == "untrusted"  # a write's
    assert trust.observe_transcript("huge", path).turn == "untrusted"  # nothing new: kept


def test_a_head_nested_past_the_stack_names_no_session(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"[" * 100_000 + b"\n")
    assert head_sessions(os.open(path, os.O_RDONLY)) == ()
