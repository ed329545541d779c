"""Connection.send's ``written`` (rpc/connection.py): called once, in the step that writes
the frame, or before send waits (for an earlier frame, or for the peer to read), or when
nothing could be written. A quick request ends there (server.py: background threads step
aside until then), not on the event loop's next turn."""

from __future__ import annotations

import asyncio
from typing import Any

from memoryd.rpc.budget import ByteBudget
from memoryd.rpc.connection import Connection, Limits


class _Transport:
    def __init__(self, log: list[str], keeps: int = 0, closing: bool = False) -> None:
        self.log, self.keeps, self.closing = log, keeps, closing

    def write(self, frame: bytes) -> None:
        self.log.append(f"write {len(frame)}")

    def get_write_buffer_size(self) -> int:
        return self.keeps

    def is_closing(self) -> bool:
        return self.closing


class _Wire:
    def __init__(self, transport: Any, log: list[str]) -> None:
        self.transport = transport
        self.log = log

    def room(self) -> None:
        pass

    async def drain(self) -> None:
        self.log.append("drain")
        await asyncio.sleep(0)


def _sent(keeps: int = 0, closing: bool = False) -> list[str]:
    log: list[str] = []
    wire = _Wire(_Transport(log, keeps, closing), log)
    conn = Connection(wire, None, Limits(max_frame_bytes=1024), ByteBudget(1024))  # type: ignore[arg-type]
    asyncio.run(conn.send(b"answer", 0, lambda: log.append("written")))
    return log


def test_written_comes_right_after_the_frame_the_kernel_took() -> None:
    assert _sent() == ["write 6", "written"]


def test_written_comes_before_waiting_for_the_peer_to_read() -> None:
    assert _sent(keeps=6) == ["write 6", "written", "drain"]


def test_written_comes_once_when_the_connection_is_closing() -> None:
    assert _sent(closing=True) == ["written"]
