"""``memctl mcp``'s transports under abuse: HTTP refuses what a web page can send (a foreign
Host or Origin, a text/plain body, no token) and half-open connections cannot lock clients
out; stdio holds a bounded number of requests in flight."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from agents.test_agents_mcp import RawServer, free_port
from daemon_util import Proc, wait_for
from mcp_util import MEMCTL, child_env, daemon_with, make_workspace

pytestmark = pytest.mark.timeout(180)

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@contextmanager
def http_mcp(
    home: Path, cwd: Path, *extra: str, fds: int | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()

    def limit() -> None:  # a desktop's default: 1024 descriptors
        if fds is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fds, fds))

    errlog = home / f"http-stderr-{time.monotonic_ns()}.txt"
    with errlog.open("wb") as err:
        proc = subprocess.Popen(
            [MEMCTL, "mcp", "--http", f"127.0.0.1:{port}", *extra],
            env=child_env(home),
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=limit,
        )
    try:

        def listens() -> bool:
            assert proc.poll() is None, errlog.read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        assert wait_for(listens, 30, 0.05)
        proc.errlog = errlog  # type: ignore[attr-defined]
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_http_refuses_what_a_web_page_can_send(md_home: Path) -> None:
    ws = make_workspace(md_home)
    with daemon_with(md_home, ws), http_mcp(md_home, ws) as (url, _):
        token_file = md_home / "state" / "mcp-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600  # made on first use
        auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
        ok = httpx.post(url, json=INIT, headers={**ACCEPT, **auth}, timeout=10)
        assert ok.status_code == 200, ok.text
        for headers, body, status in (
            ({}, INIT, 401),  # any local user or program: no token, no memory
            ({"Host": "evil.example"}, INIT, 421),  # DNS rebinding
            ({"Host": "evil.example:80"}, INIT, 421),
            ({"Origin": "http://evil.example"}, INIT, 403),
            ({"Origin": "null"}, INIT, 403),
            ({"Content-Type": "text/plain"}, json.dumps(INIT), 415),  # no CORS preflight
            ({"Content-Type": "application/x-www-form-urlencoded"}, "a=b", 415),
        ):
            sent = {**ACCEPT, **({} if status == 401 else auth), **headers}
            if isinstance(body, dict):
                r = httpx.post(url, json=body, headers=sent, timeout=10)
            else:
                r = httpx.post(url, content=body.encode(), headers=sent, timeout=10)
            assert r.status_code == status, (headers, r.status_code, r.text)
        local = {**ACCEPT, **auth, "Origin": "http://localhost:3000", "Host": "localhost"}
        assert httpx.post(url, json=INIT, headers=local, timeout=10).status_code == 200


def test_http_half_open_connections_do_not_lock_clients_out(md_home: Path) -> None:
    ws = make_workspace(md_home)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    socks: list[socket.socket] = []
    try:
        with daemon_with(md_home, ws), http_mcp(md_home, ws, fds=1024) as (url, proc):
            port = int(url.split(":")[2].split("/")[0])
            for _ in range(1100):  # headers begun, never finished
                s = socket.socket()
                s.setblocking(False)
                with suppress(BlockingIOError):
                    s.connect(("127.0.0.1", port))
                socks.append(s)
            for s in socks:
                with suppress(OSError):  # closed to make room already
                    s.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            token_file = md_home / "state" / "mcp-token"
            token = token_file.read_text().strip() if token_file.exists() else ""
            auth = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}

            def served() -> bool:
                try:
                    return httpx.post(url, json=INIT, headers=auth, timeout=5).status_code == 200
                except httpx.HTTPError:
                    return False

            assert wait_for(served, 60, 0.5)
            assert proc.poll() is None
            logged = proc.errlog.stat().st_size  # type: ignore[attr-defined]
            assert logged < 64 * 1024, proc.errlog.read_text()[-2000:]  # type: ignore[attr-defined]
    finally:
        for s in socks:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_stdio_holds_a_bounded_number_of_requests_in_flight(md_home: Path) -> None:
    ws = make_workspace(md_home)
    (md_home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\nname = "proj"\n')
    daemon = Proc(md_home)
    daemon.ready()
    raw = RawServer(md_home, ws)
    total = 3000
    request = {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}
    lines = [
        json.dumps(
            {"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call", "params": request}
        ).encode()
        + b"\n"
        for i in range(total)
    ]
    answers: list[dict[str, object]] = []

    def writer() -> None:
        assert raw.proc.stdin is not None
        for line in lines:
            raw.proc.stdin.write(line)
        raw.proc.stdin.flush()

    def reader() -> None:
        assert raw.proc.stdout is not None
        while len(answers) < total:
            line = raw.proc.stdout.readline()
            if not line:
                return
            answers.append(json.loads(line))

    try:
        os.kill(daemon.p.pid, signal.SIGSTOP)  # every call now waits for the daemon
        w = threading.Thread(target=writer, daemon=True)
        r = threading.Thread(target=reader, daemon=True)
        w.start()
        r.start()
        w.join(10)
        # The server stopped reading at its cap: the rest waits in the pipe, not in memory.
        assert w.is_alive(), "every pipelined request was read while none could be answered"
        os.kill(daemon.p.pid, signal.SIGCONT)
        w.join(120)
        r.join(120)
        assert not w.is_alive() and len(answers) == total
        assert all("result" in a and not a["result"].get("isError") for a in answers)  # type: ignore[union-attr]
    finally:
        os.kill(daemon.p.pid, signal.SIGCONT)
        raw.close()
        daemon.kill()


def test_setup_writes_the_servers_token_into_the_client_it_configures(
    md_home: Path, tmp_path: Path
) -> None:
    ws = make_workspace(md_home)
    home = tmp_path / "home"
    home.mkdir()
    env = {**child_env(md_home), "HOME": str(home)}
    with daemon_with(md_home, ws), http_mcp(md_home, ws) as (url, _):
        port = url.split(":")[2].split("/")[0]
        done = subprocess.run(
            [MEMCTL, "setup", "claude-code", "--user", "--http", port],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["memoryd"]
        assert entry["type"] == "http" and entry["url"] == url
        token = (md_home / "state" / "mcp-token").read_text().strip()
        assert entry["headers"] == {"Authorization": f"Bearer {token}"}
        r = httpx.post(url, json=INIT, headers={**ACCEPT, **entry["headers"]}, timeout=10)
        assert r.status_code == 200, r.text
        shared = subprocess.run(
            [MEMCTL, "setup", "claude-code", "--shared", "--http", port],
            env=env,
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shared.returncode != 0 and "token" in shared.stderr
        assert not (ws / ".mcp.json").exists()
