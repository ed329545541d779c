"""The cold index of 1,001 files alone, against a baseline revision and qmd (issue 38 §3).

    python bench/cold_index.py [--baseline REV] [--rounds 5] [--qmd CMD] [--json]

search_cost.py's row, without the rest of its run: in each round, each code (``--baseline
REV`` first, then this tree) starts a keyword daemon (provider none), indexes LoCoMo's
conv-26 as search_cost.py does first (the daemon's start is over by then), then times
``memctl workspace add W1001 --wait`` (bench/synth.py's 1,000 daily files + MEMORY.md,
7,273 chunks) as one process; then qmd's ``collection add`` of the same files in an index of
its own. Interleaved so the machine's load drifts alike for all.

Besides the wall clock, the CPU seconds of every process, split: the daemon itself, its
children it waited for (the chunking workers, prepare.py) and memctl; qmd's command. On a
loaded machine the wall clock is mostly waiting for a core: the CPU rows are what the load
leaves alone. And the daemon's RSS once the index is built.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import qmd_peer
from latency import log
from scale import code_at, daemon
from search_cost import CONV26, FILES_1001, _tmpdir, children_cpu_s, memctl
from synth import make_workspace


def proc_cpu_s(pid: int) -> tuple[float, float]:
    """A process's own CPU seconds and its waited-for children's (user + system)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = [int(f) for f in stat[stat.rindex(")") + 2 :].split()[11:15]]
    tick = os.sysconf("SC_CLK_TCK")
    return (fields[0] + fields[1]) / tick, (fields[2] + fields[3]) / tick


def add_wait(env: dict[str, str], root: Path) -> str:
    out = subprocess.run(
        [*memctl(env), "workspace", "add", str(root), "--wait", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return str(json.loads(out.stdout)["name"])


def memoryd_round(code: str, env: dict[str, str], tmp: Path) -> dict[str, Any]:
    r: dict[str, Any] = {"code": code, "load": os.getloadavg()[0]}
    home = tmp / f"h-{code}"
    shutil.rmtree(home, ignore_errors=True)
    ws = Path(shutil.copytree(CONV26, tmp / f"w-{code}"))
    big = Path(shutil.copytree(tmp / "w1001", tmp / f"x-{code}"))
    d = daemon(home, "none", env)
    try:
        d.start()
        add_wait(d.env, ws)
        own, kids = proc_cpu_s(d.pid)
        cli = children_cpu_s()
        t = time.perf_counter()
        add_wait(d.env, big)
        r["wall_s"] = time.perf_counter() - t
        own2, kids2 = proc_cpu_s(d.pid)
        r["daemon_cpu_s"], r["workers_cpu_s"] = own2 - own, kids2 - kids
        r["memctl_cpu_s"] = children_cpu_s() - cli
        r["cpu_s"] = r["daemon_cpu_s"] + r["workers_cpu_s"] + r["memctl_cpu_s"]
        r["rss_mb"] = d.proc_status()["VmRSS"]
    finally:
        d.stop()
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(big, ignore_errors=True)
    log(f"[{code}] {json.dumps(r)}")
    return r


def qmd_round(cmd: str, tmp: Path) -> dict[str, Any]:
    r: dict[str, Any] = {"code": "qmd", "load": os.getloadavg()[0]}
    q = qmd_peer.Qmd(cmd, tmp / "qmd1001")
    try:
        cpu = children_cpu_s()
        r["wall_s"] = q.add(tmp / "w1001", "x")
        r["cpu_s"] = children_cpu_s() - cpu
    finally:
        q.stop()
    log(f"[qmd] {json.dumps(r)}")
    return r


ROWS = [
    ("wall clock, s", "wall_s"),
    ("CPU, s (every process)", "cpu_s"),
    ("  daemon", "daemon_cpu_s"),
    ("  chunking workers", "workers_cpu_s"),
    ("  memctl", "memctl_cpu_s"),
    ("daemon's RSS after it, MB", "rss_mb"),
]


def report(rows: list[dict[str, Any]], codes: list[str]) -> None:
    def med(code: str, key: str) -> float | None:
        vals = [r[key] for r in rows if r["code"] == code and key in r]
        return statistics.median(vals) if vals else None

    names = [*codes, *(["qmd"] if any(r["code"] == "qmd" for r in rows) else [])]
    ratio = "qmd" in names
    print(f"| what | {' | '.join(names)} |" + (" this ÷ qmd |" if ratio else ""))
    print("|---|" + "---:|" * (len(names) + ratio))
    for label, key in ROWS:
        vals = [med(c, key) for c in names]
        cells = ["-" if v is None else f"{v:.2f}" for v in vals]
        this, peer = med("this", key), med("qmd", key)
        extra = [f"{this / peer:.2f}" if this and peer else "-"] if ratio else []
        print(f"| {label} | " + " | ".join(cells + extra) + " |")
    loads = [r["load"] for r in rows]
    print(
        f"\nmedians of {len(rows) // max(len(names), 1)} interleaved rounds; "
        f"load average (1 min) {min(loads):.1f}-{max(loads):.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--qmd", metavar="CMD", help="how to run qmd (see bench/qmd_peer.py)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    codes = ([(args.baseline, args.baseline)] if args.baseline else []) + [("this", None)]
    rows: list[dict[str, Any]] = []
    with _tmpdir() as tmp, contextlib.ExitStack() as stack:
        envs = {
            label: stack.enter_context(code_at(rev, tmp, compiled=True)) for label, rev in codes
        }
        make_workspace(tmp / "w1001", FILES_1001, 1)
        for i in range(args.rounds):
            log(f"round {i + 1} of {args.rounds}")
            for label, _ in codes:
                rows.append(memoryd_round(label, envs[label], tmp))
            if args.qmd:
                rows.append(qmd_round(args.qmd, tmp))
    if args.json:
        print(json.dumps(rows, indent=2))
    report(rows, [label for label, _ in codes])


if __name__ == "__main__":
    main()
