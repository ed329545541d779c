"""Read-your-writes through the check's quiet path (index/file_events.py), on a real daemon:
searches that find nothing to sync arm the watches; a write made right before a search
(appended, replaced by a rename, a new log, written through a hard link) is then found by
that very search, as the stats found it before."""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

import pytest

from daemon_util import DaemonThread, wait_for
from memoryd.files.fsutil import atomic_write
from memoryd.index import file_events
from memoryd_client.client import MemoryClient

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or file_events.compiled is None,
    reason="inotify (Linux) through the compiled module",
)


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_a_write_right_before_a_search_is_found_after_quiet_searches(md_home: Path) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe deploy target is kubernetes.\n")
    today = ws / "memory" / f"{dt.date.today().isoformat()}.md"
    elsewhere = md_home / "elsewhere.md"  # MEMORY.md's second name, outside the workspace
    writes = [
        lambda i: append(ws / "MEMORY.md", f"- appended zeppelin{i}\n"),
        lambda i: atomic_write(ws / "MEMORY.md", f"# Memory\n\n- renamed zeppelin{i}\n".encode()),
        lambda i: append(today, f"- logged zeppelin{i}\n"),
        lambda i: (ws / "memory" / f"2020-01-{i % 28 + 1:02d}.md").write_text(f"zeppelin{i}\n"),
        lambda i: append(elsewhere, f"- linked zeppelin{i}\n"),
    ]
    with DaemonThread(md_home) as d, MemoryClient(d.socket_path) as c:
        c.workspace_add(ws)
        assert d.daemon is not None
        index = d.daemon.registry.resolve("ws").index
        assert index is not None
        fresh = index.freshness

        def quiet() -> bool:  # a search the watches answered (after one that set them)
            hits = fresh._quiet_hits
            c.search("kubernetes", mode="keyword")
            w = fresh._watched
            return fresh._quiet_hits > hits and w is not None and w.armed and w.gen == fresh._gen

        for i in range(len(writes) * 4):
            if not elsewhere.exists() or not os.path.samefile(elsewhere, ws / "MEMORY.md"):
                elsewhere.unlink(missing_ok=True)
                os.link(ws / "MEMORY.md", elsewhere)
            assert wait_for(quiet, 10, interval=0.001)  # (the watcher may still be syncing)
            writes[i % len(writes)](i)
            res = c.search(f"zeppelin{i}", mode="keyword")
            assert res.results, (i, res)
            assert not res.stale
