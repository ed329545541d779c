"""The provenance ledger: durable, least trusted wins, torn lines tolerated, atomic rewrite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd.errors import ForbiddenPath, InvalidParams
from memoryd.files.lines import line_key
from memoryd.files.provenance import (
    LEDGER_REL,
    Ledger,
    Provenance,
    Record,
    SessionMark,
    check_provenance,
    entry_from_json,
    ledger_for,
)

D = "memory/d.md"


def _rec(text: str, origin: str, sid: str | None = None, path: str = D) -> Record:
    return Record(line_key(text), path, origin, sid, "interactive" if sid else None, at=1.0)


def test_a_line_with_no_record_has_no_provenance_and_the_file_is_not_created(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path)
    ledger.refresh()
    assert ledger.lookup(D, line_key("anything")) is None
    assert not (tmp_path / LEDGER_REL).exists()


def test_records_survive_a_new_ledger_object_as_after_a_restart(tmp_path: Path) -> None:
    Ledger(tmp_path).add([_rec("- web says X", "untrusted", "s1")])
    again = Ledger(tmp_path)
    again.refresh()
    assert again.lookup(D, line_key("web says x")) == Provenance("untrusted", "s1", "interactive")
    assert (tmp_path / LEDGER_REL).stat().st_mode & 0o777 == 0o600


def test_the_least_trusted_record_of_a_line_in_its_file_wins(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.add([_rec("fact", "owner"), _rec("fact", "untrusted", "web"), _rec("fact", "agent")])
    found = ledger.lookup(D, line_key("fact"))
    assert found is not None and found.origin == "untrusted" and found.session_id == "web"


def test_a_torn_last_line_is_skipped_counted_and_not_glued_to_the_next_record(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path)
    ledger.add([_rec("one", "agent")])
    with open(tmp_path / LEDGER_REL, "ab") as f:
        f.write(b'{"v":1,"op":"add","k":"abc')  # a crash mid-write
    ledger.add([_rec("two", "system")])
    fresh = Ledger(tmp_path)
    fresh.refresh()
    assert fresh.malformed == 1
    assert fresh.lookup(D, line_key("one")) == Provenance("agent")
    assert fresh.lookup(D, line_key("two")) == Provenance("system")


def test_an_edit_by_another_process_is_seen_on_refresh(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.add([_rec("one", "agent")])
    other = Ledger(tmp_path)
    other.add([_rec("two", "untrusted")])
    assert ledger.refresh()
    assert ledger.lookup(D, line_key("two")) == Provenance("untrusted")
    assert not ledger.refresh()


def test_sessions_are_listed_forgotten_and_rewrite_is_atomic_and_keeps_marks(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path)
    ledger.add([_rec("a", "agent", "s1"), _rec("b", "agent", "s2"), _rec("c", "owner", "s1")])
    assert [r.k for r in ledger.records_for_session("s1")] == [line_key("a"), line_key("c")]
    ledger.forget_session("s1", at=2.0)
    assert ledger.forgotten_sessions == {"s1"}
    assert ledger.rewrite(lambda r: r.session_id == "s1") == 2
    fresh = Ledger(tmp_path)
    fresh.refresh()
    assert fresh.records_for_session("s1") == []
    assert fresh.forgotten_sessions == {"s1"}
    assert fresh.lookup(D, line_key("b")) is not None
    assert [n for n in os.listdir(tmp_path / "memory") if n.endswith(".tmp")] == []


def test_compact_drops_records_of_lines_no_longer_in_memory(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.add([_rec("kept", "agent"), _rec("gone", "agent")])
    ledger.forget_lines([(D, line_key("old"))], at=5.0)
    ledger.forget_lines([(D, line_key("older"))], at=1.0)
    ledger.add([Record.added(line_key("young"), D, Provenance("agent"), "append", 9.0)])
    # Tombstones are kept for sync (write-path.md 3) unless older than asked; a line's
    # records younger than asked stay even when the line is gone.
    live = {D: {line_key("kept")}}
    assert ledger.compact(live, keep_forgets_since=2.0, keep_lines_since=8.0) == {
        "add": 1,
        "forget": 1,
    }
    assert ledger.lookup(D, line_key("gone")) is None and len(ledger) == 3
    assert [r.op for r in ledger.records()] == ["add", "forget", "add"]
    assert ledger.lookup(D, line_key("young")) is not None
    assert [n for n in os.listdir(tmp_path / "memory") if n.endswith(".tmp")] == []


def test_compact_leaves_other_files_and_never_changes_a_lines_trust(tmp_path: Path) -> None:
    """A line forgotten and then typed again by hand is the owner's: dropping its old
    tombstone also drops the untrusted record it cancelled (else that record would count
    again); a later write's record stays; a file not asked about keeps every record."""
    ledger = Ledger(tmp_path)
    retyped, rewritten = line_key("retyped"), line_key("rewritten")
    ledger.add([Record.added(retyped, D, Provenance("untrusted"), "mcp", 1.0)])
    ledger.add([Record.added(rewritten, D, Provenance("untrusted"), "mcp", 1.0)])
    ledger.forget_lines([(D, retyped), (D, rewritten)], at=2.0)
    ledger.add([Record.added(rewritten, D, Provenance("agent"), "append", 3.0)])
    ledger.add([_rec("elsewhere", "agent", path="memory/other.md")])
    before = {k: ledger.lookup(D, k) for k in (retyped, rewritten)}
    assert before[retyped] is None
    counts = ledger.compact({D: {retyped, rewritten}}, keep_forgets_since=5.0, keep_lines_since=5.0)
    assert counts == {"add": 2, "forget": 2}
    assert {k: ledger.lookup(D, k) for k in (retyped, rewritten)} == before
    assert ledger.lookup("memory/other.md", line_key("elsewhere")) is not None
    assert ledger.compact({D: {retyped, rewritten}}, 5.0, 5.0) == {}


def test_ledger_for_gives_one_copy_per_workspace(tmp_path: Path) -> None:
    assert ledger_for(tmp_path) is ledger_for(tmp_path)


def test_a_ledger_link_leading_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("")
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / LEDGER_REL).symlink_to(outside)
    with pytest.raises(ForbiddenPath):
        Ledger(ws).add([_rec("x", "agent")])
    assert outside.read_text() == ""


def test_provenance_params_are_checked_with_the_default_origin_when_absent() -> None:
    assert check_provenance(None, None, None, default_origin="agent") == Provenance("agent")
    got = check_provenance("untrusted", "s-1", "cron", default_origin="agent")
    assert got == Provenance("untrusted", "s-1", "cron")
    for bad in (
        ("root", None, None),
        ("agent", "", None),
        ("agent", "x\n", None),
        ("agent", None, "daily"),
    ):
        with pytest.raises(InvalidParams):
            check_provenance(*bad, default_origin="agent")


def test_a_copy_of_a_line_elsewhere_never_changes_the_line_in_its_own_file(
    tmp_path: Path,
) -> None:
    """Issue 34 item 3: trust belongs to a line in its file, not to its text."""
    ledger = Ledger(tmp_path)
    ledger.add([_rec("- Priya cuts releases", "untrusted", "web", path="memory/2026-03-02.md")])
    key = line_key("Priya cuts releases")
    assert ledger.lookup("memory/2026-03-02.md", key) == Provenance(
        "untrusted", "web", "interactive"
    )
    assert ledger.lookup("memory/2026-03-01.md", key) is None  # the owner's own line
    assert ledger.lookup("USER.md", key) is None
    assert ledger.lines_of("memory/2026-03-02.md") == {
        key: ledger.lookup("memory/2026-03-02.md", key)
    }


def test_forget_tombstones_approve_and_revival_fold_in_the_order_of_their_time(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path)
    k = line_key("x")
    ledger.add([Record(k, D, "untrusted", at=10.0)])
    ledger.approve(D, k, at=11.0)
    assert ledger.lookup(D, k) == Provenance("owner")  # the owner took it in review
    ledger.add([Record(k, D, "agent", at=12.0)])
    assert ledger.lookup(D, k) == Provenance("agent")  # a later write is a new write
    ledger.forget_lines([(D, k)], at=13.0)
    assert ledger.lookup(D, k) is None and ledger.empty  # gone from its file
    # A merged ledger (sync) may hold an older add after the tombstone: still forgotten.
    ledger.add([Record(k, D, "untrusted", at=12.5)])
    assert ledger.lookup(D, k) is None
    ledger.add([Record(k, D, "untrusted", at=14.0)])  # written again later: revived
    assert ledger.lookup(D, k) == Provenance("untrusted")
    fresh = Ledger(tmp_path)
    fresh.refresh()
    assert fresh.lookup(D, k) == Provenance("untrusted")
    assert [r.op for r in fresh.records()].count("forget") == 1
    assert fresh.records()[1].to_json() == (
        f'{{"v":1,"op":"approve","k":"{k}","path":"{D}","at":11.0}}'
    )


def test_carry_gives_a_moved_files_lines_their_records_at_the_new_path(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.add([_rec("a", "untrusted", "s"), _rec("b", "agent")])
    assert ledger.carry(D, "memory/archive/2026/d.md", at=3.0) == 2
    assert ledger.lookup("memory/archive/2026/d.md", line_key("a")) == Provenance(
        "untrusted", "s", "interactive"
    )


def test_each_kind_of_ledger_line_reads_back_as_itself_and_writes_the_same_bytes(
    tmp_path: Path,
) -> None:
    lines = [
        '{"v":1,"op":"add","k":"abc","path":"memory/d.md","origin":"agent",'
        '"session_id":"s1","session_kind":"interactive","via":"flush","at":1.5}',
        '{"v":1,"op":"forget","k":"abc","path":"memory/d.md","at":2.0}',
        '{"v":1,"op":"approve","k":"abc","path":"memory/d.md","at":3.0}',
        '{"v":1,"op":"forget_session","session_id":"s1","at":4.0}',
    ]
    entries = [entry_from_json(line) for line in lines]
    assert entries == [
        Record.added("abc", D, Provenance("agent", "s1", "interactive"), "flush", 1.5),
        Record.tombstone("abc", D, 2.0),
        Record.approval("abc", D, 3.0),
        SessionMark("s1", 4.0),
    ]
    assert [e.to_json() for e in entries if e is not None] == lines
    ledger = Ledger(tmp_path)
    ledger.add([e for e in entries if e is not None])
    assert (tmp_path / LEDGER_REL).read_text() == "\n".join(lines) + "\n"
    fresh = Ledger(tmp_path)
    fresh.refresh()
    assert fresh.forgotten_sessions == {"s1"}
    assert [r.op for r in fresh.records()] == ["add", "forget", "approve"]  # no session mark
