"""ledger_compaction in the real daemon: what goes (records of lines no longer on disk,
tombstones older than sync.tombstone_days), what stays, and an append racing it keeps its
record."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest

from daemon_util import DaemonThread, RawConn
from fakes.clock import FakeClock
from jobs_util import NOW
from memoryd.files.lines import line_key
from memoryd.files.provenance import LEDGER_REL, Provenance, Record, ledger_for
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(60)

DAILY = "memory/2025-01-10.md"
AGENT = Provenance("agent", "s1", "interactive")


def _at(when: dt.datetime) -> float:
    return when.timestamp()


def _config(ws: Path, **ledger: object) -> dict[str, object]:
    return {
        "workspaces": [{"path": str(ws), "name": "alice"}],
        "jobs": {"ledger_compaction": ledger},
        "sync": {"tombstone_days": 90},
    }


def test_old_records_of_gone_lines_and_old_tombstones_go_the_rest_stays(md_home: Path) -> None:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / DAILY).write_text("- the kept line\n- a line retyped by hand\n")
    old, month, yesterday = NOW - dt.timedelta(days=60), NOW - dt.timedelta(days=30), NOW
    yesterday -= dt.timedelta(days=1)
    month_s = dt.timedelta(days=40)
    kept, gone, retyped = (
        line_key("the kept line"),
        line_key("a gone line"),
        line_key("a line retyped by hand"),
    )
    ledger = ledger_for(ws.resolve())
    ledger.add(
        [
            Record.added(kept, DAILY, AGENT, "append", _at(old)),
            Record.added(gone, DAILY, AGENT, "append", _at(old)),
            Record.added(line_key("recently deleted"), DAILY, AGENT, "append", _at(yesterday)),
            Record.added(retyped, DAILY, Provenance("untrusted"), "mcp", _at(old - month_s)),
            Record.tombstone(retyped, DAILY, _at(old - dt.timedelta(days=35))),
            Record.tombstone(line_key("forgotten"), DAILY, _at(month)),
            Record.added(kept, "memory/2024-12-01.md", AGENT, "append", _at(old)),  # moved away
        ]
    )
    ledger.forget_session("s9", at=_at(old))
    with (
        DaemonThread(md_home, _config(ws), clock=FakeClock(NOW)) as d,
        RawConn(d.socket_path) as conn,
    ):
        dry = conn.result("jobs.run", {"name": "ledger_compaction", "dry_run": True})
        assert dry["status"] == "ok", dry
        assert (dry["report"]["dropped"], dry["report"]["records"]) == (4, 8)
        assert len(ledger_for(ws.resolve())) == 8
        run = conn.result("jobs.run", {"name": "ledger_compaction", "workspace": "alice"})
        assert run["status"] == "ok", run
        report = run["report"]
        assert (report["adds"], report["tombstones"], report["approvals"]) == (3, 1, 0)
        assert (report["dropped"], report["kept"]) == (4, 4)
        assert run["message"] == "dropped 4 of 8 ledger records (3 adds, 1 tombstones)"
        listed = conn.result("jobs.list", {"name": "ledger_compaction", "history": 2})["jobs"]
        (job,) = listed
        assert [r["dry_run"] for r in job["history"]] == [False, True]
        assert job["next_run"] == "2025-03-13T03:45:00+01:00"
        again = conn.result("jobs.run", {"name": "ledger_compaction"})
        assert again["message"] == "nothing to drop"
    lines = (ws / LEDGER_REL).read_text().splitlines()
    assert len(lines) == 4 and not any(gone in x or retyped in x for x in lines)
    fresh = ledger_for(ws.resolve())
    assert fresh.lookup(DAILY, kept) == AGENT
    assert fresh.lookup(DAILY, line_key("recently deleted")) is not None  # keep_days
    assert fresh.lookup(DAILY, retyped) is None  # still the owner's: typed by hand
    assert fresh.forgotten_sessions == {"s9"}
    assert [r.k for r in fresh.records() if r.op == "forget"] == [line_key("forgotten")]


def test_an_append_racing_the_compaction_keeps_its_record(md_home: Path) -> None:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    # The job's clock after every real write (appends record the real time) and keep_days
    # 0: only the file locks keep a record whose line is not on disk yet.
    later = dt.datetime(2040, 1, 1, tzinfo=dt.UTC)
    config = _config(ws, keep_days=0, enabled=False)
    appended: list[tuple[str, str]] = []
    dropped = 0
    with DaemonThread(md_home, config, clock=FakeClock(later)) as d:
        day = d.daemon.clock.now().date() if d.daemon is not None else later.date()
        rel = f"memory/{day.isoformat()}.md"
        ledger = ledger_for(ws.resolve())
        done = threading.Event()

        def appends() -> None:
            try:
                with MemoryClient(d.socket_path) as c:
                    for i in range(150):
                        text = f"racing note number {i} about the wombat"
                        c.append(text, workspace="alice", date=day)
                        appended.append((rel, line_key(text)))
            finally:
                done.set()

        writer = threading.Thread(target=appends)
        writer.start()
        with RawConn(d.socket_path) as conn:
            while not done.is_set():
                # A dead record of the same file, so every run rewrites that file's records.
                ledger.add([Record.added(line_key("never there"), rel, AGENT, "append", 1.0)])
                run = conn.result("jobs.run", {"name": "ledger_compaction"})
                assert run["status"] == "ok", run
                dropped += run["report"]["dropped"]
        writer.join()
    assert len(appended) == 150 and dropped > 0
    fresh = ledger_for(ws.resolve())
    fresh.refresh()
    missing = [k for path, k in appended if fresh.lookup(path, k) is None]
    assert missing == []
    on_disk = {line_key(x) for x in (ws / rel).read_text().splitlines()}
    assert {k for _, k in appended} <= on_disk
