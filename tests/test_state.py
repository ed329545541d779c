"""The state database: named, recorded migrations; the workspace registry."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memoryd.jobs.history import History
from memoryd.runtime.state import MIGRATIONS, StateDB, StateError


def test_migrations_are_recorded_and_run_once(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.sqlite")
    assert db.applied == [name for name, _ in MIGRATIONS]
    db.close()
    again = StateDB(tmp_path / "state.sqlite")
    assert again.applied == []
    assert again.migrations() == [name for name, _ in MIGRATIONS]
    again.close()


def test_a_new_migration_is_applied_on_the_next_open(tmp_path: Path) -> None:
    StateDB(tmp_path / "s.sqlite").close()
    extra = [*MIGRATIONS, ("9999_extra", "CREATE TABLE extra (id INTEGER PRIMARY KEY)")]
    db = StateDB(tmp_path / "s.sqlite", migrations=extra)
    assert db.applied == ["9999_extra"]
    assert db.conn.execute("SELECT count(*) FROM extra").fetchall() == [(0,)]
    db.close()


def test_a_failing_migration_leaves_nothing_half_done(tmp_path: Path) -> None:
    broken = [*MIGRATIONS, ("0002_bad", "CREATE TABLE t (x); CREATE TABLE t (y);")]
    with pytest.raises(StateError, match="state database"):
        StateDB(tmp_path / "s.sqlite", migrations=broken)
    db = StateDB(tmp_path / "s.sqlite")
    assert "0002_bad" not in db.migrations()
    assert db.conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE name = 't'").fetchall() == [(0,)]
    db.close()


def test_workspace_registry_persists(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "s.sqlite")
    db.add_workspace("notes", Path("/w/notes"))
    db.add_workspace("agent", Path("/w/agent"))
    db.close()
    db = StateDB(tmp_path / "s.sqlite")
    assert [(w.name, w.path) for w in db.workspaces()] == [
        ("notes", Path("/w/notes")), ("agent", Path("/w/agent"))]
    assert db.remove_workspace(Path("/w/notes")) is True
    assert db.remove_workspace(Path("/w/notes")) is False
    assert [w.name for w in db.workspaces()] == ["agent"]
    db.close()


def test_history_and_state_are_safe_from_many_threads(tmp_path: Path) -> None:
    """One apsw connection serves the event loop and every job thread at once."""
    state = StateDB(tmp_path / "state.sqlite")
    history = History(state)
    errors: list[BaseException] = []
    barrier = threading.Barrier(12)

    def worker(i: int) -> None:
        root = tmp_path / f"ws{i % 3}"
        try:
            barrier.wait()
            for j in range(60):
                run_id = history.start("retention", root, "w", trigger="manual",
                                       dry_run=False, scheduled_for=None, started_at=j)
                history.recent("retention", root, 5)
                history.record_session(root, f"s{i}-{j}", "empty", j)
                assert history.session_outcome(root, f"s{i}-{j}") == "empty"
                history.is_own_append(root, "memory/x.md", j)
                history.set_anchor("retention", root, j)
                history.anchor("retention", root)
                history.last_ok("retention", root)
                history.finish(run_id, "ok", "done", {"i": i, "j": j}, j + 1)
                if j % 10 == 0:
                    state.add_workspace(f"w{i}-{j}", tmp_path / f"w{i}-{j}")
                    state.workspaces()
                    state.remove_workspace(tmp_path / f"w{i}-{j}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state.close()
    assert errors == []
