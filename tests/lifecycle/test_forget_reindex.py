"""A forgotten session is never indexed again: a new transcript of it (by its file name or
by the session its first line names) is listed as skipped, through a real daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon_util import DaemonThread
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(60)


def transcript(path: Path, session: str, text: str, *, claude: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if claude:  # Claude Code: sessionId on every line
        lines = [
            {"type": "user", "sessionId": session, "message": {"role": "user", "content": text}}
        ]
    else:  # OpenClaw: a session line first
        lines = [
            {"type": "session", "id": session},
            {"type": "message", "message": {"role": "user", "content": text}},
        ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def session_hits(c: MemoryClient, query: str) -> list[str]:
    found = c.search(query, workspace="alice", sources=["sessions"], mode="keyword", min_score=0)
    return [h.path for h in found.results]


def test_a_forgotten_session_is_never_indexed_again(md_home: Path) -> None:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tabs.\n")
    sessions = ws / "sessions"
    transcript(sessions / "s-9.jsonl", "s-9", "The submarine is painted yellow.")
    config = {"workspaces": [{"path": str(ws), "name": "alice"}], "index": {"sessions": True}}
    with DaemonThread(md_home, config) as d, MemoryClient(d.socket_path) as c:
        c.reindex(workspace="alice", wait=True)
        assert session_hits(c, "submarine yellow") == ["sessions/s-9.jsonl"]
        done = c.forget(workspace="alice", session_id="s-9")
        assert any(r.path == "sessions/s-9.jsonl" and r.whole_file for r in done.removed)
        assert not (sessions / "s-9.jsonl").exists()

        # The agent writes the session again: by its name, under another name (first line),
        # and a Claude Code transcript naming it on each line; another session is indexed.
        transcript(sessions / "s-9.jsonl", "s-9", "The submarine is now purple.")
        transcript(sessions / "copy.jsonl", "s-9", "The kite is orange.")
        transcript(sessions / "abc.jsonl", "s-9", "The kite is violet.", claude=True)
        # OpenClaw's copy of the session from its store (files/openclaw_mirror.py)
        transcript(sessions / "openclaw" / "main" / "s-9.jsonl", "s-9", "The kite is red.")
        transcript(sessions / "s-10.jsonl", "s-10", "The kite is green.")
        c.reindex(workspace="alice", wait=True)
        assert session_hits(c, "submarine purple") == []
        assert session_hits(c, "kite") == ["sessions/s-10.jsonl"]
        skipped = c.status().workspaces[0].skipped  # status says why they are not indexed
        for rel in (
            "sessions/s-9.jsonl",
            "sessions/copy.jsonl",
            "sessions/abc.jsonl",
            "sessions/openclaw/main/s-9.jsonl",
        ):
            assert skipped[rel] == "session s-9 was forgotten: never indexed again"
        assert "sessions/s-10.jsonl" not in skipped

        c.reindex(workspace="alice", full=True, wait=True)  # a full rebuild skips them too
        assert session_hits(c, "kite") == ["sessions/s-10.jsonl"]
        assert session_hits(c, "submarine") == []


def claude_transcript(path: Path, session: str, text: str) -> None:
    """Claude Code: a summary line first (no session id), the session id on later lines."""
    lines = [
        {"type": "summary", "summary": "Earlier chat", "leafUuid": "u-1"},
        {"type": "summary", "summary": "More of it", "leafUuid": "u-2"},
        {"type": "user", "sessionId": session, "message": {"role": "user", "content": text}},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_claude_code_transcript_opening_with_a_summary_is_forgotten_for_good(
    md_home: Path,
) -> None:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    sessions = ws / "sessions"
    claude_transcript(sessions / "chat.jsonl", "cc-1", "The lighthouse keeper is Maren.")
    config = {"workspaces": [{"path": str(ws), "name": "alice"}], "index": {"sessions": True}}
    with DaemonThread(md_home, config) as d, MemoryClient(d.socket_path) as c:
        c.reindex(workspace="alice", wait=True)
        assert session_hits(c, "lighthouse keeper") == ["sessions/chat.jsonl"]
        done = c.forget(workspace="alice", session_id="cc-1")
        assert [r.path for r in done.removed if r.whole_file] == ["sessions/chat.jsonl"]
        assert not (sessions / "chat.jsonl").exists()
        assert session_hits(c, "lighthouse keeper") == []
        # The agent writes it again: never indexed again.
        claude_transcript(sessions / "chat.jsonl", "cc-1", "The lighthouse keeper is Maren.")
        c.reindex(workspace="alice", full=True, wait=True)
        assert session_hits(c, "lighthouse keeper") == []
        skipped = c.status().workspaces[0].skipped
        assert skipped["sessions/chat.jsonl"] == "session cc-1 was forgotten: never indexed again"
