"""retention: old transcripts are archived (verified gzip) or deleted; recent ones untouched;
old daily files may move to memory/archive/ and stay searchable."""

from __future__ import annotations

import datetime as dt
import gzip
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine_util import IndexFactory, search
from jobs_util import NOW, JobHarness, set_mtime, transcript
from memoryd.index.workspace import WorkspaceIndex
from memoryd.jobs.history import RunRecord

pytestmark = pytest.mark.timeout(60)

OLD = NOW - dt.timedelta(days=45)  # in January 2025, local time
RECENT = NOW - dt.timedelta(days=3)


@pytest.fixture
def index(make_index: IndexFactory) -> WorkspaceIndex:
    return make_index({"index": {"sessions": True}})


@pytest.fixture
def harness(
    make_index: IndexFactory, index: WorkspaceIndex, tmp_path: Path
) -> Iterator[JobHarness]:
    h = JobHarness(
        make_index.ws, tmp_path / "state.sqlite", {"index": {"sessions": True}}, index=index
    )
    yield h
    h.close()


def session(h: JobHarness, name: str, when: dt.datetime, words: str) -> tuple[Path, bytes]:
    body = transcript(name, [("user", words), ("assistant", f"ok: {words}")], when)
    # Big and varied enough that compression matters and a bad archive would show.
    body += "".join(
        f'{{"type": "tool_result", "n": {i}, "data": "{os.urandom(8).hex()}"}}\n'
        for i in range(500)
    )
    path = h.write(f"sessions/{name}.jsonl", body)
    set_mtime(path, when)
    return path, path.read_bytes()


def test_old_transcripts_are_archived_verifiably_and_recent_ones_untouched(
    harness: JobHarness, index: WorkspaceIndex
) -> None:
    old_path, old_bytes = session(harness, "old", OLD, "the platypus migration plan")
    new_path, new_bytes = session(harness, "new", RECENT, "the echidna rollout")
    index.sync()
    assert search(index, "platypus", sources=("sessions",)).results
    record = harness.run("retention")
    assert record.status == "ok", record.message
    archive = harness.root / "sessions" / "archive" / "2025-01" / "old.jsonl.gz"
    assert gzip.decompress(archive.read_bytes()) == old_bytes  # exactly the original
    assert not old_path.exists()
    assert new_path.read_bytes() == new_bytes and new_path.stat().st_mtime == RECENT.timestamp()
    assert record.report["archived"] == 1 and record.report["files"] == 1
    assert record.report["bytes"] == len(old_bytes)
    assert 0 < record.report["archive_bytes"] < len(old_bytes)
    assert record.message == f"archived 1 transcript(s) ({len(old_bytes)} bytes)"
    assert not search(index, "platypus", sources=("sessions",)).results  # the index followed
    assert search(index, "echidna", sources=("sessions",)).results


def test_delete_action_removes_old_transcripts_only(harness: JobHarness) -> None:
    harness.data["jobs"] = {"retention": {"action": "delete", "retention_days": 10}}
    old_path, _ = session(harness, "old", OLD, "x")
    new_path, new_bytes = session(harness, "new", RECENT, "y")
    record = harness.run("retention")
    assert record.status == "ok" and record.report["deleted"] == 1
    assert not old_path.exists() and new_path.read_bytes() == new_bytes
    assert not (harness.root / "sessions" / "archive").exists()


def test_dry_run_lists_the_actions_and_changes_nothing(harness: JobHarness) -> None:
    old_path, old_bytes = session(harness, "old", OLD, "x")
    session(harness, "new", RECENT, "y")
    record = harness.run("retention", dry_run=True)
    assert record.status == "ok" and record.dry_run
    assert record.report["actions"] == [
        {
            "action": "archive",
            "path": "sessions/old.jsonl",
            "bytes": len(old_bytes),
            "to": "sessions/archive/2025-01/old.jsonl.gz",
        }
    ]
    assert record.message.startswith("dry run: would archive 1 transcript(s)")
    assert old_path.read_bytes() == old_bytes
    assert not (harness.root / "sessions" / "archive").exists()


def test_an_archive_name_taken_by_other_content_is_not_overwritten(harness: JobHarness) -> None:
    _, old_bytes = session(harness, "old", OLD, "x")
    taken = harness.write("sessions/archive/2025-01/old.jsonl.gz", gzip.compress(b"other\n"))
    assert harness.run("retention").status == "ok"
    assert gzip.decompress(taken.read_bytes()) == b"other\n"
    second = harness.root / "sessions" / "archive" / "2025-01" / "old.jsonl.2.gz"
    assert gzip.decompress(second.read_bytes()) == old_bytes


def test_a_transcript_written_again_is_not_old_any_more(harness: JobHarness) -> None:
    path, _ = session(harness, "old", OLD, "x")
    with path.open("a") as f:  # the session resumed: its last write is now
        f.write('{"type": "message", "message": {"role": "user", "content": "back"}}\n')
    set_mtime(path, NOW - dt.timedelta(minutes=5))
    record = harness.run("retention")
    assert record.status == "ok" and record.report["files"] == 0
    assert path.exists() and record.message == "nothing to do"


def test_old_daily_files_move_to_the_archive_and_stay_searchable(
    harness: JobHarness, index: WorkspaceIndex
) -> None:
    harness.data["jobs"] = {"retention": {"daily_archive_days": 30}}
    old = harness.write("memory/2025-01-05.md", "- the axolotl decision\n")
    set_mtime(old, dt.datetime(2025, 1, 5, 22, 0, tzinfo=NOW.tzinfo))
    late = harness.write("memory/2025-01-06.md", "- a late note about quolls\n")  # written now
    index.sync()
    record = harness.run("retention")
    assert record.status == "ok" and record.report["daily_archived"] == 1
    moved = harness.root / "memory" / "archive" / "2025" / "2025-01-05.md"
    assert moved.read_text() == "- the axolotl decision\n" and not old.exists()
    assert late.exists()
    hits = search(index, "axolotl").results
    assert [h.path for h in hits] == ["memory/archive/2025/2025-01-05.md"]


def test_moving_a_daily_file_waits_for_an_append_in_progress(harness: JobHarness) -> None:
    """The move holds the Appender's lock for the file: an append that holds it (here: we
    hold it and write, as Appender.append does) is never split by the link/unlink pair."""
    harness.data["jobs"] = {"retention": {"daily_archive_days": 30}}
    old = harness.write("memory/2025-01-05.md", "- the axolotl decision\n")
    set_mtime(old, dt.datetime(2025, 1, 5, 22, 0, tzinfo=NOW.tzinfo))
    moved = harness.root / "memory" / "archive" / "2025" / "2025-01-05.md"
    records: list[RunRecord] = []
    with harness.appender.locks.lock_for(old):
        job = threading.Thread(target=lambda: records.append(harness.run("retention")))
        job.start()
        time.sleep(0.5)  # long enough for a move that does not wait to have happened
        assert old.exists() and not moved.exists()
        with old.open("a") as f:  # the append the move waited for
            f.write("\n- a late note\n")
    job.join(timeout=30)
    assert records and records[0].status == "ok"
    assert records[0].report["left_alone"] == [
        {"path": "memory/2025-01-05.md", "reason": "written during the run"}
    ]
    assert old.read_text() == "- the axolotl decision\n\n- a late note\n"
    assert not moved.exists()


class _Marks:
    def __init__(self) -> None:
        self.seqs: dict[str, int] = {}

    def of(self, store: Path) -> dict[str, int]:
        return dict(self.seqs)

    def set(self, store: Path, session: str, seq: int) -> None:
        self.seqs[session] = seq


@pytest.mark.parametrize("marks_kept", [True, False], ids=["marks", "rebuilt-state"])
def test_openclaws_old_copies_are_archived_and_never_copied_again(
    harness: JobHarness, index: WorkspaceIndex, tmp_path: Path, marks_kept: bool
) -> None:
    from fakes.openclaw_store import add_events, create_store, message, store_path
    from memoryd.files.openclaw_mirror import mirror_store

    store = store_path(tmp_path / "oc")
    oc = create_store(store)
    sid = "d6008abf-6cb5-4cf1-bf7a-b0193b78f8ec"
    add_events(oc, sid, [{"type": "session", "id": sid}, message("user", "the wombat plan")])
    add_events(oc, "live", [message("user", "the quokka plan")])
    marks = _Marks()
    mirror_store(store, harness.root, marks)
    copy = harness.root / f"sessions/openclaw/main/{sid}.jsonl"
    live = harness.root / "sessions/openclaw/main/live.jsonl"
    original = copy.read_bytes()
    set_mtime(copy, OLD)
    set_mtime(live, RECENT)
    index.sync()
    assert search(index, "wombat", sources=("sessions",)).results

    record = harness.run("retention")
    assert record.status == "ok", record.message
    archive = harness.root / f"sessions/archive/2025-01/openclaw/main/{sid}.jsonl.gz"
    assert gzip.decompress(archive.read_bytes()) == original
    assert not copy.exists() and live.exists() and record.report["archived"] == 1
    assert not search(index, "wombat", sources=("sessions",)).results
    assert search(index, "quokka", sources=("sessions",)).results

    # OpenClaw writes on in the old session: only the new row is copied, into a new copy
    add_events(oc, sid, [message("user", "the numbat follow-up")])
    mirror_store(store, harness.root, marks if marks_kept else _Marks())
    assert copy.read_bytes().count(b"\n") == 1 and b"numbat" in copy.read_bytes()
    assert b"wombat" not in copy.read_bytes()
