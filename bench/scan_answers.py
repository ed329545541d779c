"""Quick requests while the index is busy: status, hello and a keyword search, answered
during a first index and during a restart's scan (issue 38: ``memctl status`` hung while a
first index ran; once in CI a status got no answer within 10 s at load ~10).

    python bench/scan_answers.py [--files 3000] [--baseline REV] [--rounds 3] [--busy N]
                                 [--gap-ms 20] [--trace] [--json] [--keep]

A workspace of ``--files`` notes (tests/notes_util.py's big_workspace, 31 lines each) is
written once. Each round, for each code (``--baseline REV`` first, in bench/scale.py's detached
worktree, then this tree: interleaved, so both meet the same machine), a real ``memoryd
run`` (provider none) is asked through its socket by three client threads, one per method,
each waiting ``--gap-ms`` between two of its requests:

1. ``first``: a fresh home naming the workspace in config.toml: its start-up scan is the
   first index (and, the home being new, the daemon's first start: the secret detectors
   are read by a child process); from the socket's first answer until status says the
   scan is over and nothing is pending.
2. ``restart``: the same home restarted after every note's mtime moved (the scan reads and
   hashes each one); from its first answer until the scan is over.

Printed per phase and method: p50/p99/max in ms over every round and the count, the load
average, then this ÷ baseline. A search during a first index waits up to
``server.read_your_writes_ms`` (1 s) for the scan by design: its figures say that, not a
stall. ``--busy N`` runs N busy Python loops meanwhile (a loaded CI machine). ``--trace``
prints every request with the daemon's main thread's CPU and run-queue wait in that time.
Wall clock on a shared machine: compare within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from latency import log, summarize
from memoryd_client import MemoryClient
from scale import code_at, daemon

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from notes_util import big_workspace  # the tests' workspace

METHODS = ("status", "hello", "search")
PHASES = ("first", "restart")
Samples = dict[str, list[float]]


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy(n: int) -> Iterator[None]:
    procs = [mp.Process(target=_spin, daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
            p.join(5)


def sched(pid: int) -> tuple[float, float]:
    """The daemon's main thread: ms on a CPU, ms runnable but waiting for one."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
        run, wait, _ = f.read().split()
    return int(run) / 1e6, int(wait) / 1e6


def during_scan(
    sock: Path, ws: str, gap_s: float, pid: int, trace: bool, timeout: float = 600
) -> tuple[float, Samples]:
    """Each method asked by its own client thread until status says the scan is over (a
    search waiting for a first index must not hold the statuses up): seconds, ms."""
    ms: Samples = {m: [] for m in METHODS}
    over = threading.Event()
    t0 = time.monotonic()
    params: dict[str, dict[str, Any] | None] = {
        "status": None,
        "hello": {"client": "bench"},
        "search": {"query": "subject7 note", "workspace": ws, "mode": "keyword"},
    }

    def ask(m: str) -> None:
        with MemoryClient(sock, timeout=timeout) as c:
            c.connect()
            while not over.is_set() and time.monotonic() - t0 < timeout:
                s0 = sched(pid) if trace else (0.0, 0.0)
                t = time.perf_counter()
                got = c.call(m, params[m])
                ms[m].append((time.perf_counter() - t) * 1000)
                if trace:
                    s1 = sched(pid)
                    print(
                        f"{time.monotonic() - t0:7.3f} {m:6} {ms[m][-1]:8.1f} ms: main thread "
                        f"ran {s1[0] - s0[0]:6.1f}, waited for a CPU {s1[1] - s0[1]:6.1f}",
                        file=sys.stderr,
                    )
                if m == "status":
                    w = got["workspaces"][0] if got.get("workspaces") else {}
                    scan = w.get("startup_scan", {})
                    # over: the scan says how long it took, and nothing is pending
                    if "seconds" in scan and not scan.get("running") and not w["pending_files"]:
                        over.set()
                time.sleep(gap_s)

    threads = [threading.Thread(target=ask, args=(m,)) for m in METHODS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - t0, ms


def touch_all(ws: Path) -> None:
    later = time.time() + 5
    for p in (ws / "memory").iterdir():
        os.utime(p, (later, later))


def run_phase(
    phase: str, name: str, code_env: dict[str, str], tmp: Path, notes: Path, args: Any
) -> tuple[float, Samples]:
    home = tmp / f"home-{name.replace('/', '_')}"
    ws = home / "ws"
    if phase == "first":
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        shutil.copytree(notes, ws)
        (home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\n')
    else:
        touch_all(ws)
    d = daemon(home, "none", code_env)
    try:
        d.start()
        return during_scan(d.socket, str(ws), args.gap_ms / 1000, d.pid, args.trace)
    finally:
        d.stop()


def report(results: dict[str, Any], names: list[str]) -> None:
    for phase in PHASES:
        print(
            f"\n{phase}: "
            + ", ".join(
                f"{n} {sum(results[n][phase]['seconds']):.1f} s in "
                f"{len(results[n][phase]['seconds'])} round(s)"
                for n in names
            )
            + f"; load {min(results['load'][phase]):.1f}-{max(results['load'][phase]):.1f}"
        )
        head = " ".join(f"{n + ' p50 / p99 / max ms':>32}" for n in names)
        print(f"  {'method':8} {head}" + ("   ratio p50 / p99 / max" if len(names) > 1 else ""))
        for m in METHODS:
            sums = [results[n][phase]["summary"].get(m) for n in names]
            cells = [
                f"{s['p50']:7.2f} {s['p99']:8.1f} {s['max']:8.1f} n={s['n']:<4d}" if s else "-"
                for s in sums
            ]
            ratio = ""
            a, b = sums[0], sums[-1]
            if len(names) > 1 and a and b:
                ratio = "   " + " / ".join(f"{b[k] / a[k]:.2f}" for k in ("p50", "p99", "max"))
            print(f"  {m:8} " + " ".join(f"{c:>32}" for c in cells) + ratio)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--baseline", default="")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", type=int, default=0, help="busy Python loops meanwhile")
    ap.add_argument("--gap-ms", type=float, default=20.0)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the homes and daemon logs")
    args = ap.parse_args()
    revs: list[str | None] = [*([args.baseline] if args.baseline else []), None]
    names = [r or "this" for r in revs]
    tmp = Path(tempfile.mkdtemp(prefix="scanans", dir="/tmp"))
    samples: dict[str, dict[str, Samples]] = {n: {p: {} for p in PHASES} for n in names}
    seconds: dict[str, dict[str, list[float]]] = {n: {p: [] for p in PHASES} for n in names}
    loads: dict[str, list[float]] = {p: [] for p in PHASES}
    try:
        notes = big_workspace(tmp / "notes", args.files)
        with contextlib.ExitStack() as stack:
            envs = {r: stack.enter_context(code_at(r, tmp, compiled=True)) for r in revs}
            with busy(args.busy):
                for i in range(args.rounds):
                    for phase in PHASES:
                        for r, name in zip(revs, names, strict=True):
                            log(f"round {i + 1}: {phase} with {name}")
                            loads[phase].append(os.getloadavg()[0])
                            took, ms = run_phase(phase, name, envs[r], tmp, notes, args)
                            seconds[name][phase].append(took)
                            for m, v in ms.items():
                                samples[name][phase].setdefault(m, []).extend(v)
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    results: dict[str, Any] = {
        n: {
            p: {
                "seconds": seconds[n][p],
                "summary": {m: summarize(v) for m, v in samples[n][p].items() if v},
            }
            for p in PHASES
        }
        for n in names
    }
    results["load"] = loads
    results["busy"] = args.busy
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
    report(results, names)


if __name__ == "__main__":
    main()
