"""kill -9 during forget: after the restart nothing is half-removed.

A real ``memoryd run`` forgets a session whose lines are spread over many daily files, and
is killed with SIGKILL at a random moment of it (from before the request is read to after
the answer). The next start finishes an interrupted change (lifecycle/journal.py): every
file has lost the session's line, or none has, and the session is marked forgotten exactly
when its lines are gone.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from daemon_util import Proc, RawConn, short_tmp
from memoryd.files.lines import line_key
from memoryd.files.provenance import Ledger, Record
from memoryd.lifecycle import journal
from memoryd_client import protocol

pytestmark = pytest.mark.timeout(180)

FILES = 40
ROUNDS = 6


def make_home() -> tuple[Path, Path]:
    home = short_tmp()
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    records = []
    for i in range(FILES):
        rel = f"memory/2025-01-{i % 28 + 1:02d}-{i:02d}.md"
        line = f"- session fact number {i} about the zebra project"
        (ws / rel).write_text(f"# notes {i}\n\n{line}\n- an owner line {i}\n")
        records.append(Record(line_key(line), rel, "agent", "s-crash", "interactive", "append"))
    Ledger(ws).add(records)
    (home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\nname = "ws"\n')
    return home, ws


def state(ws: Path) -> tuple[int, bool]:
    present = sum("zebra" in p.read_text() for p in (ws / "memory").glob("*.md"))
    ledger = Ledger(ws)
    ledger.refresh()
    return present, "s-crash" in ledger.forgotten_sessions


def forget_and_kill(home: Path, delay: float) -> float:
    """Start the daemon, send the forget, SIGKILL it after ``delay`` s; how long the
    answer took when it came first (0 when the kill came first)."""
    proc = Proc(home)
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=30) as conn:
            conn.send(protocol.request(1, "forget", {"workspace": "ws", "session_id": "s-crash"}))
            started = time.monotonic()
            if delay < 0:  # calibration: wait for the answer
                frame = conn.frame()
                assert frame["ok"], frame
                return time.monotonic() - started
            time.sleep(delay)
            return 0.0
    finally:
        proc.kill()


def test_a_forget_killed_at_any_moment_is_whole_or_absent_after_the_restart() -> None:
    home, ws = make_home()
    try:
        took = forget_and_kill(home, -1)  # one whole forget: how long it takes here
        assert state(ws) == (0, True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    rng = random.Random(26)
    outcomes = []
    for _ in range(ROUNDS):
        home, ws = make_home()
        try:
            forget_and_kill(home, rng.uniform(0, took * 1.2))
            interrupted = [
                json.loads(p.read_text())["state"]
                for p in (ws / journal.CHANGES_DIR).glob("*/plan.json")
            ]
            restarted = Proc(home)
            try:
                restarted.ready()
                try:
                    with RawConn(restarted.socket) as c:
                        c.result("hello")  # recovery ran before the socket accepted
                except Exception as exc:  # a failure says what the daemon logged
                    raise AssertionError(f"{exc!r}; the daemon logged {restarted.logs()}") from exc
            finally:
                restarted.kill()
            present, forgotten = state(ws)
            assert present in (0, FILES), f"half removed: {present} of {FILES} files keep it"
            assert forgotten == (present == 0)
            assert all(
                json.loads(p.read_text())["state"] == "done"
                for p in (ws / journal.CHANGES_DIR).glob("*/plan.json")
            )
            outcomes.append((present, tuple(interrupted)))
        finally:
            shutil.rmtree(home, ignore_errors=True)
    print("outcomes (lines left, plan states at the kill):", outcomes)


KILL_AFTER_PLAN = """
import os, signal, sys
from pathlib import Path
from memoryd.lifecycle import journal
root = Path(sys.argv[1])
files = [
    journal.FileChange(
        f"memory/{i}.md", f"- line {i}\\n- zebra {i}\\n".encode(), f"- line {i}\\n".encode()
    )
    for i in range(10)
]
kill = lambda: os.kill(os.getpid(), signal.SIGKILL)
journal.apply(root, journal.Change("forget", files), on_planned=kill)
"""


@pytest.mark.parametrize("done_before_kill", [0, 4, 10])
def test_recovery_finishes_a_change_killed_after_its_plan_whatever_was_replaced(
    tmp_path: Path, done_before_kill: int
) -> None:
    (tmp_path / "memory").mkdir()
    for i in range(10):
        (tmp_path / "memory" / f"{i}.md").write_text(f"- line {i}\n- zebra {i}\n")
    proc = subprocess.run([sys.executable, "-c", KILL_AFTER_PLAN, str(tmp_path)], check=False)
    assert proc.returncode == -signal.SIGKILL
    plans = list((tmp_path / journal.CHANGES_DIR).glob("*/plan.json"))
    assert len(plans) == 1 and json.loads(plans[0].read_text())["state"] == "applying"
    # The files a kill between two replacements would have left replaced already.
    for i in range(done_before_kill):
        (tmp_path / "memory" / f"{i}.md").write_text(f"- line {i}\n")
    assert journal.recover(tmp_path) == 1
    assert all((tmp_path / "memory" / f"{i}.md").read_text() == f"- line {i}\n" for i in range(10))
    assert json.loads(plans[0].read_text())["state"] == "done"
    assert journal.recover(tmp_path) == 0  # once


def test_recovery_leaves_a_file_edited_by_hand_since_the_plan(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    for i in range(10):
        (tmp_path / "memory" / f"{i}.md").write_text(f"- line {i}\n- zebra {i}\n")
    subprocess.run([sys.executable, "-c", KILL_AFTER_PLAN, str(tmp_path)], check=False)
    (tmp_path / "memory" / "3.md").write_text("- a person rewrote this\n")
    journal.recover(tmp_path)
    assert (tmp_path / "memory" / "3.md").read_text() == "- a person rewrote this\n"
    assert (tmp_path / "memory" / "4.md").read_text() == "- line 4\n"
