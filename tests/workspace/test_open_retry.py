"""An index that could not be opened is opened again by itself, with back-off, once the
cause is gone (a folder unmounted at start-up, no descriptor left, a full disk): no restart.
``status`` says it failed and when it is tried again."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from daemon_util import DaemonThread, wait_for
from memoryd.workspace.names import index_file
from memoryd_client import MemoryClient, Unavailable

pytestmark = pytest.mark.timeout(90)


def test_a_workspace_whose_index_failed_to_open_comes_back_when_the_cause_is_gone(
    md_home: Path,
) -> None:
    ws = md_home / "mounted-later"  # not there at start-up (an unmounted disk)
    config = {"workspaces": [{"path": str(ws), "name": "later"}]}
    with DaemonThread(md_home, config) as d, MemoryClient(d.socket_path) as c:

        def entry() -> dict[str, object]:
            return c.status(workspace="later").workspaces[0].raw

        assert wait_for(lambda: "open_retry" in entry(), 20)
        failing = entry()
        retry = failing["open_retry"]
        assert isinstance(retry, dict) and retry["failures"] >= 1 and retry["retry_in_s"] >= 0
        assert "tried" in str(failing["degraded"])
        with pytest.raises(Unavailable):
            c.search("anything", workspace="later")
        (ws / "memory").mkdir(parents=True)  # the disk is mounted
        (ws / "MEMORY.md").write_text("# Memory\n\n- The pelican lives on the pier.\n")

        # Tried again by itself (1 s, 2 s, 4 s, ...): no restart, no request needed.
        def back() -> bool:  # opened, and watched
            now = entry()
            return "open_retry" not in now and now["watcher"] != "not watched"

        assert wait_for(back, 60), (entry()["degraded"], entry()["watcher"])
        c.reindex(workspace="later", wait=True)
        assert [h.path for h in c.search("pelican", workspace="later").results] == ["MEMORY.md"]


def test_a_workspace_added_while_its_index_cannot_be_made_comes_back_by_itself(
    md_home: Path,
) -> None:
    """``workspace add`` while the index file cannot be made (a full disk, no descriptor
    left; here a folder stands where the file goes): the workspace is registered, said to be
    retried, and opens by itself once the cause is gone."""
    ws = md_home / "notes"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The heron nests by the weir.\n")
    with DaemonThread(md_home, {}) as d, MemoryClient(d.socket_path) as c:
        assert d.daemon is not None
        blocker = index_file(d.daemon.paths.index_dir, "notes", ws.resolve())
        blocker.mkdir(parents=True)
        with contextlib.suppress(Unavailable):  # registered either way
            c.workspace_add(str(ws), name="notes")

        def entry() -> dict[str, object]:
            return c.status(workspace="notes").workspaces[0].raw

        assert wait_for(lambda: "open_retry" in entry(), 20)
        with pytest.raises(Unavailable):
            c.search("heron", workspace="notes")
        blocker.rmdir()  # space made

        def back() -> bool:
            now = entry()
            return "open_retry" not in now and now["watcher"] != "not watched"

        assert wait_for(back, 60), entry()["degraded"]
        c.reindex(workspace="notes", wait=True)
        assert [h.path for h in c.search("heron", workspace="notes").results] == ["MEMORY.md"]
