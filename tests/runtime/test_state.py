"""The state database: named, recorded migrations; the workspace registry."""

from __future__ import annotations

import json
import os
import stat
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
    assert db.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 't'").fetchall() == [
        (0,)
    ]
    db.close()


def test_workspace_registry_persists(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "s.sqlite")
    db.add_workspace("notes", Path("/w/notes"))
    db.add_workspace("agent", Path("/w/agent"))
    db.close()
    db = StateDB(tmp_path / "s.sqlite")
    assert [(w.name, w.path) for w in db.workspaces()] == [
        ("notes", Path("/w/notes")),
        ("agent", Path("/w/agent")),
    ]
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
                run_id = history.start(
                    "retention",
                    root,
                    "w",
                    trigger="manual",
                    dry_run=False,
                    scheduled_for=None,
                    started_at=j,
                )
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


# -- one runner, and recovery -------------------------------------------------------------


def test_two_connections_opening_a_new_state_database_at_once_both_succeed(tmp_path: Path) -> None:
    """The state database had its own runner without the index's concurrent-open fix."""
    for round_ in range(10):
        path = tmp_path / f"s{round_}.sqlite"
        barrier = threading.Barrier(4)
        errors: list[BaseException] = []
        opened: list[StateDB] = []

        def open_it(
            path: Path,
            barrier: threading.Barrier,
            errors: list[BaseException],
            opened: list[StateDB],
        ) -> None:
            barrier.wait()
            try:
                opened.append(StateDB(path))
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=open_it, args=(path, barrier, errors, opened)) for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for db in opened:
            db.close()


def _registered(tmp_path: Path) -> Path:
    db = StateDB(tmp_path / "state.sqlite")
    db.add_workspace("notes", Path("/w/notes"))
    db.add_workspace("agent", Path("/w/agent"))
    db.close()
    return tmp_path / "state.sqlite"


def test_a_scribbled_state_database_is_moved_aside_and_the_registry_comes_back(
    tmp_path: Path,
) -> None:
    path = _registered(tmp_path)
    size = path.stat().st_size
    path.write_bytes(os.urandom(size))
    for suffix in ("-wal", "-shm"):
        Path(f"{path}-{suffix[1:]}").unlink(missing_ok=True)
    db = StateDB(path)
    assert [(w.name, w.path) for w in db.workspaces()] == [
        ("notes", Path("/w/notes")),
        ("agent", Path("/w/agent")),
    ]
    assert db.recovered is not None and "damaged" in db.recovered
    assert "2 registered workspace(s) restored" in db.recovered
    assert (tmp_path / "state.sqlite.corrupt").stat().st_size == size
    db.close()
    again = StateDB(path)  # sound again: nothing to say
    assert again.recovered is None and len(again.workspaces()) == 2
    again.close()


def test_a_state_database_truncated_to_nothing_does_not_forget_the_workspaces(
    tmp_path: Path,
) -> None:
    path = _registered(tmp_path)
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if p.exists():
            p.write_bytes(b"")
    db = StateDB(path)
    assert [w.name for w in db.workspaces()] == ["notes", "agent"]
    assert db.recovered is not None and "empty" in db.recovered
    db.close()


def test_a_failing_migration_is_an_error_not_damage(tmp_path: Path) -> None:
    StateDB(tmp_path / "s.sqlite").close()
    with pytest.raises(StateError):
        StateDB(tmp_path / "s.sqlite", migrations=[*MIGRATIONS, ("9_bad", "CREATE TABLE")])
    assert not (tmp_path / "s.sqlite.corrupt").exists()


def test_state_and_index_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    from memoryd.index import schema

    old = os.umask(0o022)
    try:
        state = StateDB(tmp_path / "state" / "state.sqlite")
        state.add_workspace("w", Path("/w"))
        conn = schema.connect(tmp_path / "data" / "index" / "w.sqlite")
        conn.execute("CREATE TABLE t(x)")
    finally:
        os.umask(old)
    for d in ("state", "data", "data/index"):
        assert stat.S_IMODE((tmp_path / d).stat().st_mode) == 0o700, d
    for f in (
        "state/state.sqlite",
        "state/state.sqlite-wal",
        "state/workspaces.json",
        "data/index/w.sqlite",
        "data/index/w.sqlite-wal",
    ):
        assert stat.S_IMODE((tmp_path / f).stat().st_mode) == 0o600, f
    conn.close()
    state.close()


def test_the_daemon_starts_on_a_scribbled_state_database_and_says_so(tmp_path: Path) -> None:
    """It refused to start (exit 1, which systemd retried five times)."""
    from daemon_util import DaemonThread, RawConn, short_home
    from memoryd.doctor import check_state

    with short_home() as home:
        ws = home / "ws"
        (ws / "memory").mkdir(parents=True)
        with DaemonThread(home) as d, RawConn(d.socket_path) as c:
            c.result("workspace.add", {"path": str(ws)})
        state_db = home / "state" / "state.sqlite"
        state_db.write_bytes(b"scribbled by a tester " * 4096)
        Path(f"{state_db}-wal").unlink(missing_ok=True)
        Path(f"{state_db}-shm").unlink(missing_ok=True)
        check = check_state(state_db)
        assert not check.ok and "damaged" in check.detail and "workspaces.json" in check.fix
        with DaemonThread(home) as d, RawConn(d.socket_path) as c:
            status = c.result("status")
            assert [w["name"] for w in status["workspaces"]] == ["ws"]
            assert any("moved to state.sqlite.corrupt" in r for r in status["degraded"])
        assert check_state(state_db).ok


def test_an_openclaw_registration_comes_back_with_the_registry(tmp_path: Path) -> None:
    path = _registered(tmp_path)
    db = StateDB(path)
    db.set_openclaw_home(Path("/w/agent"), Path("/h/.openclaw"))
    db.close()
    copy = json.loads((tmp_path / "workspaces.json").read_text())["workspaces"]
    assert [e.get("openclaw_home") for e in copy] == [None, "/h/.openclaw"]
    path.write_bytes(os.urandom(path.stat().st_size))
    for p in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)
    db = StateDB(path)
    assert db.recovered is not None
    homes = list(db.conn.execute("SELECT workspace_path, home FROM openclaw_homes"))
    assert homes == [("/w/agent", "/h/.openclaw")]
    db.close()
