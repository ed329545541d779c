"""A search's answer has one home (workspace/search_service.py, ``SearchService.answer``):
search, recall and forget by query each make one request, checked once when it is made, and
get their hits through it."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from daemon_util import DaemonThread
from memoryd.index import types
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def daemon(md_home: Path) -> Iterator[DaemonThread]:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2025-03-10.md").write_text("# 2025-03-10\n\n- The walrus budget is 12k.\n")
    with DaemonThread(md_home, {"workspaces": [{"path": str(ws), "name": "ws"}]}) as d:
        with MemoryClient(d.socket_path) as c:
            c.reindex(workspace="ws")
        yield d


def _profile_loop(d: DaemonThread, fn: Any) -> None:
    """``fn`` as the profile function of the daemon's event loop thread (where its handlers
    run), set before this returns."""
    done = threading.Event()

    def install() -> None:
        sys.setprofile(fn)
        done.set()

    d.call_in_loop(install)
    assert done.wait(10)


def test_search_recall_and_forget_by_query_check_their_request_once(daemon: DaemonThread) -> None:
    checks: list[str] = []
    check = types._check.__code__

    def count(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is check:
            checks.append(frame.f_locals["req"].query)

    _profile_loop(daemon, count)
    try:
        with MemoryClient(daemon.socket_path) as c:
            assert c.search("walrus budget", workspace="ws").results
            assert checks == ["walrus budget"]
            assert c.recall("what is the walrus budget", workspace="ws", min_score=0).results
            assert checks[1:] == ["what is the walrus budget"]
            planned = c.forget(workspace="ws", query="walrus", dry_run=True)
            assert planned.removed and checks[2:] == ["walrus"]
    finally:
        _profile_loop(daemon, None)


def test_a_forgets_own_search_does_not_count_its_hits_as_used(daemon: DaemonThread) -> None:
    with MemoryClient(daemon.socket_path) as c:
        assert c.forget(workspace="ws", query="walrus", dry_run=True).removed
        assert daemon.daemon is not None and daemon.daemon.services.hits is not None
        assert daemon.daemon.services.hits.wait_idle()
        assert "line_hits" not in c.status(workspace="ws").workspaces[0].raw
        assert c.search("walrus", workspace="ws").results  # a search does count
        assert daemon.daemon.services.hits.wait_idle()
        counted = c.status(workspace="ws").workspaces[0].raw.get("line_hits")
        assert counted is not None and counted["lines"] == 1
