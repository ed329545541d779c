"""Failures of the machine reach the client as errors it can act on, not ``internal``."""

from __future__ import annotations

from pathlib import Path

from daemon_util import DaemonThread, RawConn, error_code


def test_workspace_add_on_a_full_disk_is_disk_full_and_registers_nothing(
    md_home: Path, md_daemon: DaemonThread
) -> None:
    """SQLite's own FullError (the state database may not grow: ``max_page_count``, as on
    a full disk) used to come back as ``internal: FullError``."""
    deep = md_home / "w"
    for i in range(12):  # a path longer than a page: its row needs a new one
        deep = deep / (f"{i:02d}" + "x" * 240)
    deep.mkdir(parents=True)
    daemon = md_daemon.daemon
    assert daemon is not None
    state = daemon.services.state
    with state.lock:
        pages = state.conn.execute("PRAGMA page_count").fetchone()[0]
        state.conn.execute(f"PRAGMA max_page_count = {pages}")
    with RawConn(md_daemon.socket_path) as conn:
        frame = conn.call("workspace.add", {"path": str(deep), "name": "deep"})
        assert error_code(frame) == "disk_full", frame
        assert "the disk is full" in frame["error"]["message"]
        assert conn.result("workspace.list")["workspaces"] == []
        with state.lock:
            state.conn.execute("PRAGMA max_page_count = 1073741823")
        assert conn.result("workspace.add", {"path": str(deep), "name": "deep"})["added"]
