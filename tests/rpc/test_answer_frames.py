"""The frames a daemon answers with, read as bytes off a real socket: each is exactly what
msgpack's Packer (use_bin_type) makes of the message it carries, with the compiled packer
(index/_compiled_pack.c, rpc/server.py's _pack) and without it (a build without a
compiler): searches as rows and as maps (non-ASCII text, a masked secret), hello, status,
get, and an error."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import msgpack
import pytest

from daemon_util import DaemonThread, RawConn
from memoryd.rpc import server
from memoryd_client import protocol

PACKER = msgpack.Packer(use_bin_type=True)


def _frame(conn: RawConn, req_id: int) -> bytes:
    """The raw bytes of the next frame answering ``req_id`` (events skipped)."""
    while True:
        while len(conn._buf) < 4:
            conn._buf += conn.sock.recv(1 << 16)
        (n,) = struct.unpack(">I", conn._buf[:4])
        while len(conn._buf) < 4 + n:
            conn._buf += conn.sock.recv(1 << 16)
        frame, conn._buf = conn._buf[: 4 + n], conn._buf[4 + n :]
        msg = protocol.unpack(frame[4:])
        if msg.get("id") == req_id and "event" not in msg:
            return frame


def _asked(conn: RawConn, req_id: int, method: str, params: dict[str, Any]) -> bytes:
    conn.send(protocol.request(req_id, method, params))
    return _frame(conn, req_id)


@pytest.mark.parametrize("compiled", [True, False])
def test_every_answer_frame_is_the_bytes_msgpack_packs(
    md_home: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not compiled:  # the msgpack path (a build without a compiler)
        monkeypatch.setattr(server, "pack_frame", None)
    elif server.pack_frame is None:
        pytest.skip("the compiled part is not built")
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(
        "# Long term\n\nCafé billing uses postgres 🐘 (naïve schema, ünïcode).\n"
        "- the billing postgres password is Tr0ub4dor&3xyzzy now\n" + "filler line\n" * 40
    )
    (ws / "memory" / "2024-01-02.md").write_text("## Billing\n\npostgres migration planned\n")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        c.result("reindex")
        ask = {"query": "billing postgres café", "min_score": 0}
        frames = [
            _asked(c, 101, "search", {**ask, "hit_rows": True}),
            _asked(c, 102, "search", ask),
            _asked(c, 103, "hello", {"client": "t", "protocol": 1}),
            _asked(c, 104, "status", {}),
            _asked(c, 105, "get", {"path": "MEMORY.md"}),
            _asked(c, 106, "search", {"query": ""}),  # invalid_params
        ]
    answers = [protocol.unpack(f[4:]) for f in frames]
    for frame, answer in zip(frames, answers, strict=True):
        body = PACKER.pack(answer)
        assert frame == struct.pack(">I", len(body)) + body
    rows, maps = answers[0]["result"], answers[1]["result"]
    assert protocol.hit_maps(rows["results"]) == maps["results"]
    assert any("Café" in h["snippet"] for h in maps["results"])
    assert not any("Tr0ub4dor" in f.decode("utf-8", "replace") for f in frames)
    assert answers[5]["error"]["code"] == "invalid_params"
