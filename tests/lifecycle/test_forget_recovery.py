"""A finished forget is never searchable again, across any crash: a daemon killed after the
files were replaced and before the index followed serves none of the lines at its restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon_util import DaemonThread, Proc
from memoryd.files.lines import line_key
from memoryd.lifecycle import journal
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(120)

BIG = "memory/2025-03-12.md"
TARGETS = [f"- the zebra code word number {i} is lantern" for i in range(20)]


def test_the_first_search_after_a_crash_mid_forget_finds_no_forgotten_line(
    md_home: Path,
) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    for i in range(300):  # a workspace the start-up scan takes a moment over
        (ws / "memory" / f"note-{i:04d}.md").write_text(f"- plain note {i} about tea\n" * 40)
    filler = [f"- filler line {i} about the garden" for i in range(8000)]
    before = "\n".join(TARGETS + filler) + "\n"
    (ws / BIG).write_text(before)
    config = {"workspaces": [{"path": str(ws), "name": "ws"}]}
    with DaemonThread(md_home, config) as d, MemoryClient(d.socket_path) as c:
        c.reindex(workspace="ws", wait=True)
        assert len(c.search("zebra lantern", workspace="ws", mode="keyword").results) > 0
    # What a forget killed right after replacing the file (before the index followed) left:
    # the file without the lines, its journal plan done.
    after = "\n".join(filler) + "\n"
    meta = {"forgotten": [[BIG, line_key(t)] for t in TARGETS], "at": 1.0}
    change = journal.Change(
        "forget",
        [journal.FileChange(BIG, before.encode(), after.encode())],
        meta,
        keep=False,
        reindex=True,  # as a forget's change is
    )
    journal.apply(ws, change)
    (md_home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\nname = "ws"\n')
    proc = Proc(md_home)
    try:
        proc.ready()
        with MemoryClient(proc.socket) as c:
            found = c.search("zebra lantern", workspace="ws", mode="keyword", max_results=50)
            assert [h.snippet for h in found.results if "zebra" in h.snippet] == []
    finally:
        proc.kill()
