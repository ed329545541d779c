"""A search's tail, several codes side by side in one run (issue 38's regression).

    python bench/tail.py [--rev REV ...] [--passes 3] [--questions 150] [--json]

Each code (every ``--rev``, default 71945d4, then this tree; bench/scale.py's detached
worktrees, bytecode compiled first) gets its own keyword daemon (provider none) with
WORKSPACE (default LoCoMo dev's conv-26) indexed and settled. Then conv-26's questions are
asked ``--passes`` times, 10 hits, min score 0, through one connection per daemon, each
question to every daemon in turn (the order rotating), so a load burst hits all codes alike.

Printed per code: p50, p99, max of the client's wall clock, and how many of the searches
took over 2x, 5x and 10x this code's p50 (the goal: p99 <= 2x p50, none over 10x), and the
CPU each of the daemon's threads spent over the timed searches.

On a shared machine the wall clock's tail is mostly other processes' (a search preempted
for a few ms). ``--probe`` looks inside the daemons instead (bench/_stall_probe, first on
their path): every collection of the two older generations and every event-loop callback
over STALL_PROBE_MS (3) of wall clock, each with its CPU time, and what was seen during the
slowest 1% of searches; with STALL_PROBE_STACKS=1 a thread samples the loop's stack during
long callbacks (it wakes every 2 ms, so it competes for the GIL itself: diagnosis only).
CPU times are what a loaded machine leaves alone: a full collection of 30 ms of CPU is the
daemon's stall whatever the load.
``--waits`` (bench/waits.py) puts each search over 5x p50 down to a cause as the kernel
counts it: the daemon's CPU, a wait on a run queue (the daemon's loop thread or the client),
the hypervisor's steal, or none of these. ``--sched`` (bench/holders.py, perf sched) names
who had the cores meanwhile: the bench's daemons, other processes, or idle cores.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import holders
from latency import Daemon, log, summarize
from scale import code_at, daemon
from synth import LOCOMO_DIR as LOCOMO
from synth import conv_questions
from waits import Waits, account, spent

PROBE = Path(__file__).resolve().parent / "_stall_probe"


def start(
    label: str, env: dict[str, str], tmp: Path, workspace: Path, probe: bool
) -> tuple[Daemon, str]:
    home = tmp / f"h-{label}"
    root = Path(shutil.copytree(workspace, tmp / f"w-{label}"))
    if probe:  # bench/_stall_probe first on the daemon's path: its stalls to a file
        path = [str(PROBE), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
        env = {
            **env,
            "PYTHONPATH": os.pathsep.join(path),
            "STALL_PROBE_OUT": str(tmp / f"probe-{label}"),
        }
    d = daemon(home, "none", env)
    d.start()
    with d.client(timeout=600) as c:
        name = c.workspace_add(root).name
        c.reindex(workspace=name, wait=True)
    d.settle()
    return d, name


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    questions = conv_questions(args.conv, args.questions)
    labels = [*args.rev, "this"]
    with contextlib.ExitStack() as stack:
        daemons: dict[str, tuple[Daemon, str]] = {}
        for label in labels:
            env = stack.enter_context(code_at(None if label == "this" else label, tmp, True))
            d, name = start(label.replace("/", "_"), env, tmp, args.workspace, args.probe)
            stack.callback(d.stop)
            daemons[label] = (d, name)
        time.sleep(args.quiet)  # the start's background work (imports, scheduler) is over
        clients = {k: stack.enter_context(d.client()) for k, (d, _) in daemons.items()}
        for label, c in clients.items():  # warm-up: caches
            for q in questions:
                c.search(q, workspace=daemons[label][1], max_results=10, min_score=0)
        threads0 = {k: thread_cpu(d.pid) for k, (d, _) in daemons.items()}
        waits = {k: Waits(d.pid) for k, (d, _) in daemons.items()} if args.waits else {}
        spent_: dict[str, list[Any]] = {k: [] for k in labels}
        ms: dict[str, list[float]] = {k: [] for k in labels}
        at: dict[str, list[float]] = {k: [] for k in labels}
        mono: dict[str, list[float]] = {k: [] for k in labels}
        loads = [os.getloadavg()[0]]
        sched = tmp / "sched.data"
        recording = holders.recorded(sched) if args.sched else contextlib.nullcontext(sched)
        with recording:
            for p in range(args.passes):
                for i, q in enumerate(questions):
                    k = (i + p) % len(labels)
                    for label in labels[k:] + labels[:k]:
                        w0 = waits[label].sample() if waits else None
                        at[label].append(time.time())
                        mono[label].append(time.monotonic())
                        t = time.perf_counter()
                        clients[label].search(
                            q, workspace=daemons[label][1], max_results=10, min_score=0
                        )
                        ms[label].append((time.perf_counter() - t) * 1000)
                        if w0 is not None:
                            spent_[label].append(spent(w0, waits[label].sample()))
                loads.append(os.getloadavg()[0])
        threads = {k: thread_cpu(d.pid) for k, (d, _) in daemons.items()}
        pids = {k: d.pid for k, (d, _) in daemons.items()}
    out: dict[str, Any] = {"loads": loads, "codes": {}}
    spells = holders.spells(sched) if args.sched else []
    for label in labels:
        s = summarize(ms[label])
        p50 = s["p50"]
        s["over"] = {f"{x}x": sum(v > x * p50 for v in ms[label]) for x in (2, 5, 10)}
        s["worst"] = sorted(ms[label])[-5:]
        out["codes"][label] = s
        before = threads0[label]
        s["thread_cpu_ms"] = {
            name: round(ms_ - before.get(name, 0.0), 1)
            for name, ms_ in threads[label].items()
            if ms_ - before.get(name, 0.0) > 0
        }
        if waits:
            s["waits"] = account(ms[label], spent_[label], p50)
        if args.probe:
            s["stalls"] = stalls(tmp / f"probe-{label.replace('/', '_')}", ms[label], at[label])
        if args.sched:
            s["held"] = held_during(spells, pids, label, ms[label], mono[label], p50)
    return out


def held_during(
    spells: list[holders.Spell],
    pids: dict[str, int],
    label: str,
    ms: list[float],
    mono: list[float],
    p50: float,
    over: float = 5.0,
) -> dict[str, Any]:
    """Who had the cores during each of ``label``'s searches over ``over`` x p50: CPU ms of
    each other task in the search's window (the bench's daemons by code, "idle" for a core
    with nothing to run), summed and for the slowest eight."""
    roles = {pid: f"daemon {k}" for k, pid in pids.items()}
    roles[os.getpid()] = "bench client"
    skip = {pids[label], threading.get_native_id()}  # the search's own two threads
    rows = []
    total: collections.Counter[str] = collections.Counter()
    for wall, t0 in zip(ms, mono, strict=True):
        if wall <= over * p50:
            continue
        h = holders.held(spells, (t0, t0 + wall / 1000), roles, skip)
        total.update(h)
        rows.append({"ms": round(wall, 2), "held": {k: round(v, 2) for k, v in h.most_common(3)}})
    return {
        "over": over,
        "searches": len(rows),
        "total_ms": {k: round(v, 1) for k, v in total.most_common(8)},
        "slowest": sorted(rows, key=lambda r: -r["ms"])[:8],
    }


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU ms so far of each of a process's threads (the main one: the event loop's)."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            stat = (task / "stat").read_text()
            name = "main" if task.name == str(pid) else f"thread {task.name}"
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks = int(fields[11]) + int(fields[12])
            out[name] = out.get(name, 0.0) + ticks * 1000 / os.sysconf("SC_CLK_TCK")
    return out


def stalls(probe: Path, ms: list[float], at: list[float]) -> dict[str, Any]:
    """What the daemon's probe saw during each of the slowest 1% of searches."""
    events = [json.loads(line) for line in probe.read_text().splitlines()] if probe.exists() else []
    big = [e["big"] for e in events if "big" in e]  # with STALL_PROBE_BIG set
    events = [e for e in events if at[0] <= e["at"] <= at[-1] + 1 and "big" not in e]
    gcs = [e for e in events if "gc" in e]
    out: dict[str, Any] = {
        "gc_by_gen": {g: sum(1 for e in gcs if e["gc"] == g) for g in (1, 2)},
        "gc2_ms_cpu_objects": [
            (round(e["ms"], 1), round(e["cpu"], 1), e["objects"]) for e in gcs if e["gc"] == 2
        ],
        "gc1_cpu_max": max((round(e["cpu"], 1) for e in gcs if e["gc"] == 1), default=0),
        "loop_cpu_over_3ms": sorted(
            round(e["cpu"], 1) for e in events if "callback" in e and e["cpu"] > 3
        ),
        "slow": [],
        "cpu_stalls": [e for e in events if "stacks" in e],
        **({"big": big[-1]} if big else {}),
    }
    worst = sorted(range(len(ms)), key=ms.__getitem__)[-max(1, len(ms) // 100) :]
    for i in worst:
        t0, t1 = at[i], at[i] + ms[i] / 1000
        seen = [
            {k: (round(v, 1) if k in ("ms", "cpu") else v) for k, v in e.items() if k != "at"}
            for e in events
            if e["at"] - e["ms"] / 1000 <= t1 and e["at"] >= t0
        ]
        out["slow"].append({"ms": round(ms[i], 1), "events": seen})
    return out


def report(r: dict[str, Any]) -> None:
    print("| code | searches | p50 ms | p99 ms | p99/p50 | max ms | over 2x / 5x / 10x p50 |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, s in r["codes"].items():
        o = s["over"]
        print(
            f"| {label} | {s['n']} | {s['p50']:.2f} | {s['p99']:.2f} | {s['p99'] / s['p50']:.2f} "
            f"| {s['max']:.1f} | {o['2x']} / {o['5x']} / {o['10x']} |"
        )
    for label, s in r["codes"].items():
        print(f"{label}: CPU ms by thread over the timed searches {s['thread_cpu_ms']}")
    for label, s in r["codes"].items():
        if "stalls" in s:
            st = s["stalls"]
            print(
                f"\n{label}: gc by generation {st['gc_by_gen']}, "
                f"gen-2 (ms, cpu, objects) {st['gc2_ms_cpu_objects']}, "
                f"gen-1 cpu max {st['gc1_cpu_max']}, loop callbacks over 3 ms of CPU "
                f"{st['loop_cpu_over_3ms']}"
            )
            for row in st.get("big", []):
                print(f"  big: {row}")
            for e in st["cpu_stalls"]:
                print(f"  stall {e['ms']:.1f} ms, cpu {e['cpu']:.1f}: {e['callback']}")
                for stack in e["stacks"]:
                    print("    " + " <- ".join(reversed(stack)))
            for slow in st["slow"]:
                print(f"- {slow['ms']} ms: {json.dumps(slow['events'])}")
    for label, s in r["codes"].items():
        if "waits" in s:
            w = s["waits"]
            print(f"\n{label}: searches over {w['over']:g}x p50 by cause {w['causes']}")
            for row in w["searches"][:8]:
                print(f"- {json.dumps(row)}")
    for label, s in r["codes"].items():
        if "held" in s:
            h = s["held"]
            print(
                f"\n{label}: {h['searches']} searches over {h['over']:g}x p50; CPU ms of others "
                f"in their windows {h['total_ms']}"
            )
            for row in h["slowest"]:
                print(f"- {row['ms']} ms: {row['held']}")
    loads = r["loads"]
    print(f"\nload average (1 min) {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("workspace", type=Path, nargs="?", default=LOCOMO / "conv-26")
    ap.add_argument("--rev", action="append", help="a baseline revision (repeatable)")
    ap.add_argument("--conv", default="conv-26")
    ap.add_argument("--questions", type=int, default=150)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--quiet", type=float, default=3.0, help="seconds after the starts")
    ap.add_argument("--probe", action="store_true", help="record the daemons' GC and loop stalls")
    ap.add_argument(
        "--nice",
        type=int,
        help="run the bench and its daemons at this niceness (root: -20 shields them from "
        "a shared machine's load, which otherwise makes the tail)",
    )
    ap.add_argument(
        "--waits",
        action="store_true",
        help="per search, the daemon's and the client's CPU and run-queue waits and the "
        "machine's steal (bench/waits.py): where each search over 5x p50 went",
    )
    ap.add_argument(
        "--sched",
        action="store_true",
        help="record the machine's scheduling meanwhile (perf sched, bench/holders.py): who "
        "had the cores during each search over 5x p50",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.nice is not None:  # the daemons inherit it
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    args.rev = args.rev if args.rev is not None else ["71945d4"]
    args.workspace = args.workspace.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="md-tail-", dir="/tmp"))  # short: sockets live here
    try:
        r = run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(r, indent=2))
    report(r)
    log("done")


if __name__ == "__main__":
    sys.exit(main())
