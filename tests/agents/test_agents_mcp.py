"""``memctl mcp`` driven by the MCP SDK's own client (stdio and streamable HTTP), against a
real daemon on a real socket: the tools, their schemas, argument errors, and a daemon that
stops and comes back mid-session.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from daemon_util import DaemonThread
from mcp_util import MEMCTL, child_env, daemon_with, make_workspace, stdio_session, text_of
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(120)

TOOLS = {
    "memory_search",
    "memory_get",
    "memory_append",
    "memory_forget",
    "memory_status",
    "memory_export",
    "memory_import",
    "memory_review",
}


def test_stdio_lists_the_five_tools_with_camelcase_params_and_output_schemas(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home)

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert set(tools) == TOOLS
            search = tools["memory_search"]
            assert set(search.inputSchema["properties"]) == {
                "query",
                "maxResults",
                "minScore",
                "workspace",
                "source",
                "corpus",
                "since",
                "until",
                "includeSuperseded",
            }
            assert search.inputSchema["required"] == ["query"]
            assert search.outputSchema is not None
            assert "results" in search.outputSchema["properties"]
            assert "before answering" in (search.description or "").lower()
            assert set(tools["memory_get"].inputSchema["properties"]) == {
                "path",
                "from",
                "lines",
                "workspace",
            }
            assert set(tools["memory_append"].inputSchema["properties"]) == {
                "text",
                "heading",
                "date",
                "origin",
                "sessionId",
                "sessionKind",
                "workspace",
            }

    with daemon_with(md_home, ws):
        asyncio.run(main())


def test_stdio_tools_search_get_append_status_against_a_real_daemon(md_home: Path) -> None:
    ws = make_workspace(md_home)

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            found = await s.call_tool("memory_search", {"query": "billing schema invoices"})
            assert not found.isError, text_of(found)
            data = found.structuredContent
            assert data is not None
            hit = data["results"][0]
            assert hit["path"] == "memory/2025-03-01.md"
            assert (hit["startLine"], hit["workspace"]) == (1, "proj")
            assert hit["endLine"] >= 3 and "immutable" in hit["snippet"]
            assert data["mode"] == "keyword" and data["provider"] == "none"
            assert "memory/2025-03-01.md:1-" in text_of(found)

            got = await s.call_tool("memory_get", {"path": "MEMORY.md", "from": 3, "lines": 1})
            assert got.structuredContent == {
                "path": "MEMORY.md",
                "text": "- The user prefers tabs over spaces.",
                "from": 3,
                "lines": 1,
                "totalLines": 3,
            }

            missing = await s.call_tool("memory_get", {"path": "memory/2031-01-01.md"})
            assert not missing.isError
            assert missing.structuredContent is not None
            assert missing.structuredContent["text"] == ""

            added = await s.call_tool(
                "memory_append",
                {"text": "Deploys happen on Tuesdays.", "heading": "Ops", "date": "2025-03-02"},
            )
            assert not added.isError, text_of(added)
            assert added.structuredContent is not None
            assert added.structuredContent["path"] == "memory/2025-03-02.md"
            assert "Deploys happen on Tuesdays." in (ws / "memory" / "2025-03-02.md").read_text()
            again = await s.call_tool("memory_search", {"query": "deploys tuesdays"})
            assert again.structuredContent is not None
            assert again.structuredContent["results"][0]["path"] == "memory/2025-03-02.md"
            assert again.structuredContent["results"][0]["origin"] == "agent"  # the default

            web = await s.call_tool(
                "memory_append",
                {
                    "text": "The vendor page says refunds take 90 days.",
                    "date": "2025-03-03",
                    "origin": "untrusted",
                    "sessionId": "s-7",
                },
            )
            assert not web.isError, text_of(web)
            found = await s.call_tool("memory_search", {"query": "vendor refunds"})
            assert found.structuredContent is not None
            first = found.structuredContent["results"][0]
            assert (first["origin"], first["sessionId"], first["tier"]) == (
                "untrusted",
                "s-7",
                "episodic",
            )
            owner = await s.call_tool("memory_append", {"text": "x", "origin": "owner"})
            assert owner.isError and "argument origin" in text_of(owner)

            status = await s.call_tool("memory_status", {})
            assert not status.isError
            assert status.structuredContent is not None
            assert status.structuredContent["defaultWorkspace"] == "proj"
            assert status.structuredContent["workspaces"][0]["files"] >= 2

    with daemon_with(md_home, ws):
        asyncio.run(main())


def test_argument_errors_are_tool_errors_naming_the_argument(md_home: Path) -> None:
    ws = make_workspace(md_home)

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("memory_search", {}, "argument query: missing"),
                ("memory_search", {"query": "x", "maxResults": 0}, "argument maxResults"),
                ("memory_search", {"query": "x", "maxResults": "many"}, "argument maxResults"),
                ("memory_search", {"query": "x", "source": "web"}, "argument source"),
                ("memory_search", {"query": "x", "since": "yesterday"}, "argument since"),
                ("memory_get", {"path": "MEMORY.md", "from": 0}, "argument from"),
                ("memory_append", {"text": 5}, "argument text"),
            ]
            for tool, args, expected in cases:
                result = await s.call_tool(tool, args)
                assert result.isError, (tool, args)
                assert expected in text_of(result), text_of(result)
            huge = await s.call_tool("memory_search", {"query": "word " * 20_000})
            assert huge.isError
            assert "2000" in text_of(huge) and len(text_of(huge)) < 500
            outside = await s.call_tool("memory_get", {"path": "../../etc/passwd"})
            assert outside.isError and "memory_get reads" in text_of(outside)
            # The server is still serving after all that.
            ok = await s.call_tool("memory_search", {"query": "tabs"})
            assert not ok.isError

    with daemon_with(md_home, ws):
        asyncio.run(main())


def test_daemon_stopped_then_restarted_mid_session(md_home: Path) -> None:
    ws = make_workspace(md_home)
    daemon = DaemonThread(md_home).__enter__()
    with MemoryClient(daemon.socket_path) as c:
        c.workspace_add(ws)

    async def main() -> None:
        nonlocal daemon
        async with stdio_session(md_home, ws) as s:
            first = await s.call_tool("memory_search", {"query": "tabs"})
            assert not first.isError, text_of(first)
            daemon.__exit__(None, None, None)
            down = await s.call_tool("memory_search", {"query": "tabs"})
            assert down.isError
            assert text_of(down).count("memoryd is not running") == 1, text_of(down)
            daemon = DaemonThread(md_home).__enter__()
            back = await s.call_tool("memory_search", {"query": "tabs"})
            assert not back.isError, text_of(back)
            assert back.structuredContent is not None
            assert back.structuredContent["results"][0]["path"] == "MEMORY.md"

    try:
        asyncio.run(main())
    finally:
        daemon.__exit__(None, None, None)


def test_workspace_default_is_the_one_holding_the_cwd_else_calls_must_name_one(
    md_home: Path,
) -> None:
    a, b = make_workspace(md_home, "alpha"), make_workspace(md_home, "beta")
    (b / "MEMORY.md").write_text("# Memory\n\n- Beta uses PostgreSQL.\n")

    async def main() -> None:
        async with stdio_session(md_home, b / "memory") as s:
            r = await s.call_tool("memory_search", {"query": "postgresql"})
            assert r.structuredContent is not None
            assert r.structuredContent["results"][0]["workspace"] == "beta"
            r = await s.call_tool("memory_search", {"query": "tabs", "workspace": "alpha"})
            assert r.structuredContent is not None
            assert r.structuredContent["results"][0]["workspace"] == "alpha"
        async with stdio_session(md_home, md_home) as s:
            r = await s.call_tool("memory_search", {"query": "tabs"})
            assert r.isError
            assert "alpha" in text_of(r) and "beta" in text_of(r)
            r = await s.call_tool("memory_search", {"query": "tabs", "workspace": str(a)})
            assert not r.isError
            assert r.structuredContent is not None
            assert r.structuredContent["results"][0]["workspace"] == "alpha"

    with daemon_with(md_home, a, b):
        asyncio.run(main())


def test_workspace_option_registers_a_new_path_and_says_so(md_home: Path) -> None:
    ws = make_workspace(md_home, "fresh")
    errlog = md_home / "mcp-stderr.txt"

    async def main() -> None:
        params = StdioServerParameters(
            command=MEMCTL,
            args=["mcp", "--workspace", str(ws)],
            env=child_env(md_home),
            cwd=str(md_home),
        )
        with errlog.open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                r = await s.call_tool("memory_get", {"path": "MEMORY.md"})
                assert not r.isError, text_of(r)
                assert r.structuredContent is not None
                assert "tabs" in r.structuredContent["text"]

    with DaemonThread(md_home) as d:
        asyncio.run(main())
        with MemoryClient(d.socket_path) as c:
            assert [w.name for w in c.workspace_list()] == ["fresh"]
    assert "registered workspace fresh" in errlog.read_text()


# ---------------------------------------------------------------- streamable HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(home: Path, cwd: Path, *extra: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [MEMCTL, "mcp", "--http", f"127.0.0.1:{port}", *extra],
        env=child_env(home),
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
                assert time.monotonic() < deadline, "memctl mcp --http did not listen"
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=20)  # also closes the stderr pipe


def test_http_serves_the_same_tools(md_home: Path) -> None:
    ws = make_workspace(md_home)

    async def main(url: str) -> None:
        # The token memctl made on first use (0600 in the state folder): what setup writes.
        token = (md_home / "state" / "mcp-token").read_text().strip()
        async with (
            httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            tools = {t.name for t in (await s.list_tools()).tools}
            assert tools == TOOLS
            r = await s.call_tool("memory_search", {"query": "billing schema"})
            assert r.structuredContent is not None
            assert r.structuredContent["results"][0]["path"] == "memory/2025-03-01.md"

    with daemon_with(md_home, ws), http_server(md_home, ws) as url:
        asyncio.run(main(url))


def test_http_with_a_token_refuses_requests_without_it(md_home: Path) -> None:
    ws = make_workspace(md_home)

    async def main(url: str) -> None:
        headers = {"Authorization": "Bearer s3cret"}
        async with (
            httpx.AsyncClient(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            r = await s.call_tool("memory_status", {})
            assert not r.isError

    with daemon_with(md_home, ws), http_server(md_home, ws, "--token", "s3cret") as url:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        accept = {"Accept": "application/json, text/event-stream"}
        for auth in ({}, {"Authorization": "Bearer wrong"}):
            resp = httpx.post(url, json=init, headers={**accept, **auth}, timeout=10)
            assert resp.status_code == 401
            assert "bearer token" in json.loads(resp.text)["error"]
        asyncio.run(main(url))


def test_http_beyond_loopback_without_a_token_is_refused_at_start(md_home: Path) -> None:
    proc = subprocess.run(
        [MEMCTL, "mcp", "--http", "0.0.0.0:9", "--no-token"],
        env=child_env(md_home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "needs a token" in proc.stderr


# ---------------------------------------------------------------- the stdio transport


class RawServer:
    """``memctl mcp`` on real pipes, spoken to line by line (JSON-RPC as bytes)."""

    def __init__(
        self, home: Path, cwd: Path, *, initialize: bool = True, stderr: bool = False
    ) -> None:
        self.errlog = home / f"mcp-stderr-{time.monotonic_ns()}.txt"
        with self.errlog.open("wb") as err:
            self.proc = subprocess.Popen(
                [MEMCTL, "mcp"],
                env=child_env(home),
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err if stderr else subprocess.DEVNULL,
            )
        self.next_id = 0
        self.last: dict[str, Any] = {}
        self.initialized: dict[str, Any] = {}
        if not initialize:
            return
        self.send(
            {
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        )
        self.initialized = self.answer()["result"]
        self.send({"method": "notifications/initialized"}, request=False)

    def stderr(self) -> bytes:
        return self.errlog.read_bytes()

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any], *, request: bool = True) -> None:
        if request:
            self.next_id += 1
            message = {"id": self.next_id, **message}
        self.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    def answer(self) -> dict[str, Any]:
        """The next answer to a request (log notifications skipped)."""
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line.endswith(b"\n"), line[-200:]
            message: dict[str, Any] = json.loads(line)
            if "id" in message:
                self.last = message
                return message

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.send({"method": "tools/call", "params": {"name": tool, "arguments": arguments}})
        answer = self.answer()
        assert answer["id"] == self.next_id
        result: dict[str, Any] = answer["result"]
        return result

    def close(self) -> int:
        """Close stdin (the end of the session), wait for the exit, close stdout."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()


@contextlib.contextmanager
def raw_server(
    home: Path, cwd: Path, *, initialize: bool = True, stderr: bool = False
) -> Iterator[RawServer]:
    raw = RawServer(home, cwd, initialize=initialize, stderr=stderr)
    try:
        yield raw
    finally:
        if raw.proc.stdin is not None and not raw.proc.stdin.closed:
            raw.close()


def test_stdio_garbage_lines_are_answered_or_skipped_and_the_server_goes_on(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home)
    with daemon_with(md_home, ws):
        raw = RawServer(md_home, ws)
        raw.write(b'this is not json\n\n{"jsonrpc": "2.0", "id": \n')
        for _ in range(2):  # JSON-RPC's parse error, without an id to answer to
            assert raw.answer()["error"]["code"] == -32700
        raw.write(b'{"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {"name": 5}}\n')
        refused = raw.answer()
        assert refused["id"] == 77 and "error" in refused
        raw.write(b"\xff\xfe not utf-8 \xc3\n")
        assert raw.answer()["error"]["code"] == -32700
        # A query whose bytes are not valid UTF-8 is read with them replaced, as the SDK's
        # transport reads it, and answered.
        raw.write(
            b'{"jsonrpc": "2.0", "id": 78, "method": "tools/call", "params": {"name": '
            b'"memory_search", "arguments": {"query": "tabs \xff"}}}\n'
        )
        odd = raw.answer()
        assert odd["id"] == 78 and not odd["result"].get("isError"), odd
        raw.next_id = 78
        found = raw.call("memory_search", {"query": "billing schema invoices"})
        assert found["structuredContent"]["results"][0]["path"] == "memory/2025-03-01.md"
        assert raw.close() == 0


def test_a_lone_surrogate_in_an_argument_is_a_tool_error_not_an_internal_one(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home)
    with daemon_with(md_home, ws):
        raw = RawServer(md_home, ws)
        raw.write(
            b'{"jsonrpc": "2.0", "id": 79, "method": "tools/call", "params": {"name": '
            b'"memory_append", "arguments": {"text": "- a \\ud800 b"}}}\n'
        )
        answer = raw.answer()
        assert answer["id"] == 79 and answer["result"]["isError"], answer
        assert "lone surrogate" in answer["result"]["content"][0]["text"]
        raw.next_id = 79
        ok = raw.call("memory_append", {"text": "- a plain note"})
        assert not ok.get("isError"), ok
        assert raw.close() == 0


def test_stdio_an_answer_bigger_than_the_pipe_reaches_a_client_that_reads_late(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home)
    body = "".join(f"- fact number {i}: the answer is {i * 7}.\n" for i in range(8000))
    (ws / "MEMORY.md").write_text("# Memory\n\n" + body)
    with daemon_with(md_home, ws), raw_server(md_home, ws) as raw:
        raw.send({"method": "tools/call", "params": {"name": "memory_get", "arguments": {}}})
        raw.send(
            {
                "method": "tools/call",
                "params": {"name": "memory_get", "arguments": {"path": "MEMORY.md"}},
            }
        )
        time.sleep(0.5)  # the server's pipe fills (64 kB) while nobody reads
        assert raw.answer()["result"]["isError"]
        got = raw.answer()["result"]
        assert got["structuredContent"]["text"] == ("# Memory\n\n" + body).rstrip("\n")
        assert len(json.dumps(got)) > 4 * 65536
        assert raw.call("memory_search", {"query": "tabs"})["isError"] is False
        assert raw.close() == 0


def test_stdio_from_a_file_is_read_by_a_thread(md_home: Path) -> None:
    """Not a pipe (a file, a terminal): read and written by a worker thread, so O_NONBLOCK
    is never set on a descriptor the server may share with a shell."""
    ws = make_workspace(md_home)
    requests = md_home / "requests.jsonl"
    requests.write_text(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "file", "version": "0"},
                },
            }
        )
        + "\n"
    )
    answers = md_home / "answers.jsonl"
    with daemon_with(md_home, ws), requests.open("rb") as stdin, answers.open("wb") as stdout:
        proc = subprocess.run(
            [MEMCTL, "mcp"], env=child_env(md_home), cwd=ws, stdin=stdin, stdout=stdout, timeout=60
        )
    assert proc.returncode == 0
    first = json.loads(answers.read_text().splitlines()[0])
    assert first["id"] == 1 and first["result"]["serverInfo"]["name"] == "memoryd"


def test_stdio_transport_answers_an_overlong_line_with_its_id_and_restores_blocking_pipes(
    md_home: Path,
) -> None:
    from memoryd_client.agents.bridge import Bridge
    from memoryd_client.agents.mcp_protocol import McpServer
    from memoryd_client.agents.stdio import serve, stdio_pipes

    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()

    async def main() -> None:
        from memoryd_client import AsyncMemoryClient

        client = AsyncMemoryClient(md_home / "no.sock")
        async with stdio_pipes(in_r, out_w) as (read, write):
            os.write(in_w, b'{"jsonrpc": "2.0", "id": 1, "method": "' + b"x" * 5000 + b'"}\n')
            os.write(in_w, b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}')  # no newline
            os.close(in_w)
            await serve(McpServer(Bridge(client)), read, write, line_limit=1024)
        await client.close()

    asyncio.run(main())
    assert os.get_blocking(in_r) and os.get_blocking(out_w)
    os.close(out_w)
    with os.fdopen(out_r, "rb") as out:
        first, second = (json.loads(line) for line in out.read().splitlines())
    assert first["id"] == 1 and "1024 bytes" in first["error"]["message"]
    assert second == {"jsonrpc": "2.0", "id": 3, "result": {}}
    os.close(in_r)


# ---------------------------------------------------------------- issue 28


def test_server_info_capabilities_and_tool_annotations(md_home: Path) -> None:
    import memoryd_client

    ws = make_workspace(md_home)
    with daemon_with(md_home, ws), raw_server(md_home, ws) as raw:
        info = raw.initialized
        assert info["serverInfo"]["name"] == "memoryd"
        assert info["serverInfo"]["version"] == memoryd_client.__version__  # not the SDK's
        assert info["capabilities"] == {"tools": {"listChanged": False}}  # no empty extras
        raw.send({"method": "tools/list"})
        tools = {t["name"]: t for t in raw.answer()["result"]["tools"]}
        for name in ("memory_search", "memory_get", "memory_status", "memory_review"):
            hints = tools[name]["annotations"]
            assert hints["readOnlyHint"] is True and hints["idempotentHint"] is True
        append = tools["memory_append"]["annotations"]
        assert append["readOnlyHint"] is False and append["destructiveHint"] is False
        forget = tools["memory_forget"]["annotations"]  # clients ask the user first
        assert forget["readOnlyHint"] is False and forget["destructiveHint"] is True
        assert all(t["title"] and t["annotations"]["title"] for t in tools.values())
        assert raw.close() == 0


def test_results_carry_line_ranges_notices_iso_times_and_past_the_end(md_home: Path) -> None:
    ws = make_workspace(md_home)

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            found = await s.call_tool("memory_search", {"query": "billing schema invoices"})
            hit = (found.structuredContent or {})["results"][0]
            with MemoryClient(socket_path) as c:  # the same hit, as the CLI gets it
                plain = c.search("billing schema invoices", workspace="proj").results[0]
            want = (plain.snippet_start_line, plain.snippet_end_line)
            assert (hit["snippetStartLine"], hit["snippetEndLine"]) == want
            assert f"memory/2025-03-01.md:{want[0]}-{want[1]}" in text_of(found)
            stop = await s.call_tool("memory_search", {"query": "the and of"})
            data = stop.structuredContent or {}
            assert data["results"] == [] and data["notices"], data
            assert data["notices"][0] in text_of(stop)
            past = await s.call_tool("memory_get", {"path": "MEMORY.md", "from": 40})
            assert not past.isError
            assert "MEMORY.md has 3 lines: from 40 is past the end" in text_of(past)
            assert "does not exist" not in text_of(past)
            status = await s.call_tool("memory_status", {})
            last = (status.structuredContent or {})["workspaces"][0]["lastSync"]
            assert dt.datetime.fromisoformat(last).tzinfo is not None

    with daemon_with(md_home, ws) as d:
        socket_path = d.socket_path
        asyncio.run(main())


def test_workspace_option_confines_the_server_unless_all_workspaces(md_home: Path) -> None:
    a, b = make_workspace(md_home, "alpha"), make_workspace(md_home, "beta")

    async def main() -> None:
        async with stdio_session(md_home, md_home, "-w", "alpha") as s:
            other = await s.call_tool("memory_search", {"query": "tabs", "workspace": "beta"})
            assert other.isError and "serves workspace alpha only" in text_of(other)
            path = await s.call_tool("memory_get", {"path": "MEMORY.md", "workspace": str(b)})
            assert path.isError
            own = await s.call_tool("memory_search", {"query": "tabs", "workspace": str(a)})
            assert not own.isError, text_of(own)
            status = await s.call_tool("memory_status", {})
            assert [w["name"] for w in (status.structuredContent or {})["workspaces"]] == ["alpha"]
        async with stdio_session(md_home, md_home, "-w", "alpha", "--all-workspaces") as s:
            other = await s.call_tool("memory_search", {"query": "tabs", "workspace": "beta"})
            assert not other.isError, text_of(other)

    with daemon_with(md_home, a, b):
        asyncio.run(main())


def test_stdio_bad_requests_get_a_reply_with_their_id_and_stderr_stays_clean(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home)
    with daemon_with(md_home, ws), raw_server(md_home, ws, stderr=True) as raw:
        raw.write(b'{"jsonrpc": "2.0", "id": 41, "method": "tools/list", "params": \n')
        assert (raw.answer()["id"], raw.last["error"]["code"]) == (41, -32700)
        deep = b'{"jsonrpc": "2.0", "id": 42, "method": "ping", "params": {"a": ' + b"[" * 100_000
        raw.write(deep + b"]" * 100_000 + b"}}\n")
        assert (raw.answer()["id"], raw.last["error"]["code"]) == (42, -32700)
        raw.write(b'{"jsonrpc": "2.0", "id": 43, "method": "ping", "params": {"q": "')
        raw.write(b"x" * (5 * 1024 * 1024) + b'"}}\n')  # over the 4 MB line limit
        assert (raw.answer()["id"], raw.last["error"]["code"]) == (43, -32600)
        raw.write(b'{"jsonrpc": "2.0", "id": 44}\n')
        assert (raw.answer()["id"], raw.last["error"]["code"]) == (44, -32600)
        for method in ("resources/list", "prompts/list", "logging/setLevel", "bogus"):
            raw.send({"method": method, "params": {}})
            assert raw.answer()["error"]["code"] == -32601
        huge = raw.call("memory_get", {"path": "MEMORY.md", "lines": 10**30})
        assert huge["isError"] and "argument lines: must be at most" in huge["content"][0]["text"]
        assert raw.call("memory_search", {"query": "tabs"})["isError"] is False
        assert raw.close() == 0
        assert raw.stderr() == b""


def test_protocol_2026_07_28_discover_then_stateless_calls(md_home: Path) -> None:
    ws = make_workspace(md_home)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    with daemon_with(md_home, ws), raw_server(md_home, ws, initialize=False, stderr=True) as raw:
        raw.send({"method": "server/discover", "params": {"_meta": meta}})
        found = raw.answer()["result"]
        assert "2026-07-28" in found["supportedVersions"]
        assert found["resultType"] == "complete"
        assert found["capabilities"] == {"tools": {"listChanged": False}}
        assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "memoryd"
        raw.send({"method": "tools/list", "params": {"_meta": meta}})
        listed = raw.answer()["result"]
        assert listed["resultType"] == "complete" and len(listed["tools"]) == len(TOOLS)
        raw.send(
            {
                "method": "tools/call",
                "params": {"name": "memory_search", "arguments": {"query": "tabs"}, "_meta": meta},
            }
        )
        called = raw.answer()["result"]
        assert called["resultType"] == "complete"
        assert called["structuredContent"]["results"][0]["path"] == "MEMORY.md"
        assert raw.close() == 0
        assert raw.stderr() == b""


def test_stdio_starts_the_daemon_when_none_runs(md_home: Path) -> None:
    ws = make_workspace(md_home)
    (md_home / "config.toml").write_text(
        f'[embedding]\nprovider = "none"\n\n[[workspaces]]\nname = "proj"\npath = "{ws}"\n'
    )
    env = {k: v for k, v in child_env(md_home).items() if k != "MEMCTL_NO_AUTOSTART"}
    proc = subprocess.Popen(
        [MEMCTL, "mcp"],
        env=env,
        cwd=ws,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        call = {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}
        for message in (
            {"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
            {"id": 2, "method": "tools/call", "params": call},
        ):
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        proc.stdin.close()
        answers = [json.loads(line) for line in proc.stdout.read().splitlines()]
        assert proc.wait(60) == 0
        got = answers[1]["result"]
        assert not got["isError"], got
        assert "tabs over spaces" in got["structuredContent"]["text"]
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        subprocess.run(
            [str(Path(MEMCTL).parent / "memoryd"), "stop"], env=env, capture_output=True, timeout=60
        )


# ---------------------------------------------------------------- issue 35


def _types(node: Any) -> Iterator[Any]:
    """Every ``type`` in a schema, however deep."""
    if isinstance(node, dict):
        if "type" in node:
            yield node["type"]
        for value in node.values():
            yield from _types(value)
    elif isinstance(node, list):
        for value in node:
            yield from _types(value)


def test_openclaws_corpus_maps_to_source_one_type_schemas_and_a_provider_for_stop_words(
    md_home: Path,
) -> None:
    ws = make_workspace(md_home)

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            tools = (await s.list_tools()).tools
            for tool in tools:  # one type per key: Gemini-style dialects take no lists
                kinds = [*_types(tool.inputSchema), *_types(tool.outputSchema)]
                assert all(isinstance(k, str) for k in kinds), (tool.name, kinds)
            plain = await s.call_tool("memory_search", {"query": "billing invoices"})
            memory = await s.call_tool(
                "memory_search", {"query": "billing invoices", "corpus": "memory"}
            )
            assert not memory.isError
            hits = (memory.structuredContent or {})["results"]
            assert hits and hits == (plain.structuredContent or {})["results"]
            wiki = await s.call_tool("memory_search", {"query": "billing", "corpus": "wiki"})
            assert wiki.isError and "corpus" in text_of(wiki) and "source" in text_of(wiki)
            both = await s.call_tool(
                "memory_search", {"query": "billing", "corpus": "all", "source": "memory"}
            )
            assert both.isError and "disagree" in text_of(both)
            stop = await s.call_tool("memory_search", {"query": "the and of"})
            data = stop.structuredContent or {}
            assert data["notices"] and data["provider"], data
            assert data["provider"] == (plain.structuredContent or {})["provider"]
            status = await s.call_tool("memory_status", {})
            assert "defaultWorkspace" in (status.structuredContent or {})

    with daemon_with(md_home, ws):
        asyncio.run(main())
