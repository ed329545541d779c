"""Which requests a client sends again after a dropped connection: docs/protocol.md's
``resend`` column is the rule, and the Python client's table must say the same (the
OpenClaw plugin's test reads the same column: integrations/openclaw/test/client.test.js)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from fakes.memoryd_server import Drop, FakeMemoryd, FakeRequest
from memoryd_client import AsyncMemoryClient, ConnectionLost, MemoryClient, protocol

PROTOCOL_DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
_ROW = re.compile(r"^\| `(?P<method>[a-z_.]+)` \|.*\| (?P<resend>yes|no) \|$")


def documented_resend() -> dict[str, bool]:
    """method -> safe to resend, from the methods table of docs/protocol.md."""
    text = PROTOCOL_DOC.read_text(encoding="utf-8")
    table = text.split("| method | params | result | resend |", 1)[1].split("\n\n", 1)[0]
    rows: dict[str, bool] = {}
    for line in table.splitlines()[2:]:
        m = _ROW.match(line)
        assert m is not None, f"a methods row without a yes/no resend cell: {line[:80]}"
        rows[m["method"]] = m["resend"] == "yes"
    return rows


def test_the_client_resends_exactly_the_methods_the_protocol_doc_marks_safe() -> None:
    documented = documented_resend()
    assert {"append", "forget", "import", "export", "flush", "search"} <= documented.keys()
    assert {m for m, safe in documented.items() if safe} == protocol.SAFE_TO_RESEND
    # What the doc marks `no` is what a write-side call would do twice.
    assert not any(protocol.safe_to_resend(m) for m in ("append", "forget", "import", "export"))
    assert not protocol.safe_to_resend("a.method.newer.than.this.client")


def _call(path: Path, method: str, asynchronous: bool) -> Any:
    if not asynchronous:
        with MemoryClient(path, autostart=False) as client:
            return client.call(method, {})

    async def main() -> Any:
        async with AsyncMemoryClient(path, autostart=False) as client:
            return await client.call(method, {})

    return asyncio.run(main())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("method", sorted(set(documented_resend()) - {"hello"}))
def test_a_dropped_request_is_sent_again_only_when_the_doc_says_it_is_safe(
    fake_memoryd: FakeMemoryd, method: str, asynchronous: bool
) -> None:
    @fake_memoryd.handle(method)
    async def drop_once(req: FakeRequest) -> Any:
        if req.connection == 1:
            raise Drop()
        return {}

    safe = documented_resend()[method]
    if safe:
        assert _call(fake_memoryd.path, method, asynchronous) == {}
    else:
        with pytest.raises(ConnectionLost, match="may or may not"):
            _call(fake_memoryd.path, method, asynchronous)
    assert len(fake_memoryd.calls(method)) == (2 if safe else 1)
