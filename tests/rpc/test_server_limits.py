"""The server's bounds: back-pressure on memory, the connection cap, idle connections, fds.

Memory is measured as the daemon's RSS (a real ``memoryd run`` subprocess): what the tests
pin is how much a client that does not read, or never finishes its frames, can make the
daemon hold. RSS is not a timing; the margins are several times the noise.
"""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import (
    DaemonThread,
    Proc,
    RawConn,
    error_code,
    short_home,
    wait_for,
)
from fakes.openai_server import FakeOpenAIServer
from jobs_util import llm_config
from memoryd_client import MemoryClient, protocol

MiB = 1024 * 1024


@pytest.fixture
def home() -> Iterator[Path]:
    with short_home() as h:
        yield h


def write_config(home: Path, server: str) -> None:
    (home / "config.toml").write_text(f"[server]\n{server}\n")


def workspace_with_big_memory(root: Path, mib: int) -> Path:
    (root / "memory").mkdir(parents=True)
    line = "a line of a long memory file that an agent asks for whole\n"
    (root / "MEMORY.md").write_text(line * (mib * MiB // len(line)))
    return root


def hang_up_and_see_memory_back(proc: Proc, socks: list[socket.socket], before: int) -> None:
    """The clients hang up: the daemon serves as before and gives their memory back."""
    for s in socks:
        s.close()
    socks.clear()
    with RawConn(proc.socket) as c:
        assert c.result("hello")["server"] == "memoryd"
    assert wait_for(lambda: proc.rss_bytes() - before < 30 * MiB, 10), (
        f"{(proc.rss_bytes() - before) // MiB} MiB kept after close"
    )


def _indexed(c: RawConn) -> bool:
    ws = c.result("status")["workspaces"][0]
    return bool(ws["last_sync"]) and ws["pending_files"] == 0 and ws["keyword_scan"] == "memory"


def test_pipelined_gets_of_a_big_file_not_read_hold_one_answer_not_sixty_four(home: Path) -> None:
    """64 pipelined gets of a 15 MiB file, none read, took the daemon to 2.1 GB."""
    write_config(home, "connection_buffer_mb = 8")
    ws = workspace_with_big_memory(home / "ws", 4)
    proc = Proc(home)
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=60) as c:
            c.result("workspace.add", {"path": str(ws)})
            # The first scan and the in-memory copies' load grow the daemon on their own:
            # measure from an index that is done, so only the gets' answers are counted.
            assert wait_for(lambda: _indexed(c), 60, interval=0.1)
            c.result("get", {"path": "MEMORY.md", "lines": 1})
            before = proc.settled_rss_bytes()
            c.send_raw(
                b"".join(
                    protocol.pack(protocol.request(100 + i, "get", {"path": "MEMORY.md"}))
                    for i in range(64)
                )
            )
            peak = before
            for _ in range(30):  # 3 s: long enough to read 64 x 4 MiB several times over
                peak = max(peak, proc.rss_bytes())
                time.sleep(0.1)
            assert peak - before < 80 * MiB, f"grew {(peak - before) // MiB} MiB"
            answered = 0
            while answered < 64:  # reading now: every get is answered in full
                frame = c.frame()
                assert frame["ok"], frame
                assert frame["result"]["total_lines"] > 60_000
                answered += 1
    finally:
        proc.kill()


def test_unfinished_huge_frames_hold_the_total_budget_at_most_and_nothing_after_close(
    home: Path,
) -> None:
    """40 incomplete 16 MiB frames took the daemon from 65 to 721 MB, kept after close."""
    write_config(home, "max_frame_bytes = 4194304\ntotal_buffer_mb = 8")
    proc = Proc(home)
    socks: list[socket.socket] = []
    try:
        proc.ready()
        before = proc.settled_rss_bytes()
        body = b"\x00" * (3 * MiB)
        sent = []
        for _ in range(30):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(proc.socket))
            s.sendall(struct.pack(">I", 4 * MiB))
            s.setblocking(False)
            socks.append(s)
            sent.append(0)
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:  # push what each socket takes, 3 MiB at most
            for i, s in enumerate(socks):
                if sent[i] < len(body):
                    with contextlib.suppress(BlockingIOError):
                        sent[i] += s.send(body[sent[i] : sent[i] + 256 * 1024])
            time.sleep(0.01)
        held = proc.rss_bytes() - before
        assert held < 40 * MiB, f"held {held // MiB} MiB for {sum(sent) // MiB} MiB sent"
        hang_up_and_see_memory_back(proc, socks, before)
    finally:
        for s in socks:
            s.close()
        proc.kill()


def test_at_the_connection_cap_the_longest_idle_connection_makes_room_for_a_new_one(
    home: Path,
) -> None:
    """The cap reached by idle connections (the idle timeout far away): a new client is
    served at once and the connection idle longest is closed; its client reconnects."""
    with DaemonThread(home, config={"server": {"max_connections": 3}}) as d:
        conns = [RawConn(d.socket_path) for _ in range(3)]
        try:
            for c in conns:
                assert c.result("hello")["server"] == "memoryd"
            time.sleep(0.05)
            assert conns[1].result("hello") and conns[2].result("hello")  # conns[0] idles
            with RawConn(d.socket_path) as extra:
                assert extra.result("hello")["server"] == "memoryd"
                assert conns[0].closed_by_peer()
                assert conns[1].result("hello") and conns[2].result("hello")
            with MemoryClient(d.socket_path) as client:  # a client library reconnects
                assert client.call("hello")["server"] == "memoryd"
            status = conns[1].result("status")["server"]
            assert status["refused_connections"] == 0 and status["idle_closed"] >= 1
        finally:
            for c in conns:
                c.close()


def test_at_the_cap_with_every_connection_busy_a_client_is_told_so(
    home: Path, openai_server: FakeOpenAIServer
) -> None:
    """Only connections with a request in flight are never closed to make room."""
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    openai_server.respond_chat("- a note", delay=3.0)
    config = {
        "server": {"max_connections": 2},
        "workspaces": [{"path": str(ws), "name": "w"}],
        "llm": llm_config(openai_server.base_url),
    }
    t = ws / "sessions" / "t.jsonl"
    t.parent.mkdir()
    t.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
    flush = {"transcript": str(t), "session_id": "s", "wait": True}
    with DaemonThread(home, config) as d:
        busy = [RawConn(d.socket_path, timeout=30) for _ in range(2)]
        try:
            for c in busy:  # one waits for the LLM, the other for its turn
                c.send({"v": 1, "id": 1, "method": "flush", "params": flush})
            assert wait_for(lambda: len(openai_server.requests_to("chat")) >= 1, 10)
            with RawConn(d.socket_path) as extra:
                frame = extra.frame()
                assert error_code(frame) == "unavailable"
                assert "max_connections" in frame["error"]["message"]
                assert extra.closed_by_peer()
        finally:
            for c in busy:
                c.close()


def test_an_idle_connection_is_closed_and_the_client_reconnects_by_itself(home: Path) -> None:
    with DaemonThread(home, config={"server": {"idle_timeout": 0.3}}) as d:
        with RawConn(d.socket_path) as raw:
            assert raw.result("hello")["server"] == "memoryd"
            assert raw.closed_by_peer()  # within the socket's 10 s timeout
        with MemoryClient(d.socket_path) as client:
            client.call("hello")
            assert d.daemon is not None
            assert wait_for(lambda: d.daemon.server.idle_closed >= 2)  # type: ignore[union-attr]
            # hello() is idempotent: the count rises a loop turn before the socket closes,
            # so the call may go out on the closing connection and is then sent again (a raw
            # call("hello") is never resent and would fail in that window).
            assert client.hello().server == "memoryd"


def test_a_peer_that_stops_reading_is_closed_after_the_idle_timeout_and_frees_its_budget(
    home: Path,
) -> None:
    ws = workspace_with_big_memory(home / "ws", 2)
    with DaemonThread(
        home, config={"server": {"idle_timeout": 0.5, "connection_buffer_mb": 4}}
    ) as d:
        assert d.daemon is not None
        server = d.daemon.server
        with RawConn(d.socket_path) as c:
            c.result("workspace.add", {"path": str(ws)})
            c.send_raw(
                b"".join(
                    protocol.pack(protocol.request(10 + i, "get", {"path": "MEMORY.md"}))
                    for i in range(20)
                )
            )
            assert wait_for(lambda: server.held_bytes > MiB)
            assert wait_for(lambda: server.connections == 0, 10)
            assert wait_for(lambda: server.held_bytes == 0 and server.in_flight == 0, 5)
        with RawConn(d.socket_path) as other:
            assert other.result("get", {"path": "MEMORY.md", "lines": 2})["lines"] == 2


def _limit_fds(soft: int, hard: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_soft_open_file_limit_is_raised_to_the_hard_limit_at_start(home: Path) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 2048:
        pytest.skip(f"the hard limit here is {hard}")
    proc = Proc(home, preexec_fn=lambda: _limit_fds(1024, hard))
    try:
        proc.ready()
        limits = Path(f"/proc/{proc.p.pid}/limits").read_text().splitlines()
        line = next(x for x in limits if x.startswith("Max open files"))
        assert line.split()[3:5] == [str(hard), str(hard)], line
        with RawConn(proc.socket) as c:
            assert c.result("status")["server"]["open_file_limit"] == hard
    finally:
        proc.kill()


def test_idle_connections_past_the_fd_limit_make_room_and_sqlite_still_opens(
    home: Path,
) -> None:
    """1,108 idle connections against a 1,024 limit broke new clients, made SQLite fail
    with CantOpenError and wrote 74,033 log lines in 20 s. Now each new client is served:
    the connection idle longest is closed for it, and the cap keeps fds for SQLite."""
    proc = Proc(home, preexec_fn=lambda: _limit_fds(320, 320))
    conns: list[RawConn] = []
    try:
        proc.ready()
        for _ in range(120):
            c = RawConn(proc.socket)
            conns.append(c)
            assert c.result("hello")["server"] == "memoryd"
        assert all(c.closed_by_peer() for c in conns[:56])  # 320 fds leave 64 connections
        ws = home / "ws"
        (ws / "memory").mkdir(parents=True)
        (ws / "MEMORY.md").write_text("# Memory\n\nthe quokka is the mascot\n")
        last = conns[-1]
        assert last.result("workspace.add", {"path": str(ws)})["added"]
        assert wait_for(lambda: last.result("search", {"query": "quokka"})["results"], 10)
        assert all(c.result("hello") for c in conns[-63:])
        events = proc.events()
        assert "connection_refused" not in events
        assert events.count("connection_closed_idle") <= 6  # then counted, not written
        assert "asyncio_error" not in events
    finally:
        for c in conns:
            c.close()
        proc.kill()


def test_unfinished_frames_read_in_full_budget_are_given_back_when_their_peers_hang_up(
    home: Path,
) -> None:
    """With room in the budget, what unfinished frames had sent stayed in the daemon after
    their peers hung up (a copy in each IncompleteReadError, kept in reference cycles until
    a full collection): 40 unfinished 16 MiB frames, 152 -> 251 MB after close."""
    write_config(home, "max_frame_bytes = 16777216\ntotal_buffer_mb = 256")
    proc = Proc(home)
    socks: list[socket.socket] = []
    try:
        proc.ready()
        before = proc.settled_rss_bytes()
        body = b"\x00" * (6 * MiB)
        for _ in range(12):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(proc.socket))
            s.sendall(struct.pack(">I", 8 * MiB) + body)  # the daemon reads it all: in budget
            socks.append(s)
        with RawConn(proc.socket) as c:  # everything sent has been read by now
            assert c.result("hello")["server"] == "memoryd"
        hang_up_and_see_memory_back(proc, socks, before)
    finally:
        for s in socks:
            s.close()
        proc.kill()
