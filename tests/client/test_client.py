"""MemoryClient and AsyncMemoryClient against a scripted daemon on a real Unix socket.

The fake (tests/fakes/memoryd_server.py) speaks the real frame protocol, so these tests pin
the client's side of it: hello first, params as the daemon reads them, typed results,
pipelining with out-of-order answers, progress routing, reconnect-once rules, timeouts.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import socket
import stat
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from fakes.memoryd_server import Drop, Fail, FakeMemoryd, FakeRequest, stale_socket_file
from memoryd_client import (
    AsyncMemoryClient,
    ClientTimeout,
    ConnectionLost,
    DaemonNotRunning,
    ErrorCode,
    FrameTooLarge,
    InvalidParams,
    MemoryClient,
    Progress,
    ProtocolMismatch,
    RemoteError,
    SearchHit,
    SocketUnusable,
    StaleSocket,
    UnknownWorkspace,
    _autostart,
)
from memoryd_client.errors import AutostartFailed, BadResponse
from memoryd_client.trust_types import LineOrigin
from memoryd_client.types import SearchResult, Status, WorkspaceStatus

pytestmark = pytest.mark.timeout(30)


def client_for(fake: FakeMemoryd, **kwargs: Any) -> MemoryClient:
    return MemoryClient(fake.path, **kwargs)


# ---------------------------------------------------------------- connecting


def test_first_call_says_hello_with_client_name_and_protocol(fake_memoryd: FakeMemoryd) -> None:
    with client_for(fake_memoryd, client_name="agent-7") as client:
        client.status()
        assert client.server is not None and client.server.protocol == 1
    hello, status = fake_memoryd.requests
    assert (hello.method, status.method) == ("hello", "status")
    assert hello.params == {"client": "agent-7", "protocol": 1}


def test_calls_reuse_one_connection(fake_memoryd: FakeMemoryd) -> None:
    with client_for(fake_memoryd) as client:
        for _ in range(5):
            client.status()
    assert fake_memoryd.connections == 1
    assert fake_memoryd.methods().count("hello") == 1


def test_missing_socket_is_daemon_not_running(short_tmp: Path) -> None:
    with pytest.raises(DaemonNotRunning) as info:
        MemoryClient(short_tmp / "nope.sock").status()
    assert not isinstance(info.value, StaleSocket)
    assert "not running" in str(info.value) and "memoryd run" in str(info.value)


def test_socket_nobody_listens_on_is_stale_socket(short_tmp: Path) -> None:
    path = stale_socket_file(short_tmp / "stale.sock")
    with pytest.raises(StaleSocket) as info:
        MemoryClient(path).status()
    assert isinstance(info.value, DaemonNotRunning)  # exit code 3 in memctl, too
    assert "stale" in str(info.value)


def test_a_file_that_is_not_a_socket_is_named_as_such(short_tmp: Path) -> None:
    path = short_tmp / "plain.sock"
    path.write_text("")
    with pytest.raises(SocketUnusable, match="is not a socket"):
        MemoryClient(path).status()


def test_a_daemon_that_accepts_but_never_answers_is_a_timeout(short_tmp: Path) -> None:
    path = short_tmp / "hung.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen(1)  # connections queue in the backlog; nothing ever answers
        with pytest.raises(ClientTimeout, match=r"did not answer hello within 0\.3s"):
            MemoryClient(path, timeout=0.3).status()


def test_socket_path_too_long_is_refused_before_connecting(short_tmp: Path) -> None:
    with pytest.raises(SocketUnusable, match="MEMORYD_SOCKET"):
        MemoryClient(short_tmp / ("x" * 200)).status()


def test_newer_protocol_is_refused_with_both_versions_named(short_tmp: Path) -> None:
    with (
        FakeMemoryd(short_tmp / "d.sock", protocol_version=2) as fake,
        pytest.raises(ProtocolMismatch) as info,
    ):
        MemoryClient(fake.path).status()
    message = str(info.value)
    assert "protocol 2" in message and "protocol 1" in message
    assert fake.methods() == ["hello"]  # nothing else is sent to an incompatible daemon


def test_hello_refused_for_our_version_is_a_protocol_mismatch(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("hello")
    async def hello(req: FakeRequest) -> Any:
        raise Fail(ErrorCode.PROTOCOL_ERROR, "unsupported protocol", {"supported": [2]})

    with pytest.raises(ProtocolMismatch, match=r"\[2\]"):
        MemoryClient(fake_memoryd.path).status()


def test_socket_path_comes_from_memoryd_socket_env(
    fake_memoryd: FakeMemoryd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_SOCKET", str(fake_memoryd.path))
    with MemoryClient() as client:
        assert client.socket_path == fake_memoryd.path
        assert client.status().version == "0.0-fake"


# ---------------------------------------------------------------- params and results


def test_search_sends_only_given_params_and_returns_typed_hits(
    fake_memoryd: FakeMemoryd,
) -> None:
    with client_for(fake_memoryd) as client:
        client.search("schema decision")
        result = client.search(
            "schema",
            workspace="ws",
            max_results=3,
            min_score=0.2,
            sources="sessions",
            mode="keyword",
            fusion="rrf",
            path_prefix="memory/",
            since=dt.date(2025, 1, 1),
            until="2025-02-01",
        )
    plain, full = fake_memoryd.calls("search")
    assert plain.params == {"query": "schema decision"}
    assert full.params == {
        "query": "schema",
        "workspace": "ws",
        "max_results": 3,
        "min_score": 0.2,
        "sources": ["sessions"],
        "mode": "keyword",
        "fusion": "rrf",
        "path_prefix": "memory/",
        "since": "2025-01-01",
        "until": "2025-02-01",
    }
    assert isinstance(result, SearchResult)
    hit = result.results[0]
    assert hit == SearchHit(
        path="memory/2025-01-02.md",
        start_line=3,
        end_line=9,
        score=0.8125,
        snippet="- [D1:3] line one\nline two",
        source="memory",
        snippet_start_line=3,
        snippet_end_line=4,
        text_score=0.8125,
    )
    assert result.degraded == ["vectors off: no embedding provider"]
    assert result.raw["mode_used"] == "keyword"


def test_get_append_reindex_workspace_params_match_the_protocol(
    fake_memoryd: FakeMemoryd,
) -> None:
    with client_for(fake_memoryd) as client:
        got = client.get("MEMORY.md", workspace="/w/ws", from_line=5, lines=2)
        appended = client.append("note", date=dt.date(2025, 1, 2), heading="Decisions")
        client.reindex(full=True, wait=True)
        client.reindex()
        added = client.workspace_add(Path("/w/ws"), name="ws")
        client.workspace_remove("ws", delete_index=True)
        listed = client.workspace_list()
        client.shutdown()
    by_method: dict[str, list[dict[str, Any]]] = {}
    for req in fake_memoryd.requests:
        by_method.setdefault(req.method, []).append(req.params)
    assert by_method["get"] == [{"path": "MEMORY.md", "workspace": "/w/ws", "from": 5, "lines": 2}]
    assert by_method["append"] == [
        {"text": "note", "date": "2025-01-02", "heading": "Decisions", "origin": "agent"}
    ]
    assert by_method["reindex"] == [{"full": True, "wait": True}, {}]
    assert by_method["workspace.add"] == [{"path": "/w/ws", "name": "ws"}]
    assert by_method["workspace.remove"] == [{"workspace": "ws", "delete_index": True}]
    assert by_method["shutdown"] == [{}]
    assert got.from_line == 1 and got.text.startswith("# Memory")
    assert (appended.start_line, appended.end_line) == (10, 11)
    assert added.changed and added.name == "ws"
    assert [w.name for w in listed] == ["ws"]


def test_results_ignore_unknown_keys() -> None:
    status = Status.from_wire(
        {
            "version": "9",
            "pid": 1,
            "uptime_s": 1,
            "future": {"x": 1},
            "provider": {"name": "local", "model": "m", "dims": 384, "new": True},
            "workspaces": [{"name": "a", "path": "/a", "brand_new": [1, 2]}],
        }
    )
    assert status.provider.dims == 384
    assert status.workspaces == [WorkspaceStatus(name="a", path="/a")]
    assert status.raw["future"] == {"x": 1}


def test_a_read_hit_is_the_object_its_constructor_makes_with_defaults_of_its_own() -> None:
    wire = {"path": "a.md", "start_line": 1, "end_line": 2, "score": 1, "heading": None}
    first, second = SearchResult.from_wire({"results": [wire, dict(wire)]}).results
    made = SearchHit(path="a.md", start_line=1, end_line=2, score=1.0, snippet="")
    assert first == made and vars(first) == vars(made)
    assert list(vars(first)) == list(vars(made))  # every field set, in order
    assert type(first.score) is float  # an integer score is read as the float it is
    first.triggers.append("x")
    first.line_origins.append(LineOrigin(line=1, origin="agent"))
    assert second.triggers == [] and second.line_origins == []  # not shared
    full = {**wire, "triggers": "deploy", "line_origins": [{"line": 2, "origin": "untrusted"}]}
    hit = SearchHit.from_wire(full)
    assert hit.triggers == ["deploy"] and hit.line_origins[0].origin == "untrusted"
    with pytest.raises(BadResponse, match="'source' should be a string"):
        SearchHit.from_wire({**wire, "source": None})


def test_result_missing_a_required_key_is_bad_response() -> None:
    with pytest.raises(BadResponse, match="start_line"):
        SearchResult.from_wire({"results": [{"path": "a.md", "end_line": 2, "score": 1.0}]})


def test_error_answer_becomes_the_matching_remote_error(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("search")
    async def search(req: FakeRequest) -> Any:
        raise Fail("invalid_params", "max_results must be 1..100", {"param": "max_results"})

    @fake_memoryd.handle("status")
    async def status(req: FakeRequest) -> Any:
        raise Fail("unknown_workspace", "no workspace named 'x'")

    with client_for(fake_memoryd) as client:
        with pytest.raises(InvalidParams) as info:
            client.search("q", max_results=1000)
        assert info.value.code == ErrorCode.INVALID_PARAMS
        assert info.value.data == {"param": "max_results"}
        assert "max_results must be 1..100" in str(info.value)
        with pytest.raises(UnknownWorkspace):
            client.status("x")
        assert client.get("MEMORY.md").path == "MEMORY.md"  # the connection is still fine


def test_unknown_error_code_is_a_plain_remote_error() -> None:
    exc = RemoteError.from_wire({"code": "brand_new", "message": "m"})
    assert type(exc) is RemoteError and exc.code == "brand_new"


def test_connection_level_error_without_id_is_raised(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("append")
    async def append(req: FakeRequest) -> Any:
        await req.send(
            {"id": None, "ok": False, "error": {"code": "too_large", "message": "frame too big"}}
        )
        raise Drop()

    with client_for(fake_memoryd) as client, pytest.raises(FrameTooLarge):
        client.append("x" * 100)


# ---------------------------------------------------------------- progress, timeouts


def test_reindex_progress_events_reach_the_callback_in_order(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("reindex")
    async def reindex(req: FakeRequest) -> Any:
        for done in range(4):
            await req.progress(done, 3, phase="chunking")
        await req.send({"id": req.id, "event": "something_new", "data": {}})
        return {"files_scanned": 3, "seconds": 0.1}

    seen: list[Progress] = []
    with client_for(fake_memoryd) as client:
        result = client.reindex(on_progress=seen.append)
    assert [(p.phase, p.done, p.total) for p in seen] == [("chunking", i, 3) for i in range(4)]
    assert result.files_scanned == 3


def test_timeout_raises_and_a_late_answer_is_discarded(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("search")
    async def slow(req: FakeRequest) -> Any:
        await asyncio.sleep(0.5)
        return {"results": [], "late": True}

    with client_for(fake_memoryd, timeout=0.1) as client:
        started = time.monotonic()
        with pytest.raises(ClientTimeout, match="search"):
            client.search("q")
        assert time.monotonic() - started < 0.4
        time.sleep(0.6)  # the late answer arrives meanwhile
        assert client.status().version == "0.0-fake"
    assert fake_memoryd.connections == 1


def test_a_hung_daemon_times_out(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("get")
    async def hang(req: FakeRequest) -> Any:
        await asyncio.Event().wait()

    with client_for(fake_memoryd, timeout=0.2) as client, pytest.raises(ClientTimeout):
        client.get("MEMORY.md")


# ---------------------------------------------------------------- dropped connections


def drop_first(fake: FakeMemoryd, method: str, times: int = 1) -> None:
    count = {"n": 0}
    canned = fake.results[method]

    @fake.handle(method)
    async def handler(req: FakeRequest) -> Any:
        count["n"] += 1
        if count["n"] <= times:
            raise Drop()
        return canned


def test_dropped_connection_is_reconnected_and_the_call_resent_once(
    fake_memoryd: FakeMemoryd,
) -> None:
    drop_first(fake_memoryd, "search")
    with client_for(fake_memoryd) as client:
        assert client.search("q").results
    assert fake_memoryd.connections == 2
    assert [r.connection for r in fake_memoryd.calls("search")] == [1, 2]


def test_dropped_twice_raises_connection_lost(fake_memoryd: FakeMemoryd) -> None:
    drop_first(fake_memoryd, "status", times=2)
    with client_for(fake_memoryd) as client, pytest.raises(ConnectionLost, match="retried once"):
        client.status()
    assert len(fake_memoryd.calls("status")) == 2


def test_append_is_never_resent_after_a_drop(fake_memoryd: FakeMemoryd) -> None:
    drop_first(fake_memoryd, "append")
    with client_for(fake_memoryd) as client:
        with pytest.raises(ConnectionLost, match="may or may not"):
            client.append("remember this")
        assert len(fake_memoryd.calls("append")) == 1
        client.append("the next append works")  # on a fresh connection
    assert len(fake_memoryd.calls("append")) == 2


def test_idle_connection_closed_by_the_daemon_is_replaced_before_sending(
    fake_memoryd: FakeMemoryd,
) -> None:
    with client_for(fake_memoryd) as client:
        client.status()
        fake_memoryd.drop_connections()  # e.g. the daemon restarted between two calls
        time.sleep(0.05)
        client.append("written once")
    appends = fake_memoryd.calls("append")
    assert len(appends) == 1 and appends[0].connection == 2


def test_daemon_gone_for_good_is_daemon_not_running(short_tmp: Path) -> None:
    fake = FakeMemoryd(short_tmp / "d.sock")
    fake.start()
    client = MemoryClient(fake.path)
    client.status()
    fake.stop()
    with pytest.raises(DaemonNotRunning):
        client.status()


def test_shutdown_closes_the_connection(fake_memoryd: FakeMemoryd) -> None:
    client = client_for(fake_memoryd)
    client.shutdown()
    assert "not connected" in repr(client)


# ---------------------------------------------------------------- asyncio client


def test_async_pipelined_calls_share_one_connection_and_match_out_of_order_answers(
    fake_memoryd: FakeMemoryd,
) -> None:
    @fake_memoryd.handle("search")
    async def search(req: FakeRequest) -> Any:
        delay = {"slow": 0.3, "medium": 0.15, "fast": 0.0}[req.params["query"]]
        await asyncio.sleep(delay)
        hit = {
            "path": f"{req.params['query']}.md",
            "start_line": 1,
            "end_line": 1,
            "score": 1.0,
            "snippet": req.params["query"],
            "source": "memory",
        }
        return {"results": [hit]}

    async def main() -> list[SearchResult]:
        async with AsyncMemoryClient(fake_memoryd.path) as client:
            return await asyncio.gather(*(client.search(q) for q in ("slow", "medium", "fast")))

    results = asyncio.run(main())
    assert [r.results[0].path for r in results] == ["slow.md", "medium.md", "fast.md"]
    assert fake_memoryd.connections == 1
    ids = {r.params["query"]: r.id for r in fake_memoryd.calls("search")}
    searches = [i for i in fake_memoryd.answered if i in ids.values()]
    assert searches == [ids["fast"], ids["medium"], ids["slow"]]  # answered out of order


def test_async_progress_events_go_to_the_call_that_asked(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("reindex")
    async def reindex(req: FakeRequest) -> Any:
        name = req.params["workspace"]
        for done in range(3):
            await req.progress(done, 2, phase=name)
            await asyncio.sleep(0.01)
        return {"files_scanned": len(name)}

    seen: dict[str, list[str]] = {"a": [], "bb": []}

    async def main() -> None:
        async with AsyncMemoryClient(fake_memoryd.path) as client:

            async def on_b(p: Progress) -> None:  # a coroutine callback is awaited
                seen["bb"].append(p.phase)

            ra, rb = await asyncio.gather(
                client.reindex(workspace="a", on_progress=lambda p: seen["a"].append(p.phase)),
                client.reindex(workspace="bb", on_progress=on_b),
            )
            assert (ra.files_scanned, rb.files_scanned) == (1, 2)

    asyncio.run(main())
    assert seen == {"a": ["a"] * 3, "bb": ["bb"] * 3}


def test_async_protocol_mismatch(short_tmp: Path) -> None:
    async def main() -> None:
        async with AsyncMemoryClient(short_tmp / "d.sock") as client:
            await client.status()

    with FakeMemoryd(short_tmp / "d.sock", protocol_version=3), pytest.raises(ProtocolMismatch):
        asyncio.run(main())


def test_async_drop_resends_idempotent_calls_but_not_append(fake_memoryd: FakeMemoryd) -> None:
    drop_first(fake_memoryd, "status")
    drop_first(fake_memoryd, "append")

    async def main() -> None:
        async with AsyncMemoryClient(fake_memoryd.path) as client:
            assert (await client.status()).workspaces[0].name == "ws"
            with pytest.raises(ConnectionLost):
                await client.append("once")
            assert (await client.append("twice")).path.startswith("memory/")

    asyncio.run(main())
    assert len(fake_memoryd.calls("status")) == 2
    assert len(fake_memoryd.calls("append")) == 2


def test_async_concurrent_calls_survive_one_drop_with_a_single_reconnect(
    fake_memoryd: FakeMemoryd,
) -> None:
    @fake_memoryd.handle("search")
    async def search(req: FakeRequest) -> Any:
        if req.connection == 1:
            await asyncio.sleep(0.05)
            raise Drop()
        return {"results": []}

    async def main() -> None:
        async with AsyncMemoryClient(fake_memoryd.path) as client:
            await asyncio.gather(*(client.search(str(i)) for i in range(5)))

    asyncio.run(main())
    assert fake_memoryd.connections == 2


def test_async_timeout_leaves_the_connection_usable(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("get")
    async def hang(req: FakeRequest) -> Any:
        await asyncio.Event().wait()

    async def main() -> None:
        async with AsyncMemoryClient(fake_memoryd.path, timeout=0.1) as client:
            with pytest.raises(ClientTimeout):
                await client.get("MEMORY.md")
            assert (await client.status()).pid == os.getpid()

    asyncio.run(main())
    assert fake_memoryd.connections == 1


def test_async_missing_and_stale_sockets(short_tmp: Path) -> None:
    async def status(path: Path) -> None:
        async with AsyncMemoryClient(path) as client:
            await client.status()

    with pytest.raises(DaemonNotRunning):
        asyncio.run(status(short_tmp / "none.sock"))
    with pytest.raises(StaleSocket):
        asyncio.run(status(stale_socket_file(short_tmp / "stale.sock")))


# ---------------------------------------------------------------- autostart


FAKE_DAEMON_SCRIPT = """\
#!{python}
import os, signal, sys, time
sys.path.insert(0, {tests!r})
from pathlib import Path
from fakes.memoryd_server import FakeMemoryd
assert sys.argv[1:] == ["run"], sys.argv
print("fake memoryd starting", flush=True)
fake = FakeMemoryd(Path(os.environ["MEMORYD_SOCKET"]))
time.sleep(0.2)  # the client must wait for the socket
fake.start()
signal.sigwait([signal.SIGTERM])
"""


def write_executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_autostart_starts_memoryd_run_and_waits_for_its_socket(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = FAKE_DAEMON_SCRIPT.format(python=sys.executable, tests=str(Path(__file__).parents[1]))
    exe = write_executable(short_tmp / "memoryd", script)
    monkeypatch.setattr(_autostart, "find_memoryd", lambda: str(exe))
    monkeypatch.setenv("MEMORYD_HOME", str(short_tmp / "home"))
    monkeypatch.setenv("MEMORYD_SOCKET", str(short_tmp / "auto.sock"))
    with MemoryClient(autostart=True) as client:
        try:
            assert client.status().version == "0.0-fake"
            child = _autostart._children[-1]
            assert os.getsid(child.pid) == child.pid  # detached: its own session
        finally:
            _autostart._children[-1].terminate()
            _autostart._children[-1].wait(5)
    log = short_tmp / "home" / "log" / _autostart.LOG_NAME
    assert "fake memoryd starting" in log.read_text()


def test_autostart_reports_a_daemon_that_exits(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = write_executable(
        short_tmp / "memoryd",
        textwrap.dedent("""\
        #!/bin/sh
        echo "bad config: embedding.provider" >&2
        exit 4
        """),
    )
    monkeypatch.setattr(_autostart, "find_memoryd", lambda: str(exe))
    monkeypatch.setenv("MEMORYD_HOME", str(short_tmp / "home"))
    with pytest.raises(AutostartFailed, match=r"exited with code 4.*memoryd-autostart\.log"):
        MemoryClient(short_tmp / "x.sock", autostart=True).status()
    assert "bad config" in (short_tmp / "home" / "log" / _autostart.LOG_NAME).read_text()


def test_without_autostart_nothing_is_started(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_autostart, "find_memoryd", lambda: pytest.fail("must not start"))
    with pytest.raises(DaemonNotRunning):
        MemoryClient(short_tmp / "x.sock").status()
