"""What one search costs, end to end, against a baseline revision and qmd (issue 27's table).

    python bench/search_cost.py [WORKSPACE] [--baseline REV] [--rounds 5] [--local]
                                [--qmd CMD] [--json]

WORKSPACE (default ../shared/bench/locomo-dev/conv-26, read in place, copied to a temp
folder) is the small workspace of the issue. In each round, each code (``--baseline REV``
first, then this tree; bench/scale.py's detached worktree) runs, interleaved so the machine's
load drifts alike for both:

1. a keyword daemon (provider none): ``memctl workspace add --wait`` of WORKSPACE (or
   ``workspace add`` + ``reindex --wait``, two processes, for a code without ``--wait``),
   timed as whole processes (the cold index as a user runs it), and the same for a
   synthetic workspace of 1,001 files (bench/synth.py); and WORKSPACE once more against a
   daemon started 5 s before (a running service, its start's background work over);
2. on WORKSPACE: ``hello`` p50 and keyword search p50 through one ``MemoryClient``
   connection (LoCoMo's questions for the default workspace), the engine's own ``took_ms``
   p50, and the daemon's CPU per search (utime + stime over the timed searches);
3. fresh processes, in turn: ``python -c pass``, ``memctl --version``, ``memctl search --json``
   (bytecode compiled, the daemon of 2 running);
4. with ``--local``, a daemon with the bundled model on WORKSPACE (embedded once per code):
   hybrid p50 with the query vectors cached (a warm-up pass embeds them) and the idle RSS
   after the index is built (VmRSS, 5 s after the last request).

``--qmd CMD`` times qmd on the same files in the same rounds: ``collection add`` (its cold
index), ``--version`` and a fresh ``search --json``. Ratios: this tree ÷ the baseline, qmd ÷
this tree (and ÷ the interpreter's floor for the CLI rows, below the table); machines
differ, so only ratios within one run count.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from latency import Daemon, hello_latency, log
from scale import code_at, daemon
from synth import LOCOMO_DIR, locomo_queries, make_queries, make_workspace

HERE = Path(__file__).resolve().parent
CONV26 = LOCOMO_DIR / "conv-26"
RUNNING_AFTER_S = 5.0  # a daemon's start is over by then (its background imports and loads)
FILES_1001 = 7_273  # chunks for which bench/synth.py writes 1,000 daily files + MEMORY.md


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


def cold_cli(d: Daemon, root: Path) -> tuple[float, str]:
    """A first index as a user runs it: ``memctl workspace add ROOT --wait`` (one process),
    or where the code has no ``--wait`` there, ``workspace add`` then ``reindex --wait``:
    seconds, name."""
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
    return time.perf_counter() - t, name


def searches(d: Daemon, ws: str, queries: list[str], mode: str, rounds: int) -> dict[str, float]:
    ms: list[float] = []
    took: list[float] = []
    with d.client() as c:
        for q in queries:  # warm-up: caches, query vectors
            c.search(q, workspace=ws, mode=mode)
        cpu = d.cpu_seconds()
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                r = c.search(q, workspace=ws, mode=mode)
                ms.append((time.perf_counter() - t) * 1000)
                took.append(r.took_ms or 0.0)
                if r.mode_used != mode:
                    raise SystemExit(f"asked {mode}, got {r.mode_used}: {r.degraded}")
        cpu_ms = (d.cpu_seconds() - cpu) * 1000 / len(ms)
    return {
        "p50": statistics.median(ms),
        "engine_p50": statistics.median(took),
        "cpu_ms": cpu_ms,
    }


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


def one_round(
    code: str, env: dict[str, str], args: argparse.Namespace, tmp: Path, queries: list[str]
) -> dict[str, Any]:
    r: dict[str, Any] = {"code": code, "load": os.getloadavg()[0]}
    home = tmp / f"h-{code}"
    shutil.rmtree(home, ignore_errors=True)
    ws_root = Path(shutil.copytree(args.workspace, tmp / f"w-{code}"))
    d = daemon(home, "none", env)
    try:
        d.start()
        r["cold_s"], ws = cold_cli(d, ws_root)
        r["cold_1001_s"], _ = cold_cli(d, Path(shutil.copytree(tmp / "w1001", tmp / f"x-{code}")))
        d.settle()
        r["hello_p50"] = hello_latency(d)["p50"]
        r["keyword"] = searches(d, ws, queries, "keyword", args.rounds)
        q = queries[0].split()
        r.update(fresh_processes(d, ws, q, 9))
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
        r["cold_running_s"], _ = cold_cli(d, Path(shutil.copytree(ws_root, tmp / f"r-ws-{code}")))
    finally:
        d.stop()
        shutil.rmtree(rhome, ignore_errors=True)
        shutil.rmtree(tmp / f"r-ws-{code}", ignore_errors=True)
    if args.local:
        lhome = tmp / f"l-{code}"
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
    shutil.rmtree(ws_root, ignore_errors=True)
    log(f"[{code}] {json.dumps(r)}")
    return r


def qmd_round(cmd: str, args: argparse.Namespace, tmp: Path, query: str) -> dict[str, Any]:
    home = tmp / "qmd"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    env["XDG_CACHE_HOME"], env["XDG_CONFIG_HOME"] = str(home / "cache"), str(home / "config")

    def qmd(*argv: str) -> Callable[[], Any]:
        return lambda: subprocess.run(
            [*shlex.split(cmd), *argv], env=env, check=True, stdout=subprocess.DEVNULL
        )

    r: dict[str, Any] = {"code": "qmd", "load": os.getloadavg()[0]}
    r["cold_s"] = median_ms(qmd("collection", "add", str(args.workspace), "--name", "w"), 1) / 1000
    r["cold_1001_s"] = median_ms(qmd("collection", "add", str(tmp / "w1001"), "--name", "x"), 1)
    r["cold_1001_s"] /= 1000
    r["version_ms"] = median_ms(qmd("--version"), 9)
    r["search_cli_ms"] = median_ms(qmd("search", "--json", "-c", "w", query), 9)
    shutil.rmtree(home, ignore_errors=True)
    log(f"[qmd] {json.dumps(r)}")
    return r


def report(rows: list[dict[str, Any]], baseline: str | None) -> None:
    def med(code: str, key: str, sub: str | None = None) -> float | None:
        vals = [
            r[key] if sub is None else r[key][sub] for r in rows if r["code"] == code and key in r
        ]
        return statistics.median(vals) if vals else None

    codes = list(dict.fromkeys(r["code"] for r in rows))
    lines = [
        ("hello p50 ms (client)", "hello_p50", None, 3),
        ("keyword search p50 ms (client)", "keyword", "p50", 3),
        ("keyword engine took_ms p50", "keyword", "engine_p50", 3),
        ("keyword daemon CPU ms per search", "keyword", "cpu_ms", 3),
        ("hybrid search p50 ms, query vector cached", "hybrid", "p50", 3),
        ("hybrid engine took_ms p50", "hybrid", "engine_p50", 3),
        ("`python -c pass` ms", "python_ms", None, 1),
        ("`--version` ms", "version_ms", None, 1),
        ("fresh `search --json` ms", "search_cli_ms", None, 1),
        ("cold index, workspace, s (through memctl)", "cold_s", None, 2),
        ("cold index, workspace, s, daemon running 5 s", "cold_running_s", None, 2),
        ("cold index, 1,001 files, s", "cold_1001_s", None, 2),
        ("idle RSS MB, local model", "idle_rss_mb", None, 0),
    ]
    print("| what | " + " | ".join(codes) + " |")
    print("|---|" + "---:|" * len(codes))
    for label, key, sub, digits in lines:
        cells = []
        base = med(baseline, key, sub) if baseline else None
        this = med("this", key, sub)
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
            parts.append(f"client search ÷ client hello {kw / hello:.1f}x")
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


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("workspace", type=Path, nargs="?", default=CONV26)
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (each code once per round)")
    ap.add_argument("--search-rounds", type=int, default=10, help="passes over the queries")
    ap.add_argument("--local", action="store_true", help="also the bundled model's rows")
    ap.add_argument("--qmd", metavar="CMD", help="how to run qmd (see bench/scale.py)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.workspace = args.workspace.resolve()
    rounds, args.rounds = args.rounds, args.search_rounds
    queries = locomo_queries(60) if args.workspace == CONV26.resolve() else make_queries(50)
    rows: list[dict[str, Any]] = []
    codes = ([(args.baseline, args.baseline)] if args.baseline else []) + [("this", None)]
    with _tmpdir() as tmp, contextlib.ExitStack() as stack:
        envs = {
            label: stack.enter_context(code_at(rev, tmp, compiled=True)) for label, rev in codes
        }
        make_workspace(tmp / "w1001", FILES_1001, 1)
        for i in range(rounds):
            log(f"round {i + 1} of {rounds}")
            for label, _ in codes:
                rows.append(one_round(label, envs[label], args, tmp, queries))
            if args.qmd:
                rows.append(qmd_round(args.qmd, args, tmp, queries[0]))
    if args.json:
        print(json.dumps(rows, indent=2))
    report(rows, args.baseline)


@contextlib.contextmanager
def _tmpdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="md-sc-", dir="/tmp"))  # short: a socket lives here
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
