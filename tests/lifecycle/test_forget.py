"""forget through a real daemon: a line range, a search's matches, a session; dry run by
default in memctl; the pre-image kept (or not, with purge); the index follows; a forgotten
session is never flushed again."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import DaemonThread, memctl
from fakes.openai_server import FakeOpenAIServer
from jobs_util import llm_daemon
from memoryd.files.lines import line_key
from memoryd.files.provenance import Ledger, Record
from memoryd.lifecycle import journal
from memoryd_client import ForbiddenPath, InvalidParams, MemoryClient, RemoteError

pytestmark = pytest.mark.timeout(60)

DAY = "memory/2025-03-11.md"
DAY_TEXT = (
    "# 2025-03-11\n"
    "\n"
    "- The deploy target is heroku.\n"
    "- Dana owns the billing service.\n"
    "- The staging database is called orca.\n"
    "\n"
    "## Session notes (s-9, lines 1-4)\n"
    "\n"
    "- Priya prefers the blue dashboard theme.\n"
    "- The quarterly review moved to Thursday.\n"
    "\n"
    "## Later\n"
    "\n"
    "- Lunch was good.\n"
)


@pytest.fixture
def workspace(md_home: Path) -> Path:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tabs.\n")
    (ws / DAY).write_text(DAY_TEXT)
    return ws


@pytest.fixture
def daemon(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> Iterator[DaemonThread]:
    with llm_daemon(md_home, workspace, "alice", openai_server.base_url) as d:
        yield d


def hits(c: MemoryClient, query: str) -> list[str]:
    return [h.snippet for h in c.search(query, workspace="alice", mode="keyword").results]


def test_memctl_forget_shows_first_and_removes_only_with_yes(
    daemon: DaemonThread, workspace: Path
) -> None:
    code, out, err = memctl(daemon, "forget", "-w", "alice", "--path", DAY, "--lines", "3")
    assert code == 0 and "would forget memory/2025-03-11.md:3" in out
    assert "deploy target is heroku" in out and "add --yes" in err
    assert (workspace / DAY).read_text() == DAY_TEXT  # a dry run touches nothing

    code, out, err = memctl(daemon, "forget", "-w", "alice", "--path", DAY, "--lines", "3", "--yes")
    assert code == 0 and "forgot memory/2025-03-11.md:3" in out
    text = (workspace / DAY).read_text()
    assert "heroku" not in text and "- Dana owns the billing service." in text
    assert text == DAY_TEXT.replace("- The deploy target is heroku.\n", "")
    with MemoryClient(daemon.socket_path) as c:
        assert not any("heroku" in s for s in hits(c, "deploy target heroku"))
        status = c.status(workspace="alice").workspaces[0].raw
    assert status["forget_kept"]["changes"] == 1 and status["forget_kept"]["keep_days"] == 7
    kept = list((workspace / journal.CHANGES_DIR).glob("*/0.before"))
    assert len(kept) == 1 and kept[0].read_text() == DAY_TEXT  # the pre-image


def test_forget_by_query_removes_the_lines_the_search_shows(
    daemon: DaemonThread, workspace: Path
) -> None:
    with MemoryClient(daemon.socket_path) as c:
        shown = c.forget(
            workspace="alice", query="staging database orca", max_results=1, dry_run=True
        )
        assert shown.dry_run and shown.removed and shown.removed[0].path == DAY
        assert "orca" in shown.removed[0].text
        assert (workspace / DAY).read_text() == DAY_TEXT
        done = c.forget(workspace="alice", query="staging database orca", max_results=1)
        assert not done.dry_run and done.kept is not None
        assert not any("orca" in s for s in hits(c, "staging database orca"))
    # The hit's snippet lines went; headings stay.
    assert "orca" not in (workspace / DAY).read_text()
    assert "## Later" in (workspace / DAY).read_text()


def test_forget_a_session_removes_its_lines_sections_and_transcript_and_flush_refuses_it(
    daemon: DaemonThread, workspace: Path, md_home: Path
) -> None:
    # What append/flush record for a session's lines (the ledger, files/provenance.py).
    (workspace / "memory" / "2025-03-12.md").write_text(
        "- The user's cat is called Miso.\n- Unrelated owner note.\n"
    )
    Ledger(workspace).add(
        [
            Record(
                line_key("- The user's cat is called Miso."),
                "memory/2025-03-12.md",
                "agent",
                "s-9",
                "interactive",
                "append",
                time.time(),
            )
        ]
    )
    (workspace / "sessions").mkdir()
    transcript = workspace / "sessions" / "s-9.jsonl"
    transcript.write_text(json.dumps({"type": "session", "id": "s-9"}) + "\n")
    # what retention archived of it earlier, its own and OpenClaw's copy; another session's
    archived = [
        "sessions/archive/2025-01/s-9.jsonl.gz",
        "sessions/archive/2025-02/s-9.jsonl.2.gz",
        "sessions/archive/2025-01/openclaw/main/s-9.jsonl.gz",
    ]
    other_archive = workspace / "sessions/archive/2025-01/s-90.jsonl.gz"
    for rel in [*archived, str(other_archive.relative_to(workspace))]:
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_bytes(gzip.compress(b'{"type": "session", "id": "s-9"}\n'))
    with MemoryClient(daemon.socket_path) as c:
        c.reindex(workspace="alice")
        done = c.forget(workspace="alice", session_id="s-9", purge=True)
    assert done.session_id == "s-9" and done.kept is None
    assert {r.path for r in done.removed} >= {DAY, "memory/2025-03-12.md", "sessions/s-9.jsonl"}
    assert {r.path for r in done.removed} >= set(archived)
    assert not any((workspace / rel).exists() for rel in archived) and other_archive.exists()
    day = (workspace / DAY).read_text()
    assert "Session notes (s-9" not in day and "Priya" not in day and "quarterly" not in day
    assert "## Later" in day and "- Dana owns the billing service." in day
    other = (workspace / "memory" / "2025-03-12.md").read_text()
    assert other == "- Unrelated owner note.\n"
    assert not transcript.exists()
    assert not (workspace / journal.CHANGES_DIR).exists() or not any(
        (workspace / journal.CHANGES_DIR).iterdir()
    )  # purge: nothing kept
    ledger = Ledger(workspace)
    ledger.refresh()
    assert "s-9" in ledger.forgotten_sessions and not ledger.records_for_session("s-9")

    t = workspace / "sessions" / "again.jsonl"
    t.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s-9",
                "message": {"role": "user", "content": "Remember the cat."},
            }
        )
        + "\n"
    )
    with MemoryClient(daemon.socket_path) as c:
        out = c.flush(t, "s-9", workspace="alice", wait=True)
    assert out.run is not None and out.run.raw["status"] == "skipped"
    assert "forgotten" in out.run.raw["message"]


def test_forget_refuses_a_bad_request_and_changes_nothing(
    daemon: DaemonThread, workspace: Path
) -> None:
    with MemoryClient(daemon.socket_path) as c:
        for kwargs in (
            {},
            {"path": DAY},
            {"path": DAY, "lines": "9-3"},
            {"path": DAY, "lines": "3", "query": "x"},
            {"path": "../outside.md", "lines": "1"},
            {"path": "memory/.provenance.jsonl", "lines": "1"},
        ):
            with pytest.raises(RemoteError) as info:
                c.forget(workspace="alice", **kwargs)  # type: ignore[arg-type]
            assert isinstance(info.value, InvalidParams | ForbiddenPath), (kwargs, info.value)
    assert (workspace / DAY).read_text() == DAY_TEXT


def test_kept_pre_images_older_than_keep_days_are_pruned(workspace: Path) -> None:
    change = journal.Change(
        "forget",
        [journal.FileChange(DAY, DAY_TEXT.encode(), b"- only this\n")],
    )
    journal.apply(workspace, change, now=time.time() - 8 * 86400)
    assert journal.kept(workspace).changes == 1
    assert journal.prune(workspace, 7, time.time()) == 1
    assert journal.kept(workspace).changes == 0
    assert (workspace / DAY).read_text() == "- only this\n"


def test_a_forget_leaves_a_tombstone_in_the_ledger_a_hash_never_the_text(
    daemon: DaemonThread, workspace: Path
) -> None:
    with MemoryClient(daemon.socket_path) as c:
        c.forget(workspace="alice", path=DAY, lines="3", purge=True)
    held = (workspace / "memory" / ".provenance.jsonl").read_text()
    assert "heroku" not in held
    stones = [json.loads(line) for line in held.splitlines() if '"op":"forget"' in line]
    assert [(s["k"], s["path"]) for s in stones] == [
        (line_key("- The deploy target is heroku."), DAY)
    ]
    ledger = Ledger(workspace)
    ledger.refresh()
    assert [r.op for r in ledger.records() if r.op == "forget"] == ["forget"]


def test_forget_by_query_takes_the_matching_lines_only_never_their_neighbours(
    daemon: DaemonThread, workspace: Path
) -> None:
    with MemoryClient(daemon.socket_path) as c:
        shown = c.forget(workspace="alice", query="staging database orca", dry_run=True)
        # The preview is exactly what goes: the one matching line, not the snippet's rest.
        assert [(r.path, r.lines, r.text) for r in shown.removed] == [
            (DAY, ["5"], "- The staging database is called orca.")
        ]
        done = c.forget(workspace="alice", query="staging database orca")
        assert [(r.path, r.lines) for r in done.removed] == [(DAY, ["5"])]
    assert (workspace / DAY).read_text() == DAY_TEXT.replace(
        "- The staging database is called orca.\n", ""
    )


def test_forget_through_a_link_acts_on_its_target_and_keeps_the_link(
    daemon: DaemonThread, workspace: Path
) -> None:
    link = workspace / "memory" / "today.md"
    link.symlink_to(workspace / DAY)
    with MemoryClient(daemon.socket_path) as c:
        c.reindex(workspace="alice")
        done = c.forget(workspace="alice", path="memory/today.md", lines="3")
        assert [(r.path, r.lines, r.via) for r in done.removed] == [
            (DAY, ["3"], ["memory/today.md"])
        ]
        assert not any("heroku" in s for s in hits(c, "deploy target heroku"))
    assert link.is_symlink() and link.resolve() == (workspace / DAY).resolve()
    assert "heroku" not in (workspace / DAY).read_text()
