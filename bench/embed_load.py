"""Searches while a first index embeds (local model), and what ``status`` says meanwhile.

    python bench/embed_load.py [WORKSPACE] [--baseline REV] [--seconds 20] [--json]

WORKSPACE (default ../shared/bench/locomo-dev/conv-26) is copied into a fresh
MEMORYD_HOME with the bundled local model. Once its keyword scan is done, while its
vectors are embedded:

1. one client searches back to back for ``--seconds`` (keyword, then hybrid with the query
   vectors cached by a first pass): p50/p99 over the socket; the same again once every
   vector is in (idle), as the reference;
2. ``status`` is polled every 0.25 s: how often it shows ``embedding.rate_per_s/eta_s``
   while vectors are pending, and how far each ETA was from the real end;
3. the daemon is stopped half-way and started again: seconds until the rate shows again.

``--baseline REV`` does the same with the code of git revision REV (interleaved), and the
table shows both with the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from latency import Daemon, log, summarize
from scale import code_at, daemon

QUERIES = [
    "What did Caroline research?",
    "When did Melanie paint a sunrise?",
    "What is Caroline's identity?",
    "Where did Melanie go camping?",
    "What books has Melanie read?",
]


class StatusPoller(threading.Thread):
    """Every 0.25 s: (time, pending vectors, the embedding rate dict or None)."""

    def __init__(self, d: Daemon, ws: str) -> None:
        super().__init__(daemon=True)
        self.d, self.ws = d, ws
        self.samples: list[tuple[float, int, dict[str, float] | None]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with self.d.client() as c:
            while not self.stop.is_set():
                w = next(x for x in c.status().workspaces if x.name == self.ws)
                rate = (
                    {"rate_per_s": w.embedding_rate, "eta_s": w.embedding_eta_s}
                    if w.embedding_rate and w.embedding_eta_s is not None
                    else None
                )
                self.samples.append((time.monotonic(), w.pending_vectors, rate))
                time.sleep(0.25)


def search_round(d: Daemon, ws: str, seconds: float) -> dict[str, dict[str, float]]:
    out = {}
    with d.client() as c:
        for q in QUERIES:  # the query vectors cached: the engine's speed, not the model's
            c.search(q, workspace=ws, mode="hybrid")
        for mode in ("keyword", "hybrid"):
            ms: list[float] = []
            end = time.monotonic() + seconds / 2
            i = 0
            while time.monotonic() < end:
                t = time.perf_counter()
                c.search(QUERIES[i % len(QUERIES)], workspace=ws, mode=mode)
                ms.append((time.perf_counter() - t) * 1000)
                i += 1
            out[mode] = summarize(ms)
    return out


def pending(d: Daemon, ws: str) -> int:
    """Chunks waiting for vectors; -1 while that is not known yet (the index opening)."""
    with d.client() as c:
        w = next(x for x in c.status().workspaces if x.name == ws)
        return -1 if w.pending_vectors == 0 and not w.vector_ready else int(w.pending_vectors)


def one(src: Path, tmp: Path, label: str, env: dict[str, str], seconds: float) -> dict[str, Any]:
    home = tmp / f"h-{label}"
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, tmp / f"h-{label}-ws")
    d = daemon(home, "local", env)
    d.start()
    with d.client() as c:
        ws = str(c.workspace_add(tmp / f"h-{label}-ws", None).name)
        c.reindex(workspace=ws)  # the keyword scan; vectors follow in the background
    poll = StatusPoller(d, ws)
    poll.start()
    busy = search_round(d, ws, seconds)
    busy_pending = pending(d, ws)
    # Restart half-way through what is left: how soon does status show a rate again?
    poll.stop.set()
    poll.join()
    d.stop()
    d.start()
    t_restart = time.monotonic()
    poll2 = StatusPoller(d, ws)
    poll2.start()
    while pending(d, ws) != 0:
        time.sleep(0.25)
    t_end = time.monotonic()
    poll2.stop.set()
    poll2.join()
    idle = search_round(d, ws, seconds)
    d.stop()
    first = [s for s in poll.samples if s[1] > 0]
    second = [s for s in poll2.samples if s[1] > 0]
    shown = [s for s in first + second if s[2] is not None]
    again = next((s[0] - t_restart for s in second if s[2] is not None), float("nan"))
    # ETA error: only for ETAs given after the restart (the first run was stopped).
    errors = [abs(s[0] + s[2]["eta_s"] - t_end) for s in second if s[2] is not None]
    return {
        "code": label,
        "busy": busy,
        "idle": idle,
        "pending_at_stop": busy_pending,
        "rate_shown_pct": 100 * len(shown) / max(1, len(first) + len(second)),
        "rate_again_s": again,
        "eta_error_median_s": statistics.median(errors) if errors else float("nan"),
        "seconds_after_restart": t_end - t_restart,
        "load": os.getloadavg()[0],
    }


def report(rows: list[dict[str, Any]]) -> None:
    print(
        "| code | keyword p50/p99 ms while embedding | idle | hybrid p50/p99 ms while "
        "embedding | idle | status shows rate (% of polls) | rate again after restart s "
        "| ETA error (median) s |"
    )
    print("|---|---|---|---|---|---:|---:|---:|")
    for r in rows:
        b, i = r["busy"], r["idle"]
        print(
            f"| {r['code']} | {b['keyword']['p50']:.1f} / {b['keyword']['p99']:.1f} "
            f"| {i['keyword']['p50']:.1f} / {i['keyword']['p99']:.1f} "
            f"| {b['hybrid']['p50']:.1f} / {b['hybrid']['p99']:.1f} "
            f"| {i['hybrid']['p50']:.1f} / {i['hybrid']['p99']:.1f} "
            f"| {r['rate_shown_pct']:.0f} | {r['rate_again_s']:.1f} "
            f"| {r['eta_error_median_s']:.1f} (of {r['seconds_after_restart']:.0f}) |"
        )
    loads = [r["load"] for r in rows]
    print(f"\nload average (1 min) {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    here = Path(__file__).resolve().parent
    ap.add_argument(
        "workspace",
        type=Path,
        nargs="?",
        default=here.parents[1] / "shared/bench/locomo-dev/conv-26",
    )
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="md-el-", dir="/tmp"))  # short: socket paths
    rows = []
    try:
        codes = ([(args.baseline, args.baseline)] if args.baseline else []) + [("this", None)]
        with contextlib.ExitStack() as stack:
            envs = {label: stack.enter_context(code_at(rev, tmp)) for label, rev in codes}
            for n in range(args.rounds):
                for label, _ in codes:
                    log(f"round {n} {label}")
                    r = one(
                        args.workspace.resolve(), tmp / f"r{n}", label, envs[label], args.seconds
                    )
                    log(str(r))
                    rows.append(r)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        report(rows)


if __name__ == "__main__":
    sys.exit(main())
