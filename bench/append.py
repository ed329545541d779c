"""Append → searchable on long daily logs: does an append cost more as the day grows?

    python bench/append.py [--lines 100,2000,20000] [--trials 20] [--baseline REV] [--json]
                           [--restart [--idle 3]]

For each size, a workspace holding one daily log of that many lines (bench/synth.py's
sections of bullets) and a keyword-only ``memoryd run`` (a fresh MEMORYD_HOME). Each trial
``append``s a line with a new codeword to that day through the socket and searches for the
codeword until it is found (read-your-writes: the first search should find it); the time
from the append call to that answer is the trial's. One warm-up append first (a daemon that
just started has not chunked the day since its scan). ``--baseline REV`` runs the same with
the code of git revision REV first (bench/scale.py's way) and prints ratios.

``--restart``: each trial is the first append after a restart instead: the daemon is
stopped and started again, its start-up scan waited for, then ``--idle`` seconds (an agent
appends a moment after the daemon started; the writer warms the day's chunker state
meanwhile, index/tails.py), then the append. No warm-up append.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from latency import Daemon, log, note_load, summarize
from scale import code_at, daemon
from synth import TOPICS, _Writer

DAY = date(2024, 5, 1)


def make_day(root: Path, lines: int) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\n- The deploy target is kubernetes.\n")
    text = [f"# {DAY.isoformat()}", "", *_Writer(1).sections(DAY, lines - 2, TOPICS)]
    path = root / "memory" / f"{DAY.isoformat()}.md"
    path.write_text("\n".join(text[:lines]) + "\n")
    return path


def restart(d: Daemon, ws: str, idle: float) -> tuple[bool, float]:
    """Stop and start ``d``, wait for its start-up scan and ``idle`` seconds: whether the
    writer logged warming a chunker state meanwhile, and the daemon's RSS (MB) then."""
    d.stop()
    before = d.log.read_text().count('"tail_states_warmed"')
    d.start()
    with d.client() as c:
        while next(w for w in c.status().workspaces if w.name == ws).last_sync is None:
            time.sleep(0.02)
    time.sleep(idle)
    return d.log.read_text().count('"tail_states_warmed"') > before, d.proc_status()["VmRSS"]


def run(
    code: str, env: dict[str, str], lines: int, trials: int, tmp: Path, idle: float | None
) -> dict[str, Any]:
    root = tmp / f"ws-{code}-{lines}"
    day = make_day(root, lines)
    d = daemon(tmp / f"h-{code}-{lines}", "none", env)
    ms: list[float] = []
    calls: list[float] = []
    first_hit = warmed = 0
    rss: list[float] = []
    try:
        d.start()
        with d.client(timeout=600) as c:
            ws = c.workspace_add(root).name
            c.reindex(workspace=ws, wait=True)
        note_load()
        for i in range(trials + 1):
            if idle is not None:
                if not i:
                    continue  # no warm-up: each trial is a restart's first append
                was_warmed, mb = restart(d, ws, idle)
                warmed += was_warmed
                rss.append(mb)
            with d.client(timeout=600) as c:
                word = f"cw{i}x{secrets.token_hex(4)}"
                t0 = time.perf_counter()
                # The wire call with the params every version takes (a baseline before
                # provenance refuses the client's origin).
                text = f"Remember the codeword {word} for later."
                params = {"text": text, "workspace": ws, "date": DAY.isoformat()}
                c.call("append", {**params, "heading": "Bench"})
                called = time.perf_counter()
                polls = 0
                while True:
                    polls += 1
                    r = c.search(word, workspace=ws, mode="keyword", min_score=0.0)
                    if r.results or time.perf_counter() - t0 > 30:
                        break
                if i:  # the first is the warm-up
                    ms.append((time.perf_counter() - t0) * 1000)
                    calls.append((called - t0) * 1000)
                    first_hit += polls == 1 and bool(r.results)
        note_load()
        final = len(day.read_text().splitlines())
    finally:
        d.stop()
        shutil.rmtree(root, ignore_errors=True)
    return {
        "code": code,
        "lines": lines,
        "final_lines": final,
        "first_hit": first_hit,
        "append_p50": summarize(calls)["p50"],
        "warmed": warmed,
        "rss_mb": max(rss, default=0.0),
        **summarize(ms),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lines", default="100,2000,20000")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--restart", action="store_true", help="first appends after restarts")
    ap.add_argument("--idle", type=float, default=3.0, help="seconds after a restart's scan")
    args = ap.parse_args()
    sizes = [int(s) for s in args.lines.split(",") if s]
    codes = ([(args.baseline, args.baseline)] if args.baseline else []) + [("this", None)]
    tmp = Path(tempfile.mkdtemp(dir="/tmp", prefix="mda"))
    rows: list[dict[str, Any]] = []
    note_load()
    try:
        with contextlib.ExitStack() as stack:
            envs = {name: stack.enter_context(code_at(rev, tmp)) for name, rev in codes}
            for lines in sizes:
                for name, _ in codes:
                    log(f"[{name}] {lines} lines")
                    idle = args.idle if args.restart else None
                    rows.append(run(name, envs[name], lines, args.trials, tmp, idle))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    what = (
        f"the first append after each of {args.trials} restarts ({args.idle:g} s after the "
        "start-up scan)"
        if args.restart
        else f"{args.trials} appends"
    )
    print(
        f"\n### Append → searchable ({what} to one daily log, keyword search until the new "
        "word is found)\n"
    )
    extra = " | state warmed before the append | RSS MB then" if args.restart else ""
    print(
        "| daily log lines | code | p50 ms | p95 ms | max ms | append call p50 ms "
        f"| found by the first search | vs baseline p50{extra} |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:" + ("|---:|---:|" if args.restart else "|"))
    base = {r["lines"]: r for r in rows if r["code"] != "this"}
    for r in rows:
        b = base.get(r["lines"])
        ratio = f"{r['p50'] / b['p50']:.3f}x" if b is not None and r["code"] == "this" else ""
        print(
            f"| {r['lines']:,} | {r['code']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['max']:.1f} "
            f"| {r['append_p50']:.1f} | {r['first_hit']} of {r['n']} | {ratio} |"
            + (f" {r['warmed']} of {r['n']} | {r['rss_mb']:.0f} |" if args.restart else "")
        )
    from latency import LOADS

    print(
        f"\nload average (1 min) during the run: {min(LOADS):.2f} to {max(LOADS):.2f} on "
        f"{os.cpu_count()} cores; python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
