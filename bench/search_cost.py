"""What one search costs, end to end, against a baseline revision and qmd (issues 27, 38).

    python bench/search_cost.py [WORKSPACE] [--baseline REV] [--rounds 5] [--local]
                                [--qmd CMD] [--clients 16] [--only spawn|search] [--json]

WORKSPACE (default LoCoMo dev's conv-26, copied to a temp folder) is the small workspace of
the issues; its questions (conv-26's 150) are the queries. In each round, each code
(``--baseline REV`` first, then this tree; bench/scale.py's detached worktree, bytecode
compiled first) runs, then qmd, interleaved so the machine's load drifts alike for all:

1. a keyword daemon (provider none): ``memctl workspace add --wait`` of WORKSPACE (or
   ``workspace add`` + ``reindex --wait``, two processes, for a code without ``--wait``),
   timed as whole processes (the cold index as a user runs it), and the same for a
   synthetic workspace of 1,001 files (bench/synth.py); and WORKSPACE once more against a
   daemon started 5 s before (a running service, its start's background work over);
2. on WORKSPACE: ``hello`` p50 and keyword search p50/p99 (10 hits, min score 0) through
   one ``MemoryClient`` connection, the engine's own ``took_ms`` p50, the daemon's CPU per
   search (utime + stime over the timed searches); hello and search p50 again with the
   daemon and the client pinned to two cores and to one (placement.py: the scheduler's
   choice moves a round's search ÷ hello); then ``--clients`` processes searching
   back to back for ``--seconds`` (latency.throughput): searches/s and the daemon's CPU per
   search during that run;
3. fresh processes, in turn: ``python -c pass``, ``memctl --version``, ``memctl search --json``
   (the daemon of 2 running);
4. spawn → first keyword answer: the daemon stopped and spawned again on that index, timed
   until a client's first search is answered (a daemon started for the question), 3 times,
   with the daemon's CPU seconds by then;
   and the same under socket activation (startup.activated_answer: the socket listens
   before the daemon exists, the question waits in its backlog);
5. with ``--local``, a daemon with the bundled model on WORKSPACE (embedded once per code):
   hybrid p50 with the query vectors cached (a warm-up pass embeds them) and the idle RSS
   after the index is built (VmRSS, 5 s after the last request).

The cold indexes of 1,001 files and the spawns also give their CPU seconds (the daemon's
and memctl's; qmd's command or server): on a loaded machine the wall clock is mostly
waiting for a core, CPU time is what the load leaves alone.

``--qmd CMD`` runs qmd (bench/qmd_peer.py: keyword side only, its models cannot be
downloaded here) on the same files in the same rounds: ``collection add`` (its cold index),
``--version`` and a fresh ``search --json``; its HTTP server (``qmd mcp --http``, REST
``/search``, lex): spawn → first answer, p50/p99 over one keep-alive connection, the same
``--clients`` throughput, and the server's CPU per search. The first table is issue 38's,
with this tree ÷ qmd; the second every row with this ÷ the baseline and qmd ÷ this.
Machines differ, so only ratios within one run count.

``--only spawn`` runs the spawn rows alone (4; qmd's spawn too): each code's first index of
WORKSPACE, then ``--spawns`` spawns and socket-activated starts per round (default 3).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import qmd_peer
from latency import Daemon, hello_latency, log, settle_cpu, summarize, throughput
from placement import placed_latency, placed_summary
from scale import code_at, daemon
from startup import activated_answer
from synth import LOCOMO_DIR, conv_questions, make_queries, make_workspace

HERE = Path(__file__).resolve().parent
CONV26 = LOCOMO_DIR / "conv-26"
RUNNING_AFTER_S = 5.0  # a daemon's start is over by then (its background imports and loads)
FILES_1001 = 7_273  # chunks for which bench/synth.py writes 1,000 daily files + MEMORY.md
SPAWNS = 3  # spawn -> first answer, per round and code


def median_ms(run: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def memctl(env: dict[str, str]) -> list[str]:
    """memctl as its console script runs it, from the tree the environment's PYTHONPATH
    names (the baseline's worktree) or else this one. A tree older than the lean entry
    module (memoryd_client._memctl) is entered through memoryd_client.cli, as its script
    was: today's script cannot import the baseline's package."""
    paths = [Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    client = next((p for p in paths if p.name == "client"), HERE.parent / "client")
    lean = (client / "memoryd_client" / "_memctl.py").exists()
    entry = "memoryd_client._memctl" if lean else "memoryd_client.cli"
    return [sys.executable, "-c", f"import sys; from {entry} import main; sys.exit(main())"]


def cli(d: Daemon, *argv: str) -> Callable[[], Any]:
    cmd = [*memctl(d.env), *argv]
    return lambda: subprocess.run(cmd, env=d.env, check=True, stdout=subprocess.DEVNULL)


def children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's children waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def daemon_cpu_s(d: Daemon) -> float:
    """The daemon's CPU seconds with its children's it has waited for: a bulk index chunks
    in worker processes (index/prepare.py), joined when it ends."""
    stat = Path(f"/proc/{d.pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # u, s, cu, cs


def cold_cli(d: Daemon, root: Path) -> tuple[float, str, float]:
    """A first index as a user runs it: ``memctl workspace add ROOT --wait`` (one process),
    or where the code has no ``--wait`` there, ``workspace add`` then ``reindex --wait``:
    seconds, name, and the CPU seconds it took (the daemon's and memctl's: what a loaded
    machine leaves alone, where the wall clock is mostly waiting for a core)."""
    cpu = daemon_cpu_s(d) + children_cpu_s()
    t = time.perf_counter()
    out = subprocess.run(
        [*memctl(d.env), "workspace", "add", str(root), "--wait", "--json"],
        env=d.env,
        capture_output=True,
        text=True,
    )
    if out.returncode == 2:  # usage: no --wait in this code
        out = subprocess.run(
            [*memctl(d.env), "workspace", "add", str(root), "--json"],
            env=d.env,
            check=True,
            capture_output=True,
            text=True,
        )
        name = str(json.loads(out.stdout)["name"])
        cli(d, "reindex", "--workspace", name, "--wait")()
    else:
        out.check_returncode()
        name = str(json.loads(out.stdout)["name"])
    took = time.perf_counter() - t
    return took, name, daemon_cpu_s(d) + children_cpu_s() - cpu


def searches(d: Daemon, ws: str, queries: list[str], mode: str, rounds: int) -> dict[str, float]:
    """``rounds`` passes over ``queries`` (10 hits, min score 0) on one connection, after a
    warm-up pass and the daemon idle again: p50, p99, the engine's took_ms p50 and the
    daemon's CPU per search."""
    ms: list[float] = []
    took: list[float] = []
    with d.client() as c:
        for q in queries:  # warm-up: caches, query vectors
            c.search(q, workspace=ws, mode=mode, max_results=10, min_score=0)
        # the warm-up's after-work (hit counting of new questions; with --local the
        # model's threads and the vectors just embedded) is not a cached search's cost
        settle_cpu(d)
        cpu = d.cpu_seconds()
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                r = c.search(q, workspace=ws, mode=mode, max_results=10, min_score=0)
                ms.append((time.perf_counter() - t) * 1000)
                took.append(r.took_ms or 0.0)
                if r.mode_used != mode:
                    raise SystemExit(f"asked {mode}, got {r.mode_used}: {r.degraded}")
        cpu_ms = (d.cpu_seconds() - cpu) * 1000 / len(ms)
    s = summarize(ms)
    return {
        "p50": s["p50"],
        "p99": s["p99"],
        "engine_p50": statistics.median(took),
        "cpu_ms": cpu_ms,
    }


def spawn_to_answer(d: Daemon, ws: str, query: str) -> tuple[float, float]:
    """Seconds from spawning ``memoryd run`` on an existing index to its first keyword
    answer (the client retries its connect every 2 ms, as Daemon.start does), and the
    daemon's CPU seconds by then."""
    t = time.perf_counter()
    d.start()
    with d.client() as c:
        c.search(query, workspace=ws, mode="keyword", max_results=10, min_score=0)
        took = time.perf_counter() - t
        cpu = daemon_cpu_s(d)
    d.stop()
    return took, cpu


def fresh_processes(d: Daemon, ws: str, q: list[str], n: int) -> dict[str, float]:
    """``python -c pass``, ``memctl --version`` and ``memctl search --json`` in turn, ``n``
    times each (a load that comes and goes hits the three alike); their medians, and the
    median of each turn's search ÷ pass."""
    runs = {
        "python_ms": lambda: subprocess.run([sys.executable, "-c", "pass"]),
        "version_ms": cli(d, "--version"),
        "search_cli_ms": cli(d, "search", "-w", ws, "--json", *q),
    }
    ms: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(n):
        for key, run in runs.items():
            t = time.perf_counter()
            run()
            ms[key].append((time.perf_counter() - t) * 1000)
    out = {key: statistics.median(values) for key, values in ms.items()}
    pairs = zip(ms["search_cli_ms"], ms["python_ms"], strict=True)
    out["search_per_pass"] = statistics.median(s / p for s, p in pairs)
    return out


def spawns(d: Daemon, r: dict[str, Any], ws: str, n: int, queries: list[str]) -> None:
    """Row 4: ``n`` spawns, then ``n`` socket-activated starts, of a stopped daemon."""
    took = [spawn_to_answer(d, ws, queries[i]) for i in range(1, n + 1)]
    r["spawn_s"] = statistics.median(s for s, _ in took)
    r["spawn_cpu_s"] = statistics.median(c for _, c in took)
    r["activated_s"] = statistics.median(
        activated_answer(d, ws, queries[i]) for i in range(1, n + 1)
    )


def spawn_round(
    d: Daemon, r: dict[str, Any], ws_root: Path, n: int, queries: list[str]
) -> dict[str, Any]:
    """``--only spawn``: WORKSPACE's first index, then row 4 alone."""
    try:
        d.start()
        r["cold_s"], ws, _ = cold_cli(d, ws_root)
        d.stop()
        spawns(d, r, ws, n, queries)
    finally:
        d.stop()
        shutil.rmtree(d.home, ignore_errors=True)
        shutil.rmtree(ws_root, ignore_errors=True)
    log(f"[{r['code']}] {json.dumps(r)}")
    return r


def search_round(
    d: Daemon,
    r: dict[str, Any],
    ws_root: Path,
    args: argparse.Namespace,
    queries: list[str],
    env: dict[str, str],
    tmp: Path,
) -> dict[str, Any]:
    """``--only search``: the per-search rows alone (hello, keyword p50/p99 and CPU, the
    throughput run and its CPU; with --local the hybrid row), each code as in a full round."""
    try:
        d.start()
        _, ws, _ = cold_cli(d, ws_root)
        d.settle()
        r["hello_p50"] = hello_latency(d)["p50"]
        r["keyword"] = searches(d, ws, queries, "keyword", args.rounds)
        r["placed"] = placed_latency(d, ws, queries)
        tp = throughput(d, ws, queries, args.clients, args.seconds)
        r["qps"], r["tp_cpu_ms"] = tp["qps"], tp["daemon_cpu_ms_per_search"]
    finally:
        d.stop()
        shutil.rmtree(d.home, ignore_errors=True)
    if args.local:
        hybrid_rows(r, ws_root, args, queries, env, tmp)
    shutil.rmtree(ws_root, ignore_errors=True)
    log(f"[{r['code']}] {json.dumps(r)}")
    return r


def hybrid_rows(
    r: dict[str, Any],
    ws_root: Path,
    args: argparse.Namespace,
    queries: list[str],
    env: dict[str, str],
    tmp: Path,
) -> None:
    """The hybrid row (the bundled model; query vectors cached by the first pass) and the
    idle RSS."""
    lhome = tmp / f"l-{r['code']}"
    d = daemon(lhome, "local", env)
    try:
        d.start()
        with d.client(timeout=3600) as c:
            name = c.workspace_add(ws_root).name
            c.reindex(workspace=name, wait=True)
        d.settle()
        r["hybrid"] = searches(d, name, queries, "hybrid", args.rounds)
        time.sleep(5)
        r["idle_rss_mb"] = d.proc_status()["VmRSS"]
    finally:
        d.stop()
        shutil.rmtree(lhome, ignore_errors=True)


def one_round(
    code: str, env: dict[str, str], args: argparse.Namespace, tmp: Path, queries: list[str]
) -> dict[str, Any]:
    r: dict[str, Any] = {"code": code, "load": os.getloadavg()[0]}
    home = tmp / f"h-{code}"
    shutil.rmtree(home, ignore_errors=True)
    ws_root = Path(shutil.copytree(args.workspace, tmp / f"w-{code}"))
    d = daemon(home, "none", env)
    if args.only == "spawn":
        return spawn_round(d, r, ws_root, args.spawns, queries)
    if args.only == "search":
        return search_round(d, r, ws_root, args, queries, env, tmp)
    try:
        d.start()
        r["cold_s"], ws, _ = cold_cli(d, ws_root)
        big_root = Path(shutil.copytree(tmp / "w1001", tmp / f"x-{code}"))
        r["cold_1001_s"], big, r["cold_1001_cpu_s"] = cold_cli(d, big_root)
        with d.client() as c:  # the rows below are conv-26's alone, as qmd's index holds
            c.workspace_remove(big, delete_index=True)
        d.settle()
        r["hello_p50"] = hello_latency(d)["p50"]
        r["keyword"] = searches(d, ws, queries, "keyword", args.rounds)
        r["placed"] = placed_latency(d, ws, queries)
        tp = throughput(d, ws, queries, args.clients, args.seconds)
        r["qps"], r["tp_cpu_ms"] = tp["qps"], tp["daemon_cpu_ms_per_search"]
        q = queries[0].split()
        r.update(fresh_processes(d, ws, q, 9))
        d.stop()
        spawns(d, r, ws, SPAWNS, queries)
    finally:
        d.stop()
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(tmp / f"x-{code}", ignore_errors=True)
    # The same first index against a daemon that has been running a few seconds (a user's
    # service): the row above also pays for the start's background work (engine import,
    # tokenizer, watcher, scheduler) that a daemon just spawned does beside the add.
    rhome = tmp / f"r-{code}"
    d = daemon(rhome, "none", env)
    try:
        d.start()
        time.sleep(RUNNING_AFTER_S)
        r["cold_running_s"], _, _ = cold_cli(
            d, Path(shutil.copytree(ws_root, tmp / f"r-ws-{code}"))
        )
    finally:
        d.stop()
        shutil.rmtree(rhome, ignore_errors=True)
        shutil.rmtree(tmp / f"r-ws-{code}", ignore_errors=True)
    if args.local:
        hybrid_rows(r, ws_root, args, queries, env, tmp)
    shutil.rmtree(ws_root, ignore_errors=True)
    log(f"[{code}] {json.dumps(r)}")
    return r


def qmd_spawns(q: qmd_peer.Qmd, n: int, queries: list[str]) -> dict[str, float]:
    took = []
    for i in range(1, n + 1):
        took.append((q.serve(queries[i]), qmd_peer.cpu_s(q.server_pid)))
        q.stop_server()
    return {
        "spawn_s": statistics.median(s for s, _ in took),
        "spawn_cpu_s": statistics.median(c for _, c in took),
    }


def qmd_round(cmd: str, args: argparse.Namespace, tmp: Path, queries: list[str]) -> dict[str, Any]:
    q = qmd_peer.Qmd(cmd, tmp / "qmd")
    r: dict[str, Any] = {"code": "qmd", "load": os.getloadavg()[0]}
    try:
        r["cold_s"] = q.add(args.workspace, "w")
        if args.only == "spawn":
            r.update(qmd_spawns(q, args.spawns, queries))
        elif args.only == "search":
            qmd_search_rows(q, r, args, queries)
        else:
            qmd_rows(q, r, cmd, args, tmp, queries)
    finally:
        q.stop()
    log(f"[qmd] {json.dumps(r)}")
    return r


def qmd_rows(
    q: qmd_peer.Qmd,
    r: dict[str, Any],
    cmd: str,
    args: argparse.Namespace,
    tmp: Path,
    queries: list[str],
) -> None:
    big = qmd_peer.Qmd(cmd, tmp / "qmd1001")  # an index of its own, as memoryd's
    cpu = children_cpu_s()
    r["cold_1001_s"] = big.add(tmp / "w1001", "x")
    r["cold_1001_cpu_s"] = children_cpu_s() - cpu
    big.stop()
    r["version_ms"] = median_ms(q.cli("--version"), 9)
    r["search_cli_ms"] = qmd_peer.cli_search_ms(q, "w", queries[0], 9)
    r.update(qmd_spawns(q, SPAWNS, queries))
    qmd_search_rows(q, r, args, queries)


def qmd_search_rows(
    q: qmd_peer.Qmd, r: dict[str, Any], args: argparse.Namespace, queries: list[str]
) -> None:
    q.serve(queries[0])
    lat = qmd_peer.latency(q, queries, args.rounds)
    r["keyword"] = {"p50": lat["p50"], "p99": lat["p99"], "cpu_ms": lat["cpu_ms"]}
    tp = qmd_peer.throughput(q, queries, args.clients, args.seconds)
    r["qps"], r["tp_cpu_ms"] = tp["qps"], tp["cpu_ms_per_search"]


ISSUE_ROWS = (  # issue 38's table: (label, key, sub, digits, goal)
    ("keyword search p50 ms, conv-26", "keyword", "p50", 3, "-"),
    ("keyword search p99 ms, conv-26", "keyword", "p99", 3, "p99 <= 2x p50"),
    ("{clients}-client throughput, searches/s", "qps", None, 0, ">= 2x qmd"),
    ("server CPU per search during that run, ms", "tp_cpu_ms", None, 3, "<= 0.5x qmd"),
    ("hybrid p50 ms, cached query vectors (qmd: keyword)", "hybrid", "p50", 3, "<= 1.0x"),
    ("spawn -> first keyword answer, s", "spawn_s", None, 3, "<= 0.5x"),
    ("  the server's CPU by then, s", "spawn_cpu_s", None, 3, "(load-independent)"),
    ("cold index, 1,001 files, s", "cold_1001_s", None, 2, "<= 1.0x"),
    ("  its CPU, s (every process)", "cold_1001_cpu_s", None, 2, "(load-independent)"),
)
LINES = (  # every row: (label, key, sub, digits)
    ("hello p50 ms (client)", "hello_p50", None, 3),
    ("keyword search p50 ms (client)", "keyword", "p50", 3),
    ("keyword search p99 ms (client)", "keyword", "p99", 3),
    ("keyword engine took_ms p50", "keyword", "engine_p50", 3),
    ("keyword server CPU ms per search, one client", "keyword", "cpu_ms", 3),
    ("throughput, searches/s", "qps", None, 0),
    ("server CPU ms per search, throughput run", "tp_cpu_ms", None, 3),
    ("hybrid search p50 ms, query vector cached", "hybrid", "p50", 3),
    ("hybrid engine took_ms p50", "hybrid", "engine_p50", 3),
    ("spawn -> first keyword answer, s", "spawn_s", None, 3),
    ("server CPU s by the first answer", "spawn_cpu_s", None, 3),
    ("socket-activated spawn -> answer, s", "activated_s", None, 3),
    ("`python -c pass` ms", "python_ms", None, 1),
    ("`--version` ms", "version_ms", None, 1),
    ("fresh `search --json` ms", "search_cli_ms", None, 1),
    ("cold index, workspace, s (through memctl)", "cold_s", None, 2),
    ("cold index, workspace, s, daemon running 5 s", "cold_running_s", None, 2),
    ("cold index, 1,001 files, s", "cold_1001_s", None, 2),
    ("cold index, 1,001 files, CPU s (every process)", "cold_1001_cpu_s", None, 2),
    ("idle RSS MB, local model", "idle_rss_mb", None, 0),
)


def report(rows: list[dict[str, Any]], baseline: str | None, clients: int) -> None:
    def med(code: str | None, key: str, sub: str | None = None) -> float | None:
        vals = [
            r[key] if sub is None else r[key][sub]
            for r in rows
            if r["code"] == code and key in r and (sub is None or sub in r[key])
        ]
        return statistics.median(vals) if vals else None

    codes = list(dict.fromkeys(r["code"] for r in rows))
    if "qmd" in codes:
        _issue_table(med, baseline, clients, rows)
    print("| what | " + " | ".join(codes) + " |")
    print("|---|" + "---:|" * len(codes))
    for label, key, sub, digits in LINES:
        cells = []
        base, this = med(baseline, key, sub), med("this", key, sub)
        for code in codes:
            v = med(code, key, sub)
            if v is None:
                cells.append("-")
                continue
            # this ÷ the baseline; qmd's ÷ this tree's (the peer against the code under test)
            of = this if code == "qmd" else base if code == "this" else None
            ratio = f" ({v / of:.2f}x)" if of else ""
            cells.append(f"{v:.{digits}f}{ratio}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\nDerived (medians):\n")
    for code in codes:
        hello, kw = med(code, "hello_p50"), med(code, "keyword", "p50")
        py, srch = med(code, "python_ms"), med(code, "search_cli_ms")
        parts = []
        if hello and kw:
            each = ", ".join(f"{x:.2f}" for x in round_ratios(rows, code))
            parts.append(f"client search ÷ client hello {kw / hello:.1f}x (rounds: {each})")
        if pinned := placed_summary(rows, code):
            parts.append(f"pinned: {pinned}")
        if py and srch:
            parts.append(f"fresh `search --json` ÷ `python -c pass` {srch / py:.2f}x")
        per_turn = med(code, "search_per_pass")
        if per_turn:  # the same, turn by turn: what load drift leaves alone
            parts.append(f"its median turn by turn {per_turn:.2f}x")
        if parts:
            print(f"- {code}: " + "; ".join(parts))
    qmd_cold, running = med("qmd", "cold_s"), med("this", "cold_running_s")
    if qmd_cold and running:  # qmd has no daemon: its cold index is one fresh process
        ratio = running / qmd_cold
        print(f"- this tree's cold index against a running daemon ÷ qmd's: {ratio:.2f}x")
    loads = [r["load"] for r in rows]
    n = len(rows) // max(1, len(codes))
    print(
        f"\nmedians of {n} interleaved rounds; load average (1 min) {min(loads):.1f}-"
        f"{max(loads):.1f} on {os.cpu_count()} cores; python {sys.version.split()[0]}"
    )


def _issue_table(
    med: Callable[..., float | None],
    baseline: str | None,
    clients: int,
    rows: list[dict[str, Any]],
) -> None:
    """Issue 38's rows: qmd, the baseline, this tree and this ÷ qmd (the hybrid row against
    qmd's keyword p50: its vectors need models this machine cannot download)."""
    head = ["qmd", *([baseline] if baseline else []), "this", "this ÷ qmd", "goal"]
    print("| metric | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1) + "---|")
    for label, key, sub, digits, goal in ISSUE_ROWS:
        peer = med("qmd", "keyword", "p50") if key == "hybrid" else med("qmd", key, sub)
        cells = [med(c, key, sub) for c in ["qmd", *([baseline] if baseline else []), "this"]]
        cells[0] = peer
        shown = ["-" if v is None else f"{v:.{digits}f}" for v in cells]
        this = cells[-1]
        ratio = f"{this / peer:.2f}" if this is not None and peer else "-"
        print(f"| {label.format(clients=clients)} | " + " | ".join([*shown, ratio, goal]) + " |")
    hello, kw = med("this", "hello_p50"), med("this", "keyword", "p50")
    if hello and kw:
        own = statistics.median(round_ratios(rows, "this"))
        print(
            "| client search ÷ client hello | - | "
            + "- | " * bool(baseline)
            + f"{kw / hello:.1f}x (rounds' median {own:.2f}x) | - | <= 3x |"
        )
        if pinned := placed_summary(rows, "this"):
            print(f"| the same, pinned ({pinned}) | - | " + "- | " * bool(baseline) + "- | - | - |")
    print()


def round_ratios(rows: list[dict[str, Any]], code: str) -> list[float]:
    """Each round's own search ÷ hello for ``code``: each round starts a new daemon, and
    where the scheduler puts it and the client (one core or two) moves a hello's round trip
    by up to 2x on a small VM, so the median of medians alone can flatter or hide a change."""
    return [
        r["keyword"]["p50"] / r["hello_p50"]
        for r in rows
        if r["code"] == code and r.get("hello_p50") and "p50" in r.get("keyword", {})
    ]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("workspace", type=Path, nargs="?", default=CONV26)
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (each code once per round)")
    ap.add_argument("--search-rounds", type=int, default=3, help="passes over the queries")
    ap.add_argument("--clients", type=int, default=16, help="processes of the throughput run")
    ap.add_argument("--seconds", type=float, default=5.0, help="of the throughput run")
    ap.add_argument("--local", action="store_true", help="also the bundled model's rows")
    ap.add_argument("--qmd", metavar="CMD", help="how to run qmd (see bench/scale.py)")
    ap.add_argument("--only", choices=("spawn", "search"), help="only these rows")
    ap.add_argument("--spawns", type=int, default=SPAWNS, help="per round, with --only spawn")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.workspace = args.workspace.resolve()
    rounds, args.rounds = args.rounds, args.search_rounds
    conv26 = args.workspace == CONV26.resolve()
    queries = conv_questions("conv-26", 150) if conv26 else make_queries(50)
    rows: list[dict[str, Any]] = []
    codes = ([(args.baseline, args.baseline)] if args.baseline else []) + [("this", None)]
    with _tmpdir() as tmp, contextlib.ExitStack() as stack:
        envs = {
            label: stack.enter_context(code_at(rev, tmp, compiled=True)) for label, rev in codes
        }
        if args.only is None:
            make_workspace(tmp / "w1001", FILES_1001, 1)
        for i in range(rounds):
            log(f"round {i + 1} of {rounds}")
            for label, _ in codes:
                rows.append(one_round(label, envs[label], args, tmp, queries))
            if args.qmd:
                rows.append(qmd_round(args.qmd, args, tmp, queries))
    if args.json:
        print(json.dumps(rows, indent=2))
    report(rows, args.baseline, args.clients)


@contextlib.contextmanager
def _tmpdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="md-sc-", dir="/tmp"))  # short: a socket lives here
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
