"""``status`` reads what blocks (the index's counts, the state's job runs and hits, the
workspace's folders) in one hop off the event loop, not on the readers that searches queue
on: a status is answered while they are busy, with the same fields (rpc/status.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from daemon_util import DaemonThread, RawConn, wait_for


def test_status_is_answered_while_the_reader_thread_is_taken(md_home: Path) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe deploy target is nomad.\n")
    with DaemonThread(md_home) as d, RawConn(d.socket_path, timeout=60) as c:
        c.result("workspace.add", {"path": str(ws)})
        assert wait_for(lambda: c.result("status")["workspaces"][0]["files"] == 1, 30)
        assert d.daemon is not None
        gate = threading.Event()
        d.daemon.readers.submit(gate.wait, 60)  # the one reader thread is taken
        try:
            st = c.result("status")["workspaces"][0]
            assert not gate.is_set()  # answered while the reader waited
        finally:
            gate.set()
    assert st["files"] == 1 and st["chunks"] == 1 and st["pending_files"] == 0
    assert st["startup_scan"]["running"] is False
    assert [j["name"] for j in st["jobs"]] and all("last_run" in j for j in st["jobs"])
    assert "line_hits" not in st and "forget_kept" not in st  # absent when nothing to say
