"""What agents pay for memoryd: ``memory_search`` through ``memctl mcp`` (stdio), the
server's start, and a Claude Code ``user-prompt-submit`` hook run as a fresh process, each
beside the plain client and, with ``--baseline REV``, beside the code of REV, measured in
the same run on the same daemon.

    python bench/agents.py [--chunks 10000] [--rounds 5] [--hook-runs 20] [--starts 10]
                           [--baseline REV] [--json]

A real ``memoryd run`` (keyword only: ``MEMORYD_EMBEDDING_PROVIDER=none``) on a synthetic
workspace (bench/synth.py) of ``--chunks`` chunks under a short /tmp home. REV's code runs
from a detached worktree first on PYTHONPATH (this tree's likewise), both from bytecode
written first (as an install has it), with the same interpreter, packages and daemon;
memctl is started as its console script does (``python -c 'from ENTRY import main'``),
ENTRY being each tree's own.

- MCP: every query of bench/synth.py's set ``--rounds`` times (after a warm-up pass),
  through each path in turn, so load changes hit them alike: ``AsyncMemoryClient.search``
  (what the server forwards to), raw JSON-RPC lines over each server's pipes (the MCP
  layer's own cost), and the Python SDK's ``ClientSession.call_tool`` (which also checks
  each result against the tool's outputSchema with jsonschema). Each server's CPU time
  and context switches per call (/proc) too.
- Start: spawn -> the answer to ``initialize``, ``--starts`` times per tree, in turn.
- Hook: ``memctl hook claude-code user-prompt-submit`` with Claude Code's event JSON on
  stdin and ``memctl search --json``, each from a fresh process, ``--hook-runs`` times per
  tree, each query recalled and searched once in-process first (the daemon's per-query
  caches ready for every timed process alike); ``python -c pass`` and the daemon's
  ``recall`` in-process for scale.

Targets (issue 28), as ratios: raw JSON-RPC search p50 <= 1.5x the plain client; spawn ->
first answer <= 0.5x REV's; hook p50 <= memctl search --json p50, both <= 0.6x REV's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from latency import CLK_TCK, Daemon, add_workspace, summarize
from memoryd_client import AsyncMemoryClient, MemoryClient
from scale import code_at, compile_code
from synth import make_queries, make_workspace


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def mcp_server_pids(baseline_env: dict[str, str] | None) -> dict[str, int]:
    """This process's ``memctl mcp`` children by which code they run ("this", "baseline":
    the one whose environment holds the baseline's PYTHONPATH). Linux /proc; {} elsewhere."""
    found: dict[str, int] = {}
    base = f"PYTHONPATH={baseline_env['PYTHONPATH']}".encode() if baseline_env else None
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid != os.getpid() or b"mcp" not in Path(f"/proc/{entry}/cmdline").read_bytes():
                continue
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        found["baseline" if base in env else "this"] = int(entry)
    return found


def cpu_and_switches(pid: int) -> tuple[float, int]:
    """(CPU seconds, context switches) of a process so far, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    switches = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
            if "ctxt_switches:" in line:  # voluntary and nonvoluntary
                switches += int(line.split()[1])
    return (int(fields[11]) + int(fields[12])) / CLK_TCK, switches


ENTRY = {"this": "memoryd_client._memctl", "baseline": "memoryd_client.cli"}
"""memctl's entry module in each tree (the baseline predates the lean ``memctl hook`` path);
both are run as ``python -c 'from ENTRY import main'``, what the console script does."""


def memctl(which: str) -> list[str]:
    return [sys.executable, "-c", f"import sys; from {ENTRY[which]} import main; sys.exit(main())"]


class RawMcp:
    """``memctl mcp`` on pipes, spoken to as JSON-RPC lines: no client library's cost."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    @classmethod
    async def start(cls, which: str, env: dict[str, str], ws: str) -> tuple[RawMcp, float]:
        """The server and the ms from spawn to its answer to ``initialize``."""
        t = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *memctl(which),
            "mcp",
            "--workspace",
            ws,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            limit=64 * 1024 * 1024,
        )
        raw = cls(proc)
        await raw.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        first_ms = (time.perf_counter() - t) * 1000
        assert proc.stdin is not None
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        return raw, first_ms

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        while True:
            answer: dict[str, Any] = json.loads(await self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    async def search(self, q: str) -> None:
        answer = await self.request(
            "tools/call", {"name": "memory_search", "arguments": {"query": q}}
        )
        assert not answer["result"].get("isError"), answer

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()


async def mcp_vs_client(
    d: Daemon, ws: str, queries: list[str], rounds: int, envs: dict[str, dict[str, str]]
) -> dict[str, Any]:
    """Every query of every round through each path in turn (the client, raw JSON-RPC to
    each tree's server, the SDK's ClientSession to each), so a change of machine load hits
    all of them alike."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def session(stack: AsyncExitStack, which: str) -> ClientSession:
        params = StdioServerParameters(
            command=memctl(which)[0], args=[*memctl(which)[1:], "mcp", "-w", ws], env=envs[which]
        )
        read, write = await stack.enter_async_context(stdio_client(params))
        s = await stack.enter_async_context(ClientSession(read, write))
        await s.initialize()
        return s

    ms: dict[str, list[float]] = {"client": []}
    async with AsyncExitStack() as stack:
        c = await stack.enter_async_context(AsyncMemoryClient(d.socket))
        raws = {which: (await RawMcp.start(which, env, ws))[0] for which, env in envs.items()}
        sdks = {which: await session(stack, which) for which in envs}
        for q in queries:  # warm-up: connections, caches, first-call imports
            await c.search(q, workspace=ws)
            for which in envs:
                await raws[which].search(q)
                await sdks[which].call_tool("memory_search", {"query": q})
        pids = mcp_server_pids(envs.get("baseline"))
        before = {name: cpu_and_switches(pid) for name, pid in pids.items()}
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                await c.search(q, workspace=ws)
                ms["client"].append((time.perf_counter() - t) * 1000)
                for which in envs:
                    t = time.perf_counter()
                    await raws[which].search(q)
                    ms.setdefault(f"raw_{which}", []).append((time.perf_counter() - t) * 1000)
                for which in envs:
                    t = time.perf_counter()
                    r = await sdks[which].call_tool("memory_search", {"query": q})
                    ms.setdefault(f"sdk_{which}", []).append((time.perf_counter() - t) * 1000)
                    assert not r.isError, r.content
        calls = len(ms["client"]) * 2  # each server: a raw call and an SDK call per query
        per_call: dict[str, dict[str, float]] = {}
        for name, pid in pids.items():
            cpu, switches = cpu_and_switches(pid)
            per_call[name] = {
                "cpu_ms": (cpu - before[name][0]) * 1000 / calls,
                "switches": (switches - before[name][1]) / calls,
            }
        for raw in raws.values():
            await raw.close()
    out: dict[str, Any] = {name: summarize(values) for name, values in ms.items()}
    out["server_per_call"] = per_call
    return out


async def start_times(
    ws: str, envs: dict[str, dict[str, str]], runs: int
) -> dict[str, dict[str, float]]:
    """Spawn -> the answer to ``initialize``, each tree in turn."""
    ms: dict[str, list[float]] = {which: [] for which in envs}
    for _ in range(runs):
        for which, env in envs.items():
            raw, first = await RawMcp.start(which, env, ws)
            ms[which].append(first)
            await raw.close()
    return {which: summarize(values) for which, values in ms.items()}


def hook_vs_peers(
    d: Daemon,
    ws_root: Path,
    ws: str,
    queries: list[str],
    runs: int,
    envs: dict[str, dict[str, str]],
) -> dict[str, Any]:
    ms: dict[str, list[float]] = {}
    printed = 0
    warm = MemoryClient(d.socket)
    for i in range(runs):
        q = queries[i % len(queries)]
        # The daemon keeps the latest queries parsed and their candidates' rows: the first
        # process to ask for q would pay for that and the others not. Asked once here
        # first, every timed process finds them ready alike.
        warm.recall(q, workspace=ws)
        warm.search(q, workspace=ws)
        event = json.dumps(
            {
                "session_id": "bench",
                "transcript_path": "/dev/null",
                "cwd": str(ws_root),
                "hook_event_name": "UserPromptSubmit",
                "prompt": q,
            }
        )
        for which, env in envs.items():
            t = time.perf_counter()
            out = subprocess.run(
                [*memctl(which), "hook", "claude-code", "user-prompt-submit"],
                input=event,
                env=env,
                capture_output=True,
                text=True,
                check=True,
                cwd=ws_root,
            )
            ms.setdefault(f"hook_{which}", []).append((time.perf_counter() - t) * 1000)
            printed += bool(out.stdout) and which == "this"
            t = time.perf_counter()
            subprocess.run(
                [*memctl(which), "search", "--workspace", ws, "--json", *q.split()],
                env=env,
                capture_output=True,
                check=True,
            )
            ms.setdefault(f"search_{which}", []).append((time.perf_counter() - t) * 1000)
    warm.close()
    t = time.perf_counter()
    for _ in range(runs):
        subprocess.run([sys.executable, "-c", "pass"], env=envs["this"], check=True)
    python_ms = (time.perf_counter() - t) * 1000 / runs
    recall_ms: list[float] = []
    with MemoryClient(d.socket) as c:
        for q in queries:
            t = time.perf_counter()
            c.recall(q, workspace=ws)
            recall_ms.append((time.perf_counter() - t) * 1000)
    out: dict[str, Any] = {name: summarize(values) for name, values in ms.items()}
    out.update(
        recall_in_process=summarize(recall_ms),
        python_pass_ms=python_ms,
        hook_printed=printed,
        runs=runs,
    )
    return out


def row(name: str, s: dict[str, float], base: dict[str, float] | None, what: str = "") -> str:
    ratio = f"{s['p50'] / base['p50']:.2f}x {what}".rstrip() if base else "1.00x"
    return f"| {name} | {s['p50']:.2f} | {s['p95']:.2f} | {ratio} |"


def report(r: dict[str, Any]) -> None:
    m, st, h = r["mcp"], r["start"], r["hook"]
    rev = r["baseline"] or "(none)"
    has_base = "raw_baseline" in m
    n = m["client"]["n"]
    print(f"\n### memory_search at {r['chunks']} chunks (keyword), {n} calls each\n")
    print("| path | p50 ms | p95 ms | p50 ratio |")
    print("|---|---|---|---|")
    print(row("AsyncMemoryClient.search (the plain client)", m["client"], None))
    print(
        row(
            "raw JSON-RPC over memctl mcp's pipes, this tree",
            m["raw_this"],
            m["client"],
            "of the client",
        )
    )
    if has_base:
        print(row(f"raw JSON-RPC, {rev}", m["raw_baseline"], m["client"], "of the client"))
        print(row("raw JSON-RPC, this tree", m["raw_this"], m["raw_baseline"], f"of {rev}"))
    print(
        row(
            "Python SDK ClientSession.call_tool, this tree",
            m["sdk_this"],
            m["client"],
            "of the client",
        )
    )
    if has_base:
        print(
            row(
                f"Python SDK ClientSession.call_tool, {rev}",
                m["sdk_baseline"],
                m["client"],
                "of the client",
            )
        )
        print(
            row(
                "Python SDK ClientSession.call_tool, this tree",
                m["sdk_this"],
                m["sdk_baseline"],
                f"of {rev}",
            )
        )
    if m.get("server_per_call"):
        print("\n| server process | CPU ms per call | context switches per call |")
        print("|---|---|---|")
        for name, u in sorted(m["server_per_call"].items(), reverse=True):
            label = "this tree" if name == "this" else rev
            print(f"| {label} | {u['cpu_ms']:.2f} | {u['switches']:.1f} |")
    print(f"\n### memctl mcp: spawn -> the answer to initialize, {st['this']['n']} starts each\n")
    print("| server | p50 ms | p95 ms | p50 ratio |")
    print("|---|---|---|---|")
    if "baseline" in st:
        print(row(rev, st["baseline"], None))
        print(row("this tree", st["this"], st["baseline"], f"of {rev}"))
    else:
        print(row("this tree", st["this"], None))
    print(
        "\n### user-prompt-submit hook and memctl search --json, fresh processes, "
        f"{h['runs']} runs\n"
    )
    print("| command | p50 ms | p95 ms | p50 ratio |")
    print("|---|---|---|---|")
    print(row("memctl search --json, this tree", h["search_this"], None))
    print(
        row(
            "memctl hook claude-code user-prompt-submit, this tree",
            h["hook_this"],
            h["search_this"],
            "of search",
        )
    )
    if "hook_baseline" in h:
        print(
            row(f"memctl search --json, {rev}", h["search_baseline"], h["search_this"], "of search")
        )
        print(row(f"memctl hook, {rev}", h["hook_baseline"], h["search_this"], "of search"))
        print(row("memctl hook, this tree", h["hook_this"], h["hook_baseline"], f"of {rev}'s hook"))
        print(
            row(
                "memctl search --json, this tree",
                h["search_this"],
                h["search_baseline"],
                f"of {rev}'s search",
            )
        )
    print(
        row(
            "recall method, in-process (the work itself)",
            h["recall_in_process"],
            h["search_this"],
            "of search",
        )
    )
    print(
        f"\npython -c pass: {h['python_pass_ms']:.1f} ms; "
        f"{h['hook_printed']} of {h['runs']} prompts got a recall block"
    )
    print(f"PYTHONDONTWRITEBYTECODE: {r['bytecode']}")
    print(f"\nload average before/after: {r['load_before']} / {r['load_after']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hook-runs", type=int, default=20)
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument(
        "--baseline",
        metavar="REV",
        help="also time the MCP server of git revision REV (a detached worktree first on "
        "its PYTHONPATH), interleaved with this tree's, on the same daemon",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mdag-", dir="/tmp"))
    d = Daemon(tmp / "home", "none")
    try:
        log(f"building a {args.chunks}-chunk workspace")
        root = make_workspace(tmp / "ws", args.chunks)
        d.start()
        ws, chunks, seconds = add_workspace(d, root)
        d.settle()
        log(f"indexed {chunks} chunks in {seconds:.1f}s")
        queries = make_queries(50)
        load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
        result: dict[str, Any] = {
            "chunks": chunks,
            "load_before": load_before,
            "baseline": args.baseline,
        }
        here = Path(__file__).resolve().parent.parent
        this_env = {**d.env, "PYTHONPATH": f"{here / 'daemon'}{os.pathsep}{here / 'client'}"}
        result["bytecode"] = os.environ.get("PYTHONDONTWRITEBYTECODE") or "unset"
        compile_code(here)  # both codes from bytecode, as installed (scale.compile_code)
        with code_at(args.baseline, tmp, compiled=True) as base_env:
            envs = {"this": this_env}
            if args.baseline:
                envs["baseline"] = {**d.env, **base_env}
            log("MCP stdio vs the async client")
            result["mcp"] = asyncio.run(mcp_vs_client(d, ws, queries, args.rounds, envs))
            log("memctl mcp start")
            result["start"] = asyncio.run(start_times(ws, envs, args.starts))
            log("hook vs memctl search")
            result["hook"] = hook_vs_peers(d, root, ws, queries, args.hook_runs, envs)
        result["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # the workspace and home: ~50 MB at 10k chunks
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


if __name__ == "__main__":
    main()
