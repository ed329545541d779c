"""A quick request (rpc/server.py's QUICK_METHODS) ends FOREGROUND once for its begin on
every path the server answers by (04d8870 moved begin and end into Server._handle and
Connection.send's ``written``): background threads step aside only while one is in flight,
and automatic collection is held only then."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from daemon_util import DaemonThread, RawConn, error_code, wait_for
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.runtime.foreground import FOREGROUND


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ({"text": "fine"}, None),
        ({"path": "memory/caf\udce9.md"}, "internal"),  # msgpack refuses it
        ({"text": "x" * (64 << 20)}, "too_large"),  # past the frame limit
        (RuntimeError("broken"), "internal"),  # the handler raised
    ],
    ids=["ok", "unpackable", "too_large", "raised"],
)
def test_a_quick_request_ends_what_it_began(
    md_daemon: DaemonThread, answer: dict[str, Any] | Exception, code: str | None
) -> None:
    async def get(p: Params, req: Request) -> dict[str, Any]:
        p.done()
        assert FOREGROUND.busy  # begun: background threads step aside meanwhile
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert md_daemon.daemon is not None
    md_daemon.daemon.methods.table["get"] = get
    with RawConn(md_daemon.socket_path, timeout=30) as c:
        for _ in range(3):
            frame = c.call("get")
            if code is None:
                assert frame["result"] == {"text": "fine"}
            else:
                assert error_code(frame) == code
        # ended right after the write, on the daemon's thread: the answer may come first
        assert wait_for(lambda: not FOREGROUND.busy, 10, 0.01)
        assert c.result("hello")["server"] == "memoryd"
    assert wait_for(lambda: not FOREGROUND.busy, 10, 0.01)
    assert FOREGROUND._busy == 0
    assert gc.isenabled()
