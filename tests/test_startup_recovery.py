"""What a daemon finds after a kill or a tamperer: stale temp files, a deleted socket, a
foreign listener on its path."""

from __future__ import annotations

from pathlib import Path

from daemon_util import DaemonThread, RawConn


def test_temp_files_of_a_killed_memory_rewrite_are_removed_when_the_workspace_opens(
        md_home: Path) -> None:
    ws = md_home / "ws"
    (ws / "memory" / ".history").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n")
    stale = [ws / ".MEMORY.md.k2_9xq0a.tmp", ws / "memory" / ".history" /
             ".MEMORY.20250312T093000.md.ab12cd34.tmp"]
    kept = [ws / ".MEMORY.md.bak", ws / ".MEMORY.md.mine.tmp", ws / "memory" / "x.tmp",
            ws / ".notes.md.k2_9xq0a.tmp"]
    for p in stale + kept:
        p.write_text("partial")
    with DaemonThread(md_home, config={"workspaces": [{"path": str(ws)}]}) as d, \
            RawConn(d.socket_path) as c:
        assert c.result("status")["workspaces"][0]["name"] == "ws"
    assert [p.name for p in stale if p.exists()] == []
    assert [p.name for p in kept if not p.exists()] == []
