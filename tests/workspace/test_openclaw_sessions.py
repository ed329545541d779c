"""OpenClaw's sessions indexed from its SQLite stores (workspace/openclaw_sessions.py): a real
daemon, a real store in WAL mode written by another thread while the daemon copies and indexes
it, hits naming their agent and session, only new rows read, and stores that cannot be read
shown in status while the daemon keeps serving."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from daemon_util import DaemonThread, wait_for
from fakes.openclaw_store import add_events, create_store, message, store_path
from memoryd.files import openclaw_store
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(90)

SESSION = "5ed66a62-6f48-41d3-b041-e75e1f1e365d"
COPY = f"sessions/openclaw/main/{SESSION}.jsonl"


@pytest.fixture
def workspace(md_home: Path) -> Path:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe staging host is called kestrel.\n")
    return ws


def start(md_home: Path, *, sessions: bool = True) -> DaemonThread:
    return DaemonThread(md_home, config={"index": {"sessions": sessions}})


def register(d: DaemonThread, workspace: Path, home: Path) -> None:
    with MemoryClient(d.socket_path) as c:
        c.workspace_add(workspace, "openclaw", openclaw_home=home)


def openclaw_status(d: DaemonThread) -> dict[str, Any]:
    with MemoryClient(d.socket_path) as c:
        ws = c.call("status", {"workspace": "openclaw"})["workspaces"][0]
    assert isinstance(ws, dict)
    return ws


def store_report(d: DaemonThread, agent: str = "main") -> dict[str, Any]:
    stores = openclaw_status(d).get("openclaw", {}).get("stores", [])
    return next((s for s in stores if s["agent"] == agent), {})


def session_hits(d: DaemonThread, query: str) -> list[Any]:
    with MemoryClient(d.socket_path) as c:
        return list(c.search(query, sources=["sessions"], min_score=0).results)


def writer(path: Path, rows: int, ready: threading.Event) -> threading.Thread:
    """OpenClaw appending to two sessions from its own connection, every third event
    compressed, while the daemon reads."""

    def run() -> None:
        conn = apsw.Connection(str(path))
        conn.setbusytimeout(5000)
        ready.wait(10)
        for i in range(rows):
            session = SESSION if i % 2 == 0 else "other-session"
            word = f"marker{i:03d}"
            with conn:
                add_events(conn, session, [message("user", f"turn {i}: {word}")], zstd=i % 3 == 0)
        conn.close()

    return threading.Thread(target=run, name="openclaw-writer")


def test_sessions_written_while_the_daemon_indexes_are_copied_once_and_hits_name_them(
    md_home: Path, workspace: Path
) -> None:
    home = md_home / ".openclaw"
    oc = create_store(store_path(md_home))
    add_events(oc, SESSION, [{"type": "session", "id": SESSION}, message("user", "first")])
    ready = threading.Event()
    rows = 120
    thread = writer(store_path(md_home), rows, ready)
    thread.start()
    with start(md_home) as d:
        register(d, workspace, home)
        ready.set()  # OpenClaw writes while the daemon polls, copies and indexes
        thread.join(60)
        total = rows + 2
        assert wait_for(lambda: store_report(d).get("rows_read_total") == total, 20)
        # every row read exactly once, however the passes fell between the writes
        report = store_report(d)
        assert report["rows_read_total"] == total and report["sessions"] == 2
        lines = (workspace / COPY).read_bytes().splitlines()
        assert len(lines) == 2 + rows // 2
        assert wait_for(lambda: bool(session_hits(d, "marker118")), 20)
        hit = session_hits(d, "marker118")[0]
        assert hit.path == COPY and hit.source == "sessions"
        zstd_hit = session_hits(d, "marker117")[0]  # 117: an odd turn, compressed
        assert zstd_hit.path == "sessions/openclaw/main/other-session.jsonl"
        with MemoryClient(d.socket_path) as c:
            span = hit.end_line - hit.start_line + 1
            assert "marker118" in c.get(COPY, from_line=hit.start_line, lines=span).text
            memory = c.search("kestrel", sources=["memory"], min_score=0).results
            assert memory and memory[0].path == "MEMORY.md"


def test_only_new_rows_are_read_and_a_deleted_copy_is_not_filled_with_old_rows(
    md_home: Path, workspace: Path
) -> None:
    oc = create_store(store_path(md_home))
    add_events(oc, SESSION, [message("user", f"old turn {i} albatross") for i in range(50)])
    with start(md_home) as d:
        register(d, workspace, md_home / ".openclaw")
        assert wait_for(lambda: store_report(d).get("rows_read_total") == 50, 20)
        add_events(oc, SESSION, [message("user", "new turn about the pelican")], zstd=True)
        assert wait_for(lambda: store_report(d).get("rows_read_total") == 51, 20)
        assert store_report(d)["rows_read"] == 1  # the last pass read the new row only
        assert wait_for(lambda: bool(session_hits(d, "pelican")), 20)

        (workspace / COPY).unlink()  # retention or a person removed the copy
        add_events(oc, SESSION, [message("assistant", "the heron came back")])
        assert wait_for(lambda: (workspace / COPY).exists(), 20)
        assert wait_for(lambda: bool(session_hits(d, "heron")), 20)
        assert b"heron" in (workspace / COPY).read_bytes()
        assert b"albatross" not in (workspace / COPY).read_bytes()
        assert store_report(d)["rows_read_total"] == 52
        assert not session_hits(d, "albatross")  # the deleted copy left the index


def test_a_damaged_or_locked_store_is_in_status_and_the_daemon_keeps_serving(
    md_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openclaw_store, "BUSY_TIMEOUT_MS", 100)
    good = create_store(store_path(md_home))
    add_events(good, SESSION, [message("user", "the osprey nests here")])
    broken = store_path(md_home, "broken")
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"this is not a database, it is junk " * 200)
    locked_path = store_path(md_home, "busy")
    locked = create_store(locked_path)
    add_events(locked, "s", [message("user", "locked away")])
    locked.execute("PRAGMA locking_mode=EXCLUSIVE")
    locked.execute("BEGIN EXCLUSIVE")
    add_events(locked, "s", [message("user", "still locked")])
    with start(md_home) as d:
        register(d, workspace, md_home / ".openclaw")
        assert wait_for(lambda: bool(session_hits(d, "osprey")), 20)
        assert wait_for(lambda: "error" in store_report(d, "busy"), 20)
        status = openclaw_status(d)
        assert "not a database" in store_report(d, "broken")["error"]
        assert "locked" in store_report(d, "busy")["error"]
        assert any(str(broken) in p and "cannot be read" in p for p in status["degraded"])
        assert session_hits(d, "osprey")[0].path == COPY  # everyone else is served

        locked.execute("COMMIT")
        locked.close()  # OpenClaw lets go: the next poll reads it
        assert wait_for(lambda: bool(session_hits(d, "still locked")), 20)
        assert "error" not in store_report(d, "busy")


def test_without_a_store_or_with_sessions_off_status_says_why_nothing_is_copied(
    md_home: Path, workspace: Path
) -> None:
    with start(md_home) as d:
        register(d, workspace, md_home / ".openclaw")
        oc = openclaw_status(d)["openclaw"]
        assert oc["home"] == str(md_home / ".openclaw") and oc["stores"] == []
        assert "no OpenClaw agent store" in oc["note"]
    create_store(store_path(md_home))
    with start(md_home, sessions=False) as d:
        oc = openclaw_status(d)["openclaw"]  # the registration survives a restart
        assert "index.sessions is off" in oc["note"]
    assert not (workspace / "sessions").exists()


@pytest.mark.parametrize("damage", ["scribbled", "deleted"])
def test_a_rebuilt_state_database_keeps_the_registration_and_copies_no_row_twice(
    md_home: Path, workspace: Path, damage: str
) -> None:
    oc = create_store(store_path(md_home))
    add_events(oc, SESSION, [message("user", f"turn {i} about the osprey") for i in range(30)])
    with start(md_home) as d:
        register(d, workspace, md_home / ".openclaw")
        assert wait_for(lambda: store_report(d).get("rows_read_total") == 30, 20)
    (state_db,) = md_home.rglob("state.sqlite")
    for extra in (Path(f"{state_db}-wal"), Path(f"{state_db}-shm")):
        extra.unlink(missing_ok=True)
    if damage == "scribbled":
        state_db.write_bytes(os.urandom(state_db.stat().st_size))
    else:
        state_db.unlink()
    add_events(oc, SESSION, [message("assistant", "the cormorant is new")], zstd=True)
    with start(md_home) as d:
        assert openclaw_status(d)["openclaw"]["home"] == str(md_home / ".openclaw")
        assert wait_for(lambda: bool(session_hits(d, "cormorant")), 20)
        assert store_report(d)["rows_read_total"] == 1  # only the new row was read
        lines = (workspace / COPY).read_bytes().splitlines()
        assert len(lines) == 31 and len(set(lines)) == 31
        add_events(oc, SESSION, [message("user", "and a puffin after that")])
        assert wait_for(lambda: bool(session_hits(d, "puffin")), 20)
        assert len((workspace / COPY).read_bytes().splitlines()) == 32


@pytest.fixture(autouse=True)
def _no_leftover_threads() -> Iterator[None]:
    yield
    assert not any(t.name == "openclaw-writer" for t in threading.enumerate())


def test_a_forgotten_session_loses_its_copy_and_is_never_copied_again(
    md_home: Path, workspace: Path
) -> None:
    oc = create_store(store_path(md_home))
    add_events(oc, SESSION, [message("user", "the cormorant plan")])
    add_events(oc, "other-session", [message("user", "the gannet plan")])
    with start(md_home) as d:
        register(d, workspace, md_home / ".openclaw")
        assert wait_for(lambda: bool(session_hits(d, "cormorant")), 20)
        with MemoryClient(d.socket_path) as c:
            out = c.forget(workspace="openclaw", session_id=SESSION)
        assert COPY in [r["path"] for r in out.raw["removed"]], out.raw
        assert not (workspace / COPY).exists()
        assert not session_hits(d, "cormorant")
        # OpenClaw goes on writing to the session: nothing of it is copied or indexed again
        add_events(oc, SESSION, [message("user", "the cormorant returns")])
        add_events(oc, "other-session", [message("user", "the gannet returns")])
        assert wait_for(lambda: bool(session_hits(d, "returns")), 20)
        assert not (workspace / COPY).exists()
        assert [h.path for h in session_hits(d, "returns")] == [
            "sessions/openclaw/main/other-session.jsonl"
        ]
        assert SESSION in store_report(d)["skipped"]
