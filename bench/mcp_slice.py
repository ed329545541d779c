"""``memory_search`` through ``memctl mcp`` with and without a short scheduling slice on the
server's event loop thread (runtime/short_slice.py's, as the daemon's loop has it), as the
machine is and under load, in one run.

    python bench/mcp_slice.py [--chunks 3000] [--rounds 8] [--busy 3] [--load-in own|agent]
                              [--slice-ms 0.6] [--ts | --daemons] [--json]

A keyword daemon (bench/latency.Daemon, provider none) on a synthetic workspace
(bench/synth.py), in a session of its own as memctl's autostart starts it. ``memctl mcp``
servers of this tree on it, the same code but for a prelude run before ``main``: "default"
(no slice asked), "short" (the loop's thread asks for ``--slice-ms``) and "awaiting" (it
has the slice only while a call to the daemon is out: the daemon's answer wakes it
promptly, the agent's request does not preempt the agent). Each is driven by the ``mcp``
SDK's ``ClientSession.call_tool`` ("sdk": a Python agent, ~2.5 ms of its own CPU a call)
and by raw JSON-RPC lines ("raw": an agent that costs little), each server in a session of
its own as the SDK's ``stdio_client`` starts it; ``AsyncMemoryClient.search`` from this
process, no bridge, for scale. With ``--ts``, then the TypeScript SDK's ``Client`` (node,
bench/mcp_slice_ts.mjs; ``npm ci --prefix tests/agents/mcp_clients``), which starts the
server in its own session, against "default" and "short". With ``--daemons``, the daemon's
own slice instead: a daemon as it is ("default") beside one whose loop does not ask for it
("plain"), each with a "default" server and its own plain client, the same workspace.

Every query of bench/synth.py's set ``--rounds`` times to each path in turn (the order
rotating), first as the machine is, then with ``--busy`` processes spinning at nice 0:
``--load-in own`` puts them in a session of their own (a build in another terminal: with
Linux's autogroups that session gets one share), ``agent`` in this process's (the agent's
own test run). Printed: latency percentiles per path; per server its CPU and preemptions
and its loop thread's run-queue wait per call (/proc schedstat); the agent's own run-queue
wait per call; each server's loop thread's slice as the kernel reports it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from latency import CLK_TCK, Daemon, add_workspace, summarize
from memoryd_client import AsyncMemoryClient
from synth import make_queries, make_workspace

ARMS = ("default", "short", "awaiting")
# Run before memctl's main: "default" turns the client's slice request into a no-op (the
# module may not exist); "short" asks for BENCH_SLICE_NS on the thread that runs the loop;
# "awaiting" has it only while a call to the daemon is out (its answer's wake-up preempts;
# the agent's request's does not).
PRELUDE = {
    "default": (
        "try:\n import memoryd_client._short_slice as s\n"
        " s.answer_promptly = lambda *a, **k: False\n"
        "except ImportError:\n pass\n"
    ),
    "short": (
        "import os\nfrom memoryd.runtime import short_slice as s\n"
        "s.ANSWER_SLICE_NS = int(os.environ['BENCH_SLICE_NS'])\n"
        "assert s.answer_promptly()\n"
    ),
    "awaiting": (
        "import os, ctypes\nfrom memoryd.runtime import short_slice as s\n"
        "from memoryd_client import _async\n"
        "libc = ctypes.CDLL(None)\n"
        "def ask(ns):\n"
        " attr = s._ATTR.pack(s._ATTR.size, 0, 0, 0, 0, ns, 0, 0)\n"
        " assert libc.syscall(s._calls()[0], 0, ctypes.c_char_p(attr), 0) == 0\n"
        "short = int(os.environ['BENCH_SLICE_NS'])\n"
        "run = _async.AsyncMemoryClient._run\n"
        "async def _run(self, call):\n"
        " ask(short)\n"
        " try:\n  return await run(self, call)\n"
        " finally:\n  ask(0)\n"
        "_async.AsyncMemoryClient._run = _run\n"
    ),
}
# A daemon whose event loop does not ask for the short slice (--daemons)
PLAIN_DAEMON = [
    sys.executable,
    "-c",
    "import sys\nfrom memoryd.runtime import short_slice\n"
    "short_slice.answer_promptly = lambda: False\n"
    "from memoryd.cli import main\nsys.exit(main())",
    "run",
]
SPIN = (
    "import os, sys\nfor _ in range(int(sys.argv[1]) - 1):\n if not os.fork(): break\nwhile 1: pass"
)


def memctl(arm: str, ws: str) -> list[str]:
    main = "import sys\nfrom memoryd_client._memctl import main\nsys.exit(main())"
    return [sys.executable, "-c", PRELUDE[arm] + main, "mcp", "-w", ws]


def server_pid(arm: str) -> int:
    """The ``memctl mcp`` of ``arm`` (BENCH_ARM in its environment), a child of this one."""
    mark = f"BENCH_ARM={arm}".encode()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid() and mark in Path(f"/proc/{entry}/environ").read_bytes():
                return int(entry)
        except (OSError, ValueError, IndexError):
            continue
    raise SystemExit(f"no memctl mcp for {arm}")


def slice_ns(pid: int, tid: int) -> int | None:
    for line in Path(f"/proc/{pid}/task/{tid}/sched").read_text().splitlines():
        if line.startswith("se.slice"):
            return int(line.split(":")[1])
    return None


def run_queue_ns(pid: int, tid: int) -> int:
    """ns the thread has waited on a run queue (runnable, not running) so far."""
    return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1])


def cpu_preempted_waited(pid: int) -> tuple[float, int, int]:
    """(CPU s, involuntary switches of all threads, the main thread's run-queue wait ns)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    preempted = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
            if line.startswith("nonvoluntary_ctxt_switches:"):
                preempted += int(line.split()[1])
    return (int(fields[11]) + int(fields[12])) / CLK_TCK, preempted, run_queue_ns(pid, pid)


def spinners(n: int, own: bool) -> subprocess.Popen[bytes] | None:
    """``n`` processes spinning: in a session of their own (a build in another terminal) or
    in a process group of this session (the agent's own test run); None for 0."""
    if not n:
        return None
    where: dict[str, Any] = {"start_new_session": True} if own else {"process_group": 0}
    return subprocess.Popen([sys.executable, "-c", SPIN, str(n)], **where)


def stop(spin: subprocess.Popen[bytes] | None) -> None:
    if spin:
        os.killpg(spin.pid, signal.SIGKILL)  # the spinner and its forks
        spin.wait()


def ts_phases(
    env: dict[str, str], ws: str, queries: list[str], args: argparse.Namespace, tmp: Path
) -> dict[str, Any]:
    """The TypeScript SDK's Client as the agent (bench/mcp_slice_ts.mjs, node), the same
    two phases, servers "ts-default" and "ts-short"."""
    here = Path(__file__).resolve().parent
    sdk = here.parent / "tests/agents/mcp_clients/node_modules/@modelcontextprotocol/sdk"
    spec = {
        "sdk": str(sdk / "dist" / "esm"),
        "rounds": args.rounds,
        "queries": queries,
        "servers": {
            f"ts-{arm}": {
                "command": memctl(arm, ws)[0],
                "args": memctl(arm, ws)[1:],
                "env": {**env, "BENCH_ARM": f"ts-{arm}"},
            }
            for arm in ("default", "short")
        },
    }
    (tmp / "ts.json").write_text(json.dumps(spec))
    out: dict[str, Any] = {"load": {}}
    for phase, n in (("as is", 0), ("loaded", args.busy)):
        node = subprocess.Popen(
            ["node", str(here / "mcp_slice_ts.mjs"), str(tmp / "ts.json")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert node.stderr is not None and node.stdin is not None and node.stdout is not None
        assert node.stderr.readline() == b"ready\n"
        spin = spinners(n, args.load_in == "own")
        try:
            if spin:
                time.sleep(1.0)
            out["load"][phase] = [round(os.getloadavg()[0], 2)]
            node.stdin.close()
            got = node.stdout.read()
            if not got:
                raise SystemExit(f"node: {node.stderr.read().decode()}")
            ms = json.loads(got)
            out["load"][phase].append(round(os.getloadavg()[0], 2))
        finally:
            stop(spin)
            node.wait()
        out[phase] = {p: summarize(v) for p, v in ms.items()}
    return out


class Raw:
    """A ``memctl mcp`` on pipes spoken to as JSON-RPC lines."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    @classmethod
    async def start(cls, cmd: list[str], env: dict[str, str]) -> Raw:
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            limit=64 * 1024 * 1024,
            start_new_session=True,  # as the SDK's stdio_client
        )
        raw = cls(proc)
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b"}}
        await raw.request("initialize", hello)
        assert proc.stdin is not None
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        return raw

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        while True:
            answer: dict[str, Any] = json.loads(await self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()


class Target:
    """One arm: its servers' prelude and the daemon they (and the plain client) call."""

    def __init__(self, prelude: str, d: Daemon, ws: str, env: dict[str, str]) -> None:
        self.prelude, self.d, self.ws, self.env = prelude, d, ws, env


async def run(
    targets: dict[str, Target], queries: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    out: dict[str, Any] = {"load": {}, "slice_ns": {}}
    me = (os.getpid(), threading.get_native_id())
    async with AsyncExitStack() as stack:
        clients: dict[str, AsyncMemoryClient] = {}  # one per daemon
        sessions: dict[str, ClientSession] = {}
        raws: dict[str, Raw] = {}
        for arm, t in targets.items():
            if all(t.d is not targets[c.removeprefix("client-")].d for c in clients):
                client = AsyncMemoryClient(t.d.socket)
                clients[f"client-{arm}"] = await stack.enter_async_context(client)
            cmd = memctl(t.prelude, t.ws)
            params = StdioServerParameters(
                command=cmd[0], args=cmd[1:], env={**t.env, "BENCH_ARM": f"sdk-{arm}"}
            )
            read, write = await stack.enter_async_context(stdio_client(params))
            sessions[f"sdk-{arm}"] = await stack.enter_async_context(ClientSession(read, write))
            await sessions[f"sdk-{arm}"].initialize()
            raws[f"raw-{arm}"] = await Raw.start(cmd, {**t.env, "BENCH_ARM": f"raw-{arm}"})
        waits: dict[str, int] = {}  # the agent's run-queue wait during each path's calls

        async def one(path: str, q: str) -> float:
            ws = targets[path.split("-", 1)[1]].ws
            waited = run_queue_ns(*me)
            t = time.perf_counter()
            if path in clients:
                await clients[path].search(q, workspace=ws)
            elif path in sessions:
                r = await sessions[path].call_tool("memory_search", {"query": q})
                assert not r.isError, r.content
            else:
                call = {"name": "memory_search", "arguments": {"query": q}}
                assert not (await raws[path].request("tools/call", call))["result"].get("isError")
            took = (time.perf_counter() - t) * 1000
            waits[path] = waits.get(path, 0) + run_queue_ns(*me) - waited
            return took

        servers = [*sessions, *raws]
        paths = [*clients, *servers]
        for q in queries:  # warm-up: connections, caches, first-call imports
            for p in paths:
                await one(p, q)
        pids = {arm: server_pid(arm) for arm in servers}
        for arm, pid in pids.items():
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
            out["slice_ns"][arm] = [slice_ns(pid, pid), sorted({slice_ns(pid, t) for t in tids})]
        calls = args.rounds * len(queries)
        for phase, n in (("as is", 0), ("loaded", args.busy)):
            spin = spinners(n, args.load_in == "own")
            try:
                if spin:
                    await asyncio.sleep(1.0)  # every spinner running before the first call
                out["load"][phase] = [round(os.getloadavg()[0], 2)]
                ms: dict[str, list[float]] = {p: [] for p in paths}
                waits.clear()
                before = {arm: cpu_preempted_waited(pid) for arm, pid in pids.items()}
                for r in range(args.rounds):
                    for i, q in enumerate(queries):
                        k = (r + i) % len(paths)
                        for p in paths[k:] + paths[:k]:
                            ms[p].append(await one(p, q))
                out["load"][phase].append(round(os.getloadavg()[0], 2))
                after = {arm: cpu_preempted_waited(pid) for arm, pid in pids.items()}
            finally:
                stop(spin)
            out[phase] = {p: summarize(v) for p, v in ms.items()}
            out[f"{phase} agent wait ms"] = {p: w / calls / 1e6 for p, w in waits.items()}
            out[f"{phase} servers"] = {
                arm: {
                    "cpu_ms": (after[arm][0] - before[arm][0]) * 1000 / calls,
                    "preempted": (after[arm][1] - before[arm][1]) / calls,
                    "loop_wait_ms": (after[arm][2] - before[arm][2]) / calls / 1e6,
                }
                for arm in pids
            }
        for raw in raws.values():
            await raw.close()
    return out


def report(r: dict[str, Any]) -> None:
    print(
        f"{r['chunks']} chunks; {r['busy']} spinning processes (nice 0) in "
        f"{'a session of their own' if r['load_in'] == 'own' else 'the agent session'} "
        f"when loaded; {os.cpu_count()} cores"
    )
    for name, ms in r["daemons_slice_ms"].items():
        print(f"- daemon {name}: status server.answer_slice_ms {ms}")
    for arm, (loop, others) in r["slice_ns"].items():
        print(f"- {arm}: loop thread slice {loop} ns, other threads {others}")
    print(
        "\n| phase (load) | path | n | p50 ms | p95 ms | p99 ms | max ms | p50 / p99 vs default "
        "| agent's run-queue wait ms/call | server loop's run-queue wait ms/call |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for phase in ("as is", "loaded"):
        load = "-".join(map(str, r["load"][phase]))
        for path, s in r[phase].items():
            base = r[phase][path.rsplit("-", 1)[0] + "-default" if "-" in path else path]
            ratio = f"{s['p50'] / base['p50']:.2f} / {s['p99'] / base['p99']:.2f}"
            server = r[f"{phase} servers"].get(path)
            loop = f"{server['loop_wait_ms']:.2f}" if server else "-"
            print(
                f"| {phase} ({load}) | {path} | {s['n']} | {s['p50']:.2f} | {s['p95']:.2f} | "
                f"{s['p99']:.2f} | {s['max']:.1f} | {ratio} | "
                f"{r[f'{phase} agent wait ms'][path]:.2f} | {loop} |"
            )
    if "ts" in r:
        print("\nThe TypeScript SDK's Client as the agent (node), the same phases after:\n")
        print(
            "| phase (load) | path | n | p50 ms | p95 ms | p99 ms | max ms | p50 / p99 vs default |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---|")
        for phase in ("as is", "loaded"):
            load = "-".join(map(str, r["ts"]["load"][phase]))
            base = r["ts"][phase]["ts-default"]
            for path, s in r["ts"][phase].items():
                print(
                    f"| {phase} ({load}) | {path} | {s['n']} | {s['p50']:.2f} | {s['p95']:.2f} | "
                    f"{s['p99']:.2f} | {s['max']:.1f} | {s['p50'] / base['p50']:.2f} / "
                    f"{s['p99'] / base['p99']:.2f} |"
                )
    print()
    for phase in ("as is", "loaded"):
        for arm, c in r[f"{phase} servers"].items():
            print(
                f"- {phase}, {arm} per call: {c['cpu_ms']:.2f} ms CPU, "
                f"preempted {c['preempted']:.2f} times"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--busy", type=int, default=3, help="spinning processes when loaded")
    ap.add_argument("--load-in", choices=("own", "agent"), default="own")
    ap.add_argument(
        "--ts",
        action="store_true",
        help="also the TypeScript SDK's Client as the agent (node; npm ci --prefix "
        "tests/agents/mcp_clients)",
    )
    ap.add_argument(
        "--daemons",
        action="store_true",
        help="instead: the daemon's own slice, a daemon as it is ('default') beside one "
        "that does not ask ('plain'), default servers on each",
    )
    ap.add_argument("--slice-ms", type=float, default=0.6, help="the short arm's slice")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mdsl-", dir="/tmp"))
    here = Path(__file__).resolve().parent.parent
    daemons = {"default": Daemon(tmp / "home", "none")}
    if args.daemons:
        daemons["plain"] = Daemon(tmp / "home-plain", "none", PLAIN_DAEMON)
    try:
        root = make_workspace(tmp / "ws", args.chunks)
        targets: dict[str, Target] = {}
        for name, d in daemons.items():
            d.start(new_session=True)
            ws, chunks, _ = add_workspace(d, shutil.copytree(root, tmp / f"ws-{name}"))
            d.settle()
            env = {
                **d.env,
                "PYTHONPATH": f"{here / 'daemon'}{os.pathsep}{here / 'client'}",
                "BENCH_SLICE_NS": str(int(args.slice_ms * 1e6)),
            }
            targets[name] = Target("default", d, ws, env)
        if not args.daemons:
            d, ws, env = targets["default"].d, targets["default"].ws, targets["default"].env
            targets.update((arm, Target(arm, d, ws, env)) for arm in ARMS[1:])
        result = asyncio.run(run(targets, make_queries(50), args))
        if args.ts and not args.daemons:
            result["ts"] = ts_phases(env, ws, make_queries(50), args, tmp)
        result.update(chunks=chunks, busy=args.busy, load_in=args.load_in, slice_ms=args.slice_ms)
        result["daemons_slice_ms"] = {}
        for name, d in daemons.items():
            with d.client() as c:
                result["daemons_slice_ms"][name] = c.call("status")["server"]["answer_slice_ms"]
    finally:
        for d in daemons.values():
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


if __name__ == "__main__":
    main()
