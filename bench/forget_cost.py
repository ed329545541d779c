"""What a forget costs, with and without ``--purge``, beside the previous code.

    python bench/forget_cost.py [--chunks 10000,100000] [--trials 3] [--baseline REV]
        [--no-purge] [--json]

For each index size, a synthetic workspace (bench/synth.py) indexed keyword-only by the
baseline's code; two copies of that home and workspace, one served by a ``memoryd run`` of
``--baseline REV`` (default: the commit before issue 33's forget work), one by this tree,
both running at once. The trials interleave them, alternating which goes first: a forget of
1 line (a daily note's line) and of 1,000 lines (a range of MEMORY.md), each without and
with purge. Each figure is the forget call's wall time and the daemon's CPU for it. A first
purge is timed apart: on an index made before ``secure_delete`` it runs VACUUM once.

What this tree adds: secure_delete on every writing connection (any delete zeroes what it
frees), the journal's compare just before each rename, the ledger's tombstones, and for a
purge the FTS5 merge into one segment, the history and exports rewrite, the state database's
VACUUM and the WAL checkpoints (lifecycle/purge.py, index/purge.py); since h33b, a plain
forget's deletes are FTS5 secure deletes for its own files and the WAL is truncated after
its sync (index/secure_delete.py). After each trial's forgets, ordinary edits (a line in the
middle of a daily note rewritten, waited for until keyword search finds it) are timed on
both: secure-delete must never stay on for them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import date
from pathlib import Path
from typing import Any

from latency import Daemon, log, note_load
from scale import code_at, cpu_s, daemon
from synth import TOPICS, _Writer, make_workspace

BASELINE = "88bbf2c"  # main just before issue 33's forget changes (943004b^)
WS = "bench"
BULK_LINES = 1100
BULK_FILES = 6
COMBOS = ((1, False), (1000, False), (1, True), (1000, True))
EDITS = 20  # ordinary edits timed after each trial's forgets


def start(tmp: Path, code: str, chunks: int, env: dict[str, str]) -> tuple[Daemon, Path]:
    """A workspace of ``chunks`` chunks (the same bytes for every code: one seed) indexed
    keyword-only by a daemon of ``env``'s code, running."""
    root = make_workspace(tmp / f"{code}-{chunks}" / WS, chunks)
    w = _Writer(2)
    for i in range(BULK_FILES):  # one note per 1,000-line forget (the daily notes are short)
        text = ["# Bulk notes", "", *w.sections(date(2016, 1, 4), BULK_LINES, TOPICS)]
        (root / "memory" / f"bulk-{i}.md").write_text("\n".join(text) + "\n")
    home = tmp / f"{code}-{chunks}" / "home"
    home.mkdir(parents=True)
    (home / "config.toml").write_text(f'[[workspaces]]\npath = "{root}"\nname = "{WS}"\n')
    d = daemon(home, "none", env)
    d.start()
    with d.client(timeout=3600) as c:
        c.reindex(workspace=WS, wait=True)
        log(f"{code} {chunks}: {c.status(workspace=WS).workspaces[0].chunks} chunks")
    return d, root


def targets(root: Path, trial: int) -> dict[tuple[int, bool], dict[str, str]]:
    """The lines each combination removes in ``trial`` (the same in both copies)."""
    days = sorted((root / "memory").glob("*.md"))
    out: dict[tuple[int, bool], dict[str, str]] = {}
    for i, (lines, purge) in enumerate(COMBOS):
        if lines == 1:
            day = days[(trial * len(COMBOS) + i) % len(days)]
            out[(lines, purge)] = {"path": f"memory/{day.name}", "lines": "5"}
        else:  # a note of its own for each
            out[(lines, purge)] = {"path": f"memory/bulk-{trial * 2 + purge}.md", "lines": "3-1002"}
    return out


def forget(
    d: Daemon, ws: str, what: dict[str, str], purge: bool
) -> tuple[float, float, dict[str, Any]]:
    with d.client(timeout=3600) as c:
        cpu = cpu_s(d.pid)
        t0 = time.perf_counter()
        answer = c.call("forget", {"workspace": ws, **what, "purge": purge})
        ms = (time.perf_counter() - t0) * 1000
        return ms, (cpu_s(d.pid) - cpu) * 1000, answer


def edits(d: Daemon, root: Path, trial: int) -> float:
    """The daemon's CPU (ms) for EDITS ordinary edits: a line in the middle of a daily note
    rewritten (its chunks deleted and written again), each waited for until keyword search
    finds it (the watch syncs it)."""
    days = sorted((root / "memory").glob("2*.md"))
    with d.client(timeout=600) as c:
        cpu = cpu_s(d.pid)
        for i in range(EDITS):
            f = days[(trial * EDITS * 7 + i * 7 + 3) % len(days)]
            lines = f.read_text().splitlines()
            token = f"editmark{trial}x{i}q"
            lines[len(lines) // 2] = f"- a note edited by hand, {token}"
            f.write_text("\n".join(lines) + "\n")
            deadline = time.monotonic() + 120
            while not c.search(token, workspace=WS, mode="keyword").results:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"edit {token} never searchable")
                time.sleep(0.05)
        return (cpu_s(d.pid) - cpu) * 1000


def run_size(
    tmp: Path,
    chunks: int,
    envs: dict[str, dict[str, str]],
    trials: int,
    combos: tuple[tuple[int, bool], ...] = COMBOS,
) -> list[dict[str, Any]]:
    daemons: dict[str, Daemon] = {}
    roots: dict[str, Path] = {}
    rows: list[dict[str, Any]] = []
    try:
        for code, env in envs.items():
            daemons[code], roots[code] = start(tmp, code, chunks, env)
        note_load()
        first = {}
        for code, d in daemons.items():  # the first purge: VACUUM once on this tree's code
            if not any(p for _, p in combos):
                break
            ms, cpu, answer = forget(d, WS, {"path": "MEMORY.md", "lines": "10"}, True)
            first[code] = (ms, cpu, answer.get("purged", {}).get("index", {}))
        if first:
            rows.append({"chunks": chunks, "what": "first purge, 1 line", **_pair(first)})
        samples: dict[tuple[int, bool], dict[str, list[tuple[float, float]]]] = {
            k: {c: [] for c in daemons} for k in combos
        }
        edited: dict[str, list[float]] = {c: [] for c in daemons}
        optimize: list[float] = []
        for t in range(trials):
            order = list(daemons) if t % 2 == 0 else list(reversed(daemons))
            want = targets(roots["new"], t)
            for combo in combos:
                for code in order:
                    ms, cpu, answer = forget(daemons[code], WS, want[combo], combo[1])
                    samples[combo][code].append((ms, cpu))
                    if code == "new" and combo[1]:
                        optimize.append(answer["purged"]["index"]["fts_optimize_ms"])
            for code in order:
                edited[code].append(edits(daemons[code], roots[code], t))
            note_load()
        for (lines, purge), by_code in samples.items():
            med = {
                c: (statistics.median(m for m, _ in v), statistics.median(u for _, u in v), {})
                for c, v in by_code.items()
            }
            what = f"{lines} line{'s' if lines > 1 else ''}" + (", purge" if purge else "")
            rows.append({"chunks": chunks, "what": what, **_pair(med)})
        if optimize:
            rows.append(
                {
                    "chunks": chunks,
                    "what": "of which FTS5 optimize (new)",
                    "new_ms": round(statistics.median(optimize), 1),
                }
            )
        rows.append(
            {
                "chunks": chunks,
                "what": f"{EDITS} edits after the forgets",
                "base_cpu_ms": round(statistics.median(edited["base"]), 1),
                "new_cpu_ms": round(statistics.median(edited["new"]), 1),
            }
        )
    finally:
        for d in daemons.values():
            d.stop()
    return rows


def _pair(by_code: dict[str, tuple[float, float, Any]]) -> dict[str, Any]:
    b, n = by_code["base"], by_code["new"]
    return {
        "base_ms": round(b[0], 1),
        "new_ms": round(n[0], 1),
        "ratio": round(n[0] / b[0], 2) if b[0] else None,
        "base_cpu_ms": round(b[1], 1),
        "new_cpu_ms": round(n[1], 1),
        "vacuum_ms": n[2].get("vacuum_ms") if isinstance(n[2], dict) else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", default="10000,100000")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--no-purge", action="store_true", help="plain forgets only")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    global BULK_FILES
    BULK_FILES = 2 * args.trials
    sizes = [int(x) for x in args.chunks.split(",")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fc-") as t, ExitStack() as stack:
        tmp = Path(t)
        envs = {
            "base": stack.enter_context(code_at(args.baseline, tmp)),
            "new": stack.enter_context(code_at(None, tmp)),
        }
        for chunks in sizes:
            combos = tuple(c for c in COMBOS if not (args.no_purge and c[1]))
            rows += run_size(tmp, chunks, envs, args.trials, combos)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        return
    from latency import LOADS

    print(f"baseline {args.baseline}; load average {min(LOADS):.1f}-{max(LOADS):.1f}")
    print(
        f"{'chunks':>7} | {'forget':<30} | {'base ms':>8} | {'new ms':>8} | {'ratio':>5} |"
        f" {'base CPU':>8} | {'new CPU':>8} | VACUUM ms"
    )
    for r in rows:
        print(
            f"{r['chunks']:>7} | {r['what']:<30} | {r.get('base_ms', ''):>8} | "
            f"{r.get('new_ms', ''):>8} | {r.get('ratio', '') or '':>5} | "
            f"{r.get('base_cpu_ms', ''):>8} | {r.get('new_cpu_ms', ''):>8} | "
            f"{r.get('vacuum_ms') or ''}"
        )


if __name__ == "__main__":
    main()
