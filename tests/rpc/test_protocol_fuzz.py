"""Random and truncated bytes into the daemon's frame reader: an error or a clean close.

Every case must end with the daemon closing the connection (after at most error frames
or answers to whatever valid requests the bytes happened to contain), within a deadline:
never a crash, never a hang. The daemon answers ``hello`` afterwards.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon_util import DaemonThread, RawConn, short_home
from memoryd_client import protocol

LIMIT = 64 * 1024
DEADLINE_S = 5.0


@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonThread]:
    with (
        short_home() as home,
        DaemonThread(home, config={"server": {"max_frame_bytes": LIMIT}}) as d,
    ):
        yield d


def exchange(d: DaemonThread, data: bytes) -> list[dict[str, Any]]:
    """Send ``data``, half-close, and read frames until the daemon closes."""
    with RawConn(d.socket_path, timeout=DEADLINE_S) as c:
        try:
            c.send_raw(data)
            c.sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it already refused and closed: fine, read what it said
        frames: list[dict[str, Any]] = []
        while True:
            try:
                frame = c.recv()
            except TimeoutError:
                pytest.fail(f"daemon neither answered nor closed within {DEADLINE_S}s")
            if frame is None:
                return frames
            frames.append(frame)


def check_frames(frames: list[dict[str, Any]]) -> None:
    """Well-formed frames; a framing error, if any, is the single last frame."""
    for f in frames:
        assert f.get("ok") is True or f["error"]["code"] in protocol.ERROR_CODES, f
    framing = [
        i
        for i, f in enumerate(frames)
        if not f.get("ok", True) and f["error"]["code"] in ("protocol_error", "too_large")
    ]
    assert framing in ([], [len(frames) - 1]), frames


def still_serves(d: DaemonThread) -> None:
    with RawConn(d.socket_path) as c:
        assert c.result("hello")["server"] == "memoryd"


FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(data=st.binary(max_size=2048))
def test_random_bytes_end_in_an_error_or_a_clean_close(daemon: DaemonThread, data: bytes) -> None:
    check_frames(exchange(daemon, data))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


@FUZZ
@given(
    msg=st.dictionaries(
        st.sampled_from(["v", "id", "method", "params", "x"]), json_values, max_size=5
    ).filter(lambda m: m.get("method") != "shutdown")
)
def test_random_maps_are_answered_or_refused_never_crash(
    daemon: DaemonThread, msg: dict[str, Any]
) -> None:
    frames = exchange(daemon, protocol.pack(msg))
    assert len(frames) == 1  # an answer or a refusal, never silence
    check_frames(frames)


@FUZZ
@given(
    method=st.sampled_from(["hello", "workspace.list", "search", "status"]),
    params=st.dictionaries(st.text(max_size=12), json_values, max_size=4),
    cut=st.integers(min_value=0, max_value=10_000),
)
def test_truncated_frames_close_cleanly_or_say_protocol_error(
    daemon: DaemonThread, method: str, params: dict[str, Any], cut: int
) -> None:
    frame = protocol.pack(protocol.request(1, method, params))
    cut = cut % len(frame)  # strictly shorter than the frame
    frames = exchange(daemon, frame[:cut])
    assert len(frames) <= 1
    if frames:
        assert frames[0]["error"]["code"] == "protocol_error", frames


@FUZZ
@given(length=st.integers(min_value=LIMIT + 1, max_value=2**32 - 1), tail=st.binary(max_size=64))
def test_oversize_headers_are_too_large_whatever_follows(
    daemon: DaemonThread, length: int, tail: bytes
) -> None:
    frames = exchange(daemon, struct.pack(">I", length) + tail)
    assert [f["error"]["code"] for f in frames] == ["too_large"]


@FUZZ
@given(garbage=st.binary(min_size=1, max_size=256))
def test_valid_requests_before_garbage_are_answered_then_error(
    daemon: DaemonThread, garbage: bytes
) -> None:
    good = protocol.pack(protocol.request(1, "hello")) + protocol.pack(
        protocol.request(2, "workspace.list")
    )
    frames = exchange(daemon, good + garbage)
    assert {1, 2} <= {f["id"] for f in frames if f.get("ok")}
    check_frames([f for f in frames if f.get("id") not in (1, 2)])


def test_daemon_still_answers_hello_after_the_fuzzing(daemon: DaemonThread) -> None:
    for data in (
        b"\x00\x00\x00\x05\xc1\xc1\xc1\xc1\xc1",
        b"\xff\xff\xff\xff",
        b"\x00\x00",
        msgpack.packb({"id": 1, "method": 5}),
    ):
        exchange(daemon, struct.pack(">I", len(data)) + data)
    still_serves(daemon)
