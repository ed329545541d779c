"""What a daemon finds after a kill or a tamperer: stale temp files, a deleted socket, a
foreign listener on its path."""

from __future__ import annotations

import os
import resource
import signal
import socket
from pathlib import Path

from daemon_util import DaemonThread, Proc, RawConn, wait_for
from memoryd.app import SOCKET_CHECK_S
from memoryd.cli import EXIT_OK, EXIT_SOCKET


def test_temp_files_of_a_killed_memory_rewrite_are_removed_when_the_workspace_opens(
    md_home: Path,
) -> None:
    ws = md_home / "ws"
    (ws / "memory" / ".history").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n")
    stale = [
        ws / ".MEMORY.md.k2_9xq0a.tmp",
        ws / "memory" / ".history" / ".MEMORY.20250312T093000.md.ab12cd34.tmp",
    ]
    kept = [
        ws / ".MEMORY.md.bak",
        ws / ".MEMORY.md.mine.tmp",
        ws / "memory" / "x.tmp",
        ws / ".notes.md.k2_9xq0a.tmp",
    ]
    for p in stale + kept:
        p.write_text("partial")
    with (
        DaemonThread(md_home, config={"workspaces": [{"path": str(ws)}]}) as d,
        RawConn(d.socket_path) as c,
    ):
        assert c.result("status")["workspaces"][0]["name"] == "ws"
    assert [p.name for p in stale if p.exists()] == []
    assert [p.name for p in kept if not p.exists()] == []


def test_a_socket_file_deleted_while_running_is_made_again_on_sighup(md_home: Path) -> None:
    proc = Proc(md_home)
    try:
        proc.ready()
        with RawConn(proc.socket) as before:
            before.result("hello")
            proc.socket.unlink()
            proc.p.send_signal(signal.SIGHUP)
            assert wait_for(proc.socket.exists, 10), proc.logs()
            with RawConn(proc.socket) as after:
                assert after.result("hello")["pid"] == proc.p.pid
            assert before.result("hello")["pid"] == proc.p.pid  # open ones carry on
        assert "socket_recreated" in proc.events()
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait() == EXIT_OK
        assert not proc.socket.exists()  # the new one is ours to remove
    finally:
        proc.kill()


def test_a_socket_file_deleted_while_running_comes_back_by_itself(md_home: Path) -> None:
    with DaemonThread(md_home) as d:
        d.socket_path.unlink()
        assert wait_for(d.socket_path.exists, 3 * SOCKET_CHECK_S)
        with RawConn(d.socket_path) as c:
            assert c.result("hello")["server"] == "memoryd"


def test_a_foreign_program_listening_on_the_socket_path_is_named_not_taken_for_memoryd(
    md_home: Path,
) -> None:
    """It was reported as 'memoryd is already running (pid of the other process)'."""
    path = md_home / "run" / "memoryd.sock"
    path.parent.mkdir(mode=0o700)
    foreign = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    foreign.bind(str(path))
    foreign.listen(8)  # listens, never answers
    try:
        proc = Proc(md_home)
        assert proc.wait(30) == EXIT_SOCKET
        errors = [e.get("error", "") for e in proc.logs() if e.get("event") == "socket_error"]
        assert errors and "another program" in errors[0], proc.logs()
        assert f"pid {os.getpid()}" in errors[0] and "not answer as memoryd" in errors[0]
        assert path.exists()  # not ours: left alone
    finally:
        foreign.close()


def test_a_sync_that_failed_on_a_full_disk_is_retried_and_the_change_found_after(
    md_home: Path,
) -> None:
    """After ENOSPC at run time the changes missed waited for a restart or a reindex.
    The index's disk is made 'full' with RLIMIT_FSIZE on the daemon (writes past it fail
    with EFBIG; Python ignores SIGXFSZ), then given room again."""
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nsmall\n")
    proc = Proc(md_home)
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=30) as c:
            c.result("workspace.add", {"path": str(ws)})
            assert wait_for(lambda: c.result("status")["workspaces"][0]["files"] == 1, 30)
            _soft, hard = resource.prlimit(proc.p.pid, resource.RLIMIT_FSIZE)
            resource.prlimit(proc.p.pid, resource.RLIMIT_FSIZE, (64 * 1024, hard))
            body = "".join(
                f"line {i} about the wombat census and its counters\n" for i in range(20_000)
            )
            (ws / "memory" / "big.md").write_text("# Big\n\n" + body)

            def failing() -> bool:
                status = c.result("status")["workspaces"][0]
                return any("retried in" in r for r in status["degraded"])

            assert wait_for(failing, 30), c.result("status")
            assert not c.result("search", {"query": "wombat", "mode": "keyword"})["results"]
            resource.prlimit(proc.p.pid, resource.RLIMIT_FSIZE, (hard, hard))
            assert wait_for(
                lambda: c.result("search", {"query": "wombat", "mode": "keyword"})["results"], 30
            )
            assert not failing()
    finally:
        proc.kill()


def test_a_first_scan_that_failed_on_a_full_disk_is_retried(md_home: Path) -> None:
    """The first scan's failure was dropped: its files waited for a restart or a reindex.
    Room for the index's creation (256 KiB), not for the notes; then room again."""
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nsmall\n")
    body = "".join(f"line {i} about the wombat census and its counters\n" for i in range(20_000))
    (ws / "memory" / "big.md").write_text("# Big\n\n" + body)
    proc = Proc(md_home)
    try:
        proc.ready()
        _soft, hard = resource.prlimit(proc.p.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(proc.p.pid, resource.RLIMIT_FSIZE, (256 * 1024, hard))
        with RawConn(proc.socket, timeout=30) as c:
            c.result("workspace.add", {"path": str(ws)})

            def failing() -> bool:
                status = c.result("status")["workspaces"][0]
                return any("first scan failed" in r for r in status["degraded"])

            assert wait_for(failing, 30), c.result("status")
            # The write's own error, not the savepoint rollback's that followed it.
            error = c.result("status")["workspaces"][0]["startup_scan"]["error"]
            assert "no transaction is active" not in error, error
            resource.prlimit(proc.p.pid, resource.RLIMIT_FSIZE, (hard, hard))
            assert wait_for(
                lambda: c.result("search", {"query": "wombat", "mode": "keyword"})["results"], 30
            )
            # The retry clears it when it ends, which may be after a write the watcher
            # queued has made the notes searchable.
            assert wait_for(lambda: not failing(), 30), c.result("status")
        assert "startup_scan_failed" in proc.events()
    finally:
        proc.kill()
