"""The daemon's frame reader (rpc/wire.py) on reads holding many frames: each is given to the
server once, in order, and a frame cut by the read's end waits for the next read."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from memoryd.rpc.wire import Wire
from memoryd_client import protocol


class _Server:
    max_frame_bytes = protocol.DEFAULT_MAX_FRAME_BYTES

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def on_frame(self, conn: Any, msg: dict[str, Any]) -> None:
        self.frames.append(msg)

    async def on_connection(self, wire: Wire) -> None:  # pragma: no cover (not connected)
        raise AssertionError("not used")


def _wire() -> tuple[Wire, _Server]:
    server = _Server()
    wire = Wire(server)
    wire.conn = SimpleNamespace(  # type: ignore[assignment]
        tasks=set(),
        max_in_flight=64,
        budget=SimpleNamespace(below_limit=lambda: True),
        closed=False,
        last_progress=0.0,
    )
    return wire, server


def test_thousands_of_tiny_frames_in_one_read_are_each_given_once_in_order() -> None:
    objs = [{"v": 1, "id": i, "method": "hello"} for i in range(5000)]
    stream = b"".join(protocol.pack(o) for o in objs)
    wire, server = _wire()
    wire.data_received(memoryview(stream)[:-3])  # the last frame's end in the next read
    assert server.frames == objs[:-1]
    wire.data_received(memoryview(stream)[-3:])
    assert server.frames == objs
    assert not wire.buffer and not wire.stopped
