"""The daemon's socket server on a real socket: framing, dispatch, params, lifecycle."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import os
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from structlog.testing import capture_logs

import memoryd
from daemon_util import DaemonThread, RawConn, error_code, run_daemon, short_home, wait_for
from memoryd.app import Daemon
from memoryd.errors import InvalidParams
from memoryd.files.append import daily_path
from memoryd.rpc.connection import MAX_IN_FLIGHT_PER_CONNECTION
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd_client import protocol


def make_workspace(root: Path, files: int = 1) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Long term\n\nThe billing schema uses postgres.\n")
    for i in range(files - 1):
        (root / "memory" / f"2024-01-{i % 28 + 1:02d}-{i}.md").write_text(
            f"# Day {i}\n\nnote number {i} about topic{i % 7}\n"
        )
    return root


# -- hello, methods, params -------------------------------------------------------------


def test_hello_returns_server_version_protocol_and_pid(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as c:
        result = c.result("hello", {"client": "test", "protocol": 1})
    assert result == {
        "server": "memoryd",
        "version": memoryd.__version__,
        "protocol": protocol.PROTOCOL_VERSION,
        "pid": os.getpid(),
        "features": ["hit_rows"],
    }


def test_unknown_method_is_refused_and_connection_stays_usable(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as c:
        frame = c.call("no.such.method")
        assert error_code(frame) == "unknown_method"
        assert "no.such.method" in frame["error"]["message"]
        assert c.result("hello")["server"] == "memoryd"


@pytest.mark.parametrize(
    ("method", "params", "param", "words"),
    [
        ("search", {"query": "x", "max_results": "6"}, "max_results", "an integer 1..100"),
        ("search", {"query": "x", "max_results": 500}, "max_results", "1..100"),
        ("search", {"query": "x", "max_results": True}, "max_results", "an integer"),
        ("search", {"query": "x", "min_score": 1.5}, "min_score", "0.0..1.0"),
        ("search", {"query": "x", "mode": "fuzzy"}, "mode", "hybrid|vector|keyword"),
        ("search", {"query": "x", "sources": ["memory", "mail"]}, "sources", "memory|sessions"),
        ("search", {"query": "x", "sources": []}, "sources", "non-empty"),
        ("search", {"query": "x", "since": "2024-13-01"}, "since", "valid date"),
        ("search", {"query": "x", "since": "yesterday"}, "since", "YYYY-MM-DD"),
        ("search", {"query": "x", "since": "2024-02-01", "until": "2024-01-01"}, "since", "after"),
        ("search", {"query": ""}, "query", "must not be empty"),
        ("search", {}, "query", "required"),
        ("search", {"query": "x", "max_result": 3}, "max_result", "unknown param"),
        ("get", {"path": "MEMORY.md", "from": 0}, "from", ">= 1"),
        ("get", {"path": 7}, "path", "a string"),
        ("append", {"text": "x", "date": "2024-1-1"}, "date", "YYYY-MM-DD"),
        ("append", {"text": "x", "heading": "two\nlines"}, "heading", "single line"),
        ("append", {"text": "   "}, "text", "must not be empty"),
        ("reindex", {"full": "yes"}, "full", "true or false"),
        ("workspace.add", {}, "path", "required"),
        ("workspace.add", {"path": "relative/dir"}, "path", "absolute"),
        ("workspace.add", {"path": "/"}, "path", "the file system's root"),
        ("workspace.add", {"path": "/tmp/../"}, "path", "the file system's root"),
        ("workspace.add", {"path": "/tmp/\x00x"}, "path", "NUL"),
        ("status", {"workspace": "/tmp/\x00x"}, "workspace", "NUL"),
        ("workspace.remove", {"workspace": "w", "delete": True}, "delete", "unknown param"),
        ("hello", {"client": "x", "protocol": "1"}, "protocol", "an integer"),
        ("shutdown", {"now": True}, "now", "unknown param"),
    ],
)
def test_bad_params_are_invalid_params_naming_the_param(
    md_daemon: DaemonThread, method: str, params: dict[str, object], param: str, words: str
) -> None:
    with RawConn(md_daemon.socket_path) as c:
        frame = c.call(method, params)
        assert error_code(frame) == "invalid_params", frame
        assert param in frame["error"]["message"]
        assert words in frame["error"]["message"]
        assert frame["error"]["data"]["param"] == param
        assert c.result("hello")["server"] == "memoryd"  # still usable


def test_params_that_are_not_a_map_are_invalid_params(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as c:
        c.send({"v": 1, "id": 1, "method": "hello", "params": [1, 2]})
        frame = c.recv()
        assert error_code(frame) == "invalid_params"
        assert c.result("hello")["server"] == "memoryd"


def test_an_unexpected_failure_is_internal_and_the_daemon_keeps_serving(
    md_daemon: DaemonThread,
) -> None:
    async def broken(p: Params, req: Request) -> dict[str, Any]:
        p.done()
        raise RuntimeError("disk on fire " + "x" * 1000)

    assert md_daemon.daemon is not None
    md_daemon.daemon.methods.table["test.broken"] = broken  # the table is the extension point
    with RawConn(md_daemon.socket_path) as c, capture_logs() as logs:
        frame = c.call("test.broken")
        assert error_code(frame) == "internal"
        assert frame["error"]["message"].startswith(
            "internal error in test.broken: RuntimeError: disk on fire"
        )
        assert len(frame["error"]["message"]) < 400
        assert c.result("hello")["server"] == "memoryd"
    [logged] = [e for e in logs if e["event"] == "internal_error"]
    assert logged["method"] == "test.broken" and logged["exc_info"] is True


@pytest.mark.parametrize(
    "answer",
    [
        {"path": "memory/caf\udce9.md"},  # a file name that is not UTF-8, as os.fsdecode gives it
        {"when": object()},
    ],
    ids=["surrogate", "object"],
)
def test_an_answer_that_cannot_be_packed_is_internal_not_a_hang(
    md_daemon: DaemonThread, answer: dict[str, Any]
) -> None:
    async def unpackable(p: Params, req: Request) -> dict[str, Any]:
        p.done()
        return answer

    assert md_daemon.daemon is not None
    md_daemon.daemon.methods.table["test.unpackable"] = unpackable
    with RawConn(md_daemon.socket_path, timeout=10) as c, capture_logs() as logs:
        frame = c.call("test.unpackable")
        assert error_code(frame) == "internal"
        assert "could not be encoded" in frame["error"]["message"]
        assert c.result("hello")["server"] == "memoryd"
    assert [e["method"] for e in logs if e["event"] == "answer_not_packable"] == ["test.unpackable"]


def test_no_workspace_registered_is_unknown_workspace(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as c:
        frame = c.call("search", {"query": "anything"})
    assert error_code(frame) == "unknown_workspace"
    assert "workspace add" in frame["error"]["message"]


# -- framing ----------------------------------------------------------------------------


def test_pipelined_requests_are_all_answered_with_their_ids(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as c:
        methods = {i: ("hello" if i % 3 else "workspace.list") for i in range(1, 41)}
        c.send_raw(b"".join(protocol.pack(protocol.request(i, m)) for i, m in methods.items()))
        answers = {}
        for _ in methods:
            frame = c.recv()
            assert frame is not None and frame["ok"], frame
            answers[frame["id"]] = frame["result"]
    assert set(answers) == set(methods)
    for i, m in methods.items():
        assert ("server" in answers[i]) == (m == "hello")
        assert ("workspaces" in answers[i]) == (m == "workspace.list")


def test_a_client_pipelining_without_reading_is_held_back_not_buffered(md_home: Path) -> None:
    """500 requests for a 40 kB answer, none read: the daemon stops reading that socket
    once MAX_IN_FLIGHT_PER_CONNECTION are in flight, and serves other connections."""
    ws = make_workspace(md_home / "ws")
    (ws / "MEMORY.md").write_text("some words on a line\n" * 2000)
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        assert d.daemon is not None
        server = d.daemon.server
        c.result("workspace.add", {"path": str(ws)})
        c.send_raw(
            b"".join(
                protocol.pack(protocol.request(i, "get", {"path": "MEMORY.md"}))
                for i in range(1000, 1500)
            )
        )
        peak = 0
        for _ in range(100):  # 1 s: long enough for every request the daemon reads to start
            peak = max(peak, server.in_flight)
            time.sleep(0.01)
        assert 0 < peak <= MAX_IN_FLIGHT_PER_CONNECTION
        with RawConn(d.socket_path) as other:
            assert other.result("hello")["server"] == "memoryd"
        answered = 0
        while answered < 500:  # reading now: every request is answered after all
            frame = c.frame()
            if frame.get("id", 0) >= 1000 and "event" not in frame:
                assert frame["ok"], frame
                answered += 1


def test_oversize_frame_is_too_large_before_the_body_and_closes(md_home: Path) -> None:
    with (
        DaemonThread(md_home, config={"server": {"max_frame_bytes": 4096}}) as d,
        RawConn(d.socket_path) as c,
    ):
        c.send_raw(struct.pack(">I", 1 << 30))  # announce 1 GiB, send nothing
        frame = c.frame()
        assert error_code(frame) == "too_large"
        assert "4096" in frame["error"]["message"]
        assert c.closed_by_peer()


def test_response_above_the_frame_limit_is_too_large_not_a_broken_frame(md_home: Path) -> None:
    ws = make_workspace(md_home / "ws")
    (ws / "MEMORY.md").write_text("some words on a line\n" * 1000)
    with (
        DaemonThread(md_home, config={"server": {"max_frame_bytes": 4096}}) as d,
        RawConn(d.socket_path) as c,
    ):
        c.result("workspace.add", {"path": str(ws)})
        frame = c.call("get", {"path": "MEMORY.md"})
        assert error_code(frame) == "too_large"
        assert c.result("get", {"path": "MEMORY.md", "lines": 1})["total_lines"] == 1000


@pytest.mark.parametrize(
    "body",
    [
        b"\xc1",  # never-used msgpack byte
        msgpack.packb([1, 2, 3]),  # not a map
        msgpack.packb({"id": 1}),  # no method
        msgpack.packb({"id": "7", "method": "hello"}),  # id not an integer
        msgpack.packb({1: 2}),  # non-str key
        b"",  # empty body
    ],
)
def test_malformed_frame_is_protocol_error_and_close_while_others_carry_on(
    md_daemon: DaemonThread, body: bytes
) -> None:
    with RawConn(md_daemon.socket_path) as good, RawConn(md_daemon.socket_path) as bad:
        assert good.result("hello")["server"] == "memoryd"
        bad.send_raw(struct.pack(">I", len(body)) + body)
        frame = bad.recv()
        assert error_code(frame) == "protocol_error"
        assert bad.closed_by_peer()
        assert good.result("hello")["server"] == "memoryd"


def test_requests_before_a_bad_frame_are_answered_before_its_error(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as c:
        c.send_raw(
            protocol.pack(protocol.request(1, "hello"))
            + protocol.pack(protocol.request(2, "workspace.list"))
            + struct.pack(">I", 3)
            + b"\xc1\xc1\xc1"
        )  # 0xc1: never valid msgpack
        frames = [c.recv(), c.recv(), c.recv()]
        assert [f["id"] for f in frames if f is not None] == [1, 2, None]
        assert error_code(frames[2]) == "protocol_error"
        assert c.closed_by_peer()


def test_unsupported_protocol_version_names_the_supported_one(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as c:
        c.send({"v": 2, "id": 5, "method": "hello", "params": {}})
        frame = c.frame()
        assert error_code(frame) == "protocol_error"
        assert frame["id"] == 5
        assert frame["error"]["data"] == {"supported": [1]}


def test_half_closed_connection_still_gets_its_answers(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as c:
        c.send_raw(
            protocol.pack(protocol.request(1, "hello"))
            + protocol.pack(protocol.request(2, "workspace.list"))
        )
        c.sock.shutdown(socket.SHUT_WR)
        ids = {c.recv()["id"], c.recv()["id"]}  # type: ignore[index]
        assert ids == {1, 2}
        assert c.closed_by_peer()


@pytest.mark.parametrize("cut", ["header", "body", "large body"])
def test_a_frame_cut_short_by_the_end_of_stream_is_refused_after_the_answers_before_it(
    md_daemon: DaemonThread, cut: str
) -> None:
    hello = protocol.pack(protocol.request(1, "hello"))
    if cut == "header":
        tail, says = b"\x00\x00", "truncated frame header"
    elif cut == "body":
        tail, says = struct.pack(">I", 100) + b"\x80" * 10, "expected 100 bytes"
    else:  # above 64 KiB: reserved first, gathered as it comes
        tail, says = struct.pack(">I", 200_000) + b"\x00" * 150_000, "expected 200000 bytes"
    with RawConn(md_daemon.socket_path) as c:
        c.send_raw(hello + tail)
        c.sock.shutdown(socket.SHUT_WR)
        first, second = c.recv(), c.recv()
        assert first is not None and first["id"] == 1 and first["ok"]
        assert error_code(second) == "protocol_error"
        assert second is not None and says in second["error"]["message"]
        assert c.closed_by_peer()


def test_a_large_frame_sent_in_pieces_is_read_whole_and_the_frame_after_it_too(
    md_daemon: DaemonThread,
) -> None:
    big = protocol.pack(protocol.request(1, "workspace.list", {"pad": "x" * 100_000}))
    with RawConn(md_daemon.socket_path) as c:
        c.send_raw(big[:70_000])
        time.sleep(0.05)
        c.send_raw(big[70_000:] + protocol.pack(protocol.request(2, "hello")))
        frames = {f["id"]: f for f in (c.recv(), c.recv()) if f is not None}
        assert error_code(frames[1]) == "invalid_params"  # its params read: "pad" is unknown
        assert frames[2]["ok"]
        assert c.result("hello")["server"] == "memoryd"


def test_frames_of_several_connections_arriving_in_turns_are_each_read_whole(
    md_daemon: DaemonThread,
) -> None:
    # Every connection's reads land in one buffer (wire.py): what one connection has of a
    # frame must survive the others' reads in between, a large body's pieces too.
    conns = [RawConn(md_daemon.socket_path) for _ in range(3)]
    try:
        frames = [
            protocol.pack(protocol.request(7, "hello", {"client": f"c{i}", "protocol": 1}))
            + protocol.pack(protocol.request(8, "workspace.list", {"pad": "x" * 300_000}))
            for i in range(3)
        ]
        cuts = [0, 3, 17, 60, 70_000, 200_000, None]
        for start, end in itertools.pairwise(cuts):
            for c, frame in zip(conns, frames, strict=True):
                c.send_raw(frame[start:end])
            time.sleep(0.02)  # each piece read before the next connection's
        for i, c in enumerate(conns):
            got = {f["id"]: f for f in (c.frame(), c.frame())}
            assert got[7]["ok"] and got[7]["result"]["server"] == "memoryd", got[7]
            assert error_code(got[8]) == "invalid_params"  # read whole: "pad" is unknown
            assert c.result("hello", {"client": f"again{i}", "protocol": 1})["pid"] == os.getpid()
    finally:
        for c in conns:
            c.close()


# -- peer uid ---------------------------------------------------------------------------


def test_connection_from_another_uid_is_refused(md_daemon: DaemonThread) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to connect as another uid (os.setuid in a child)")
    sock_path = md_daemon.socket_path
    # Loosen the filesystem walls on purpose: the peer-uid check must hold on its own.
    for directory in (sock_path.parent.parent, sock_path.parent):
        os.chmod(directory, 0o711)
    os.chmod(sock_path, 0o666)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: become nobody, connect, report what the daemon said
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            with RawConn(sock_path, timeout=5) as c:
                frame = c.recv()  # the daemon speaks first: the refusal
                closed = c.recv() is None
            os.write(write_end, msgpack.packb({"frame": frame, "closed": closed}))
        except BaseException as exc:
            os.write(write_end, msgpack.packb({"exc": repr(exc)}))
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    report = msgpack.unpackb(data)
    assert "exc" not in report, report
    assert error_code(report["frame"]) == "protocol_error"
    assert "uid 65534" in report["frame"]["error"]["message"]
    assert report["closed"]
    with RawConn(sock_path) as c:  # our own uid is still served
        assert c.result("hello")["server"] == "memoryd"


def test_a_peer_whose_credentials_cannot_be_read_is_refused(
    md_daemon: DaemonThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail closed: the BSD/macOS path (getpeereid) failing refuses the connection. On
    Linux glibc has no getpeereid, so taking that path is a real failure to tell."""
    if not sys.platform.startswith("linux"):
        pytest.skip("forces the getpeereid path where it cannot work (Linux)")
    monkeypatch.setattr(sys, "platform", "darwin")
    with capture_logs() as logs, RawConn(md_daemon.socket_path) as c:
        frame = c.recv()
        assert c.closed_by_peer()
    monkeypatch.undo()
    assert error_code(frame) == "protocol_error"
    assert "cannot verify" in frame["error"]["message"]
    assert any(e["event"] == "peer_refused" for e in logs)
    with RawConn(md_daemon.socket_path) as c:
        assert c.result("hello")["server"] == "memoryd"


# -- lifecycle --------------------------------------------------------------------------


def test_shutdown_method_answers_then_daemon_exits_and_removes_its_socket(md_home: Path) -> None:
    with DaemonThread(md_home) as d:
        sock_path = d.socket_path
        with RawConn(sock_path) as c:
            assert c.result("shutdown") == {"ok": True}
            assert c.closed_by_peer()
        assert wait_for(lambda: not sock_path.exists(), timeout=10)


def _blocked_append(d: Daemon, ws: Path) -> tuple[threading.Lock, RawConn]:
    """An append held in flight: another writer (the test) holds that daily file's lock."""
    lock = d.file_locks.lock_for(daily_path(ws.resolve(), dt.date(2024, 5, 1)))
    lock.acquire()
    conn = RawConn(d.socket_path)
    conn.send(protocol.request(7, "append", {"text": "late note", "date": "2024-05-01"}))
    assert wait_for(lambda: d.server.in_flight == 1)
    return lock, conn


def test_requests_after_shutdown_began_get_shutting_down_while_in_flight_finish(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home / "ws")

    async def main() -> None:
        async with run_daemon(md_home) as d:
            with RawConn(d.socket_path) as c:
                await asyncio.to_thread(c.result, "workspace.add", {"path": str(ws)})
            other = RawConn(d.socket_path)
            await asyncio.to_thread(other.result, "hello")
            lock, slow = await asyncio.to_thread(_blocked_append, d, ws)
            d.request_exit()
            late = await asyncio.to_thread(other.call, "hello")
            assert error_code(late) == "shutting_down"
            lock.release()
            final = await asyncio.to_thread(slow.recv)
            assert final is not None and final["ok"] and final["id"] == 7, final
            assert "late note" in (ws / "memory" / "2024-05-01.md").read_text()
            slow.close()
            other.close()

    asyncio.run(main())


def test_forced_exit_cancels_in_flight_requests_with_shutting_down(md_home: Path) -> None:
    ws = make_workspace(md_home / "ws")

    async def main() -> None:
        async with run_daemon(md_home, config={"server": {"shutdown_timeout": 60}}) as d:
            with RawConn(d.socket_path) as c:
                await asyncio.to_thread(c.result, "workspace.add", {"path": str(ws)})
            lock, slow = await asyncio.to_thread(_blocked_append, d, ws)
            try:
                d.request_exit(force=True)
                frame = await asyncio.to_thread(slow.frame)
                assert error_code(frame) == "shutting_down" and frame["id"] == 7, frame
            finally:
                lock.release()
                slow.close()

    asyncio.run(main())


def test_state_survives_restart_registered_workspaces_come_back(md_home: Path) -> None:
    ws = make_workspace(md_home / "notes")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        added = c.result("workspace.add", {"path": str(ws)})
        assert added == {"name": "notes", "path": str(ws.resolve()), "added": True}
        again = c.result("workspace.add", {"path": str(ws) + "/"})
        assert again["added"] is False
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        listed = c.result("workspace.list")["workspaces"]
        assert listed == [{"name": "notes", "path": str(ws.resolve()), "source": "registry"}]
        removed = c.result("workspace.remove", {"workspace": "notes", "delete_index": True})
        assert removed["removed"] is True
        assert c.result("workspace.list")["workspaces"] == []
        assert not list((md_home / "data" / "index").glob("notes-*.sqlite"))


def test_workspace_names_are_unique_and_resolve_by_name_path_or_inner_path() -> None:
    with short_home() as home:
        a = make_workspace(home / "one" / "agent")
        b = make_workspace(home / "two" / "agent")
        with DaemonThread(home) as d, RawConn(d.socket_path) as c:
            assert c.result("workspace.add", {"path": str(a)})["name"] == "agent"
            assert c.result("workspace.add", {"path": str(b)})["name"] == "agent-2"
            taken = c.call("workspace.add", {"path": str(home), "name": "agent"})
            assert error_code(taken) == "invalid_params"
            several = c.call("search", {"query": "postgres"})
            assert error_code(several) == "invalid_params"
            assert "agent, agent-2" in several["error"]["message"]
            for ref in ("agent-2", str(b), str(b / "memory"), str(b) + "/memory/../"):
                got = c.result("get", {"path": "MEMORY.md", "workspace": ref, "lines": 1})
                assert got["text"] == "# Long term"
            status = c.result("status", {"workspace": str(b / "memory")})
            assert [w["name"] for w in status["workspaces"]] == ["agent-2"]
            missing = c.call("search", {"query": "x", "workspace": str(home / "elsewhere")})
            assert error_code(missing) == "unknown_workspace"


def test_config_declared_workspace_is_listed_and_cannot_be_removed_at_run_time(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home / "declared")
    config = {"workspaces": [{"path": str(ws), "name": "main"}]}
    with DaemonThread(md_home, config=config) as d, RawConn(d.socket_path) as c:
        assert c.result("workspace.list")["workspaces"] == [
            {"name": "main", "path": str(ws.resolve()), "source": "config"}
        ]
        frame = c.call("workspace.remove", {"workspace": "main"})
        assert error_code(frame) == "invalid_params"
        assert "config" in frame["error"]["message"]
        assert c.result("search", {"query": "postgres"})["results"]


def test_search_sources_in_the_config_is_what_a_search_without_sources_looks_in(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home / "ws")
    (ws / "sessions").mkdir()
    (ws / "sessions" / "s1.jsonl").write_text(
        '{"type": "session", "version": 1, "id": "s1", "timestamp": "2024-05-01T10:00:00Z"}\n'
        '{"type": "message", "message": {"role": "user", "content": "The kayak trip is on '
        'Sunday."}}\n',
        encoding="utf-8",
    )
    config = {
        "index": {"sessions": True},
        "search": {"sources": ["memory", "sessions"]},
        "workspaces": [{"path": str(ws), "name": "main"}],
    }
    with DaemonThread(md_home, config=config) as d, RawConn(d.socket_path) as c:
        c.result("reindex")
        found = c.result("search", {"query": "kayak"})["results"]
        assert [(r["path"], r["source"]) for r in found] == [("sessions/s1.jsonl", "sessions")]
        assert c.result("search", {"query": "kayak", "sources": ["memory"]})["results"] == []


def test_status_reports_daemon_provider_and_workspaces(md_home: Path) -> None:
    ws = make_workspace(md_home / "ws", files=3)
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        c.result("reindex")
        st = c.result("status")
    assert st["version"] == memoryd.__version__ and st["pid"] == os.getpid()
    assert st["socket"] == str(d.socket_path)
    assert st["provider"]["name"] == "none"
    assert "none" in st["provider"]["reason"]
    [w] = st["workspaces"]
    assert w["name"] == "ws" and w["files"] == 3 and w["chunks"] >= 3
    assert w["watcher"] == "watching"
    assert w["pending_files"] == 0 and w["startup_scan"]["running"] is False
    assert "sessions_left_out" not in w  # no transcripts: nothing to say


@pytest.mark.parametrize("indexed", [False, True])
def test_status_counts_the_transcripts_index_sessions_false_leaves_out(
    md_home: Path, indexed: bool
) -> None:
    ws = make_workspace(md_home / "ws")
    copies = ws / "sessions" / "openclaw" / "main"
    copies.mkdir(parents=True)
    for path in (ws / "sessions" / "a.jsonl", ws / "sessions" / "b.jsonl", copies / "c.jsonl"):
        path.write_text('{"type": "session", "id": "x"}\n', encoding="utf-8")
    (ws / "sessions" / "notes.txt").write_text("not a transcript\n", encoding="utf-8")
    config = {"index": {"sessions": indexed}, "workspaces": [{"path": str(ws), "name": "w"}]}
    with DaemonThread(md_home, config=config) as d, RawConn(d.socket_path) as c:
        [w] = c.result("status")["workspaces"]
    assert w.get("sessions_left_out") == (None if indexed else 3)


@pytest.mark.model
def test_workspace_added_while_the_model_loads_is_opened_once(md_home: Path) -> None:
    ws = make_workspace(md_home / "ws", files=5)

    def writer_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name.startswith("memoryd-writer")}

    before = writer_threads()

    async def main() -> None:
        async with run_daemon(
            md_home, env={"MEMORYD_EMBEDDING_PROVIDER": "local"}, wait_background=False
        ) as d:
            with capture_logs() as logs, RawConn(d.socket_path, timeout=60) as c:
                assert not d.background_ready.is_set()  # the model is still loading
                await asyncio.to_thread(c.result, "workspace.add", {"path": str(ws)})
                res = await asyncio.to_thread(c.result, "reindex", {"wait": True})
                assert res["vectors_pending"] == 0
                hits = await asyncio.to_thread(c.result, "search", {"query": "billing schema"})
                assert hits["mode_used"] == "hybrid" and hits["results"]
            writers = writer_threads() - before
            assert len(writers) == 1, writers  # one index (one writer thread) per workspace
            assert not [e for e in logs if e["event"] == "index_corrupt"], logs
            assert not list((md_home / "data" / "index").glob("*.corrupt"))

    asyncio.run(main())


@pytest.mark.model
def test_workspace_removed_while_the_model_loads_is_removed_at_once(md_home: Path) -> None:
    ws = make_workspace(md_home / "ws")

    async def main() -> None:
        with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
            c.result("workspace.add", {"path": str(ws)})  # registered for the next start
        async with run_daemon(
            md_home, env={"MEMORYD_EMBEDDING_PROVIDER": "local"}, wait_background=False
        ) as d:
            with RawConn(d.socket_path, timeout=60) as c:
                assert not d.background_ready.is_set()
                removed = await asyncio.wait_for(
                    asyncio.to_thread(c.result, "workspace.remove", {"workspace": "ws"}), 30
                )
                assert removed["removed"] is True
                await asyncio.wait_for(d.background_ready.wait(), 30)
                assert await asyncio.to_thread(c.result, "workspace.list") == {"workspaces": []}

    asyncio.run(main())


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value] if depth % 2 else {"k": value}
    return value


@pytest.mark.parametrize(
    ("method", "param"),
    [
        ("search", "query"),
        ("search", "sources"),
        ("get", "path"),
        ("append", "text"),
        ("hello", "client"),
        ("jobs.run", "name"),
        ("status", "workspace"),
        ("search", "bogus"),
    ],
)
@pytest.mark.parametrize("depth", [999, 1000])
def test_a_parameter_nested_a_thousand_deep_is_invalid_params_not_internal(
    md_daemon: DaemonThread, method: str, param: str, depth: int
) -> None:
    with RawConn(md_daemon.socket_path) as c:
        frame = c.call(method, {param: _nested(depth)})
        assert error_code(frame) == "invalid_params", frame
        assert frame["error"]["data"]["param"] == param
        shallow = c.call(method, {param: _nested(3)})  # quoted, briefly, as usual
        assert error_code(shallow) == "invalid_params", shallow
        assert len(shallow["error"]["message"]) < 200


def test_a_protocol_version_nested_a_thousand_deep_is_a_protocol_error(
    md_daemon: DaemonThread,
) -> None:
    with RawConn(md_daemon.socket_path) as c:
        c.send({"v": _nested(1000), "id": 1, "method": "hello"})
        assert error_code(c.frame()) == "protocol_error"
    with RawConn(md_daemon.socket_path) as c:
        assert c.result("hello")["server"] == "memoryd"


def test_a_handler_log_field_named_like_the_request_lines_own_is_kept_and_answered(
    md_daemon: DaemonThread,
) -> None:
    async def chatty(p: Params, req: Request) -> dict[str, Any]:
        p.done()
        req.log_fields.update(event="mine", method="other", workspace="w")
        raise InvalidParams("refused on purpose")

    assert md_daemon.daemon is not None
    md_daemon.daemon.methods.table["test.chatty"] = chatty
    with RawConn(md_daemon.socket_path) as c, capture_logs() as logs:
        frame = c.call("test.chatty")  # a refusal is logged at info: the line is built
        assert error_code(frame) == "invalid_params"
        assert c.result("hello")["server"] == "memoryd"
    [logged] = [e for e in logs if e["event"] == "request" and e["method"] == "test.chatty"]
    assert logged["event_"] == "mine" and logged["method_"] == "other"
    assert logged["workspace"] == "w"
