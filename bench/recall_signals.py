"""What the line signals of issue 25 cost: search and recall through a real daemon beside
a baseline revision's daemon in the same run, the signals on against off, and the trigger
lane's match alone.

    python bench/recall_signals.py [--chunks 10000] [--rounds 3] [--baseline REV] [--json]

A synthetic workspace (bench/synth.py) of ``--chunks`` chunks, keyword only
(``MEMORYD_EMBEDDING_PROVIDER=none``), under a short /tmp home.

- neutral: the workspace as written (no annotation, no provenance): this tree's daemon and
  REV's (a detached worktree first on its PYTHONPATH), each query of synth's set asked of
  both in turn, ``search`` and ``recall``, so load changes hit them alike. The ratio is the
  cost of the new code on a workspace that uses none of it.
- signals: a copy where every 20th line carries ``<!-- importance: N -->`` or a project
  tag, and MEMORY.md holds 200 lines with trigger phrases; searched and recalled with a
  ``project``, beside the neutral copy on the same daemon.
- trigger lane: ``TriggerLane.match`` in-process over 10,000 annotated curated lines (the
  worst case: every line has triggers) and over 200, lexical, and with a 384-dim prompt
  vector against every phrase's.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from latency import Daemon, add_workspace, note_load, summarize
from memoryd.files.annotations import parse_line
from memoryd.index.line_meta import LineMeta, LineMetaMap
from memoryd.index.search.triggers import TriggerLane
from scale import code_at
from synth import make_queries, make_workspace

PROJECT = "github.com/acme/api"


def annotate(src: Path, dst: Path, triggers: int = 200) -> list[str]:
    """``dst``: ``src`` with every 20th line annotated and MEMORY.md holding ``triggers``
    trigger lines; returns the phrases."""
    shutil.copytree(src, dst)
    rng = random.Random(3)
    for f in sorted((dst / "memory").glob("*.md")):
        lines = f.read_text().split("\n")
        for i in range(0, len(lines), 20):
            if lines[i].startswith("- "):
                tag = (
                    f" <!-- importance: {rng.randint(1, 10)} -->"
                    if i % 40
                    else f" <!-- project: {rng.choice([PROJECT, 'github.com/acme/web'])} -->"
                )
                lines[i] += tag
        f.write_text("\n".join(lines))
    words = make_queries(triggers, seed=11)
    phrases = [" ".join(q.split()[:2]) for q in words]
    body = [f"- curated fact {n} <!-- trigger: {p} -->" for n, p in enumerate(phrases)]
    (dst / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(body) + "\n")
    return phrases


def timed(fn: Any, *args: Any, **kw: Any) -> float:
    t = time.perf_counter()
    fn(*args, **kw)
    return (time.perf_counter() - t) * 1000


def daemon_rows(chunks: int, rounds: int, baseline: str | None, tmp: Path) -> dict[str, Any]:
    plain = make_workspace(tmp / "plain", chunks)
    annotate(plain, tmp / "signals")
    queries = make_queries(50)
    out: dict[str, Any] = {}
    with code_at(baseline, tmp) as base_env:
        mine = Daemon(tmp / "h1", "none")
        base = Daemon(tmp / "h2", "none")
        base.env.update(base_env)
        try:
            mine.start()
            base.start()
            p_mine, n_chunks, _ = add_workspace(mine, plain)
            p_base, _, _ = add_workspace(base, plain)
            s_mine, _, _ = add_workspace(mine, tmp / "signals")
            mine.settle()
            base.settle()
            times: dict[str, list[float]] = {}
            with mine.client() as cm, base.client() as cb:
                for r in range(rounds + 1):  # the first round warms caches
                    for q in queries:
                        row = [
                            ("search base", cb.search, {"workspace": p_base}),
                            ("search neutral", cm.search, {"workspace": p_mine}),
                            (
                                "search signals",
                                cm.search,
                                {"workspace": s_mine, "project": PROJECT},
                            ),
                            ("recall base", cb.recall, {"workspace": p_base}),
                            ("recall neutral", cm.recall, {"workspace": p_mine}),
                            (
                                "recall signals",
                                cm.recall,
                                {"workspace": s_mine, "project": PROJECT},
                            ),
                        ]
                        for name, fn, kw in row:
                            ms = timed(fn, q, **kw)
                            if r:
                                times.setdefault(name, []).append(ms)
            out = {"chunks": n_chunks, **{k: summarize(v) for k, v in times.items()}}
        finally:
            mine.stop()
            base.stop()
    return out


def lane_rows(rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    prompts = make_queries(50, seed=5)
    for n in (200, 10_000):
        meta = LineMetaMap()
        phrases = [" ".join(q.split()[:2]) for q in make_queries(n, seed=11, ranks=(30, 3999))]
        lines = [f"- fact {i} <!-- trigger: {p} -->" for i, p in enumerate(phrases)]
        root = Path(tempfile.mkdtemp(prefix="md-lane-"))
        (root / "MEMORY.md").write_text("\n".join(lines) + "\n")
        parsed = {}
        for i, line in enumerate(lines, 1):
            _, ann = parse_line(line)
            assert ann is not None
            parsed[i] = LineMeta(triggers=ann.triggers)
        meta.stage("MEMORY.md", parsed)
        meta.commit("MEMORY.md")
        lane = TriggerLane(meta, root)
        lane.match("warm", frozenset())  # builds the table once
        rng = np.random.default_rng(1)
        vecs = {
            " ".join(p.split()).casefold(): rng.standard_normal(384).astype(np.float32)
            for p in phrases
        }
        qvec = rng.standard_normal(384).astype(np.float32)
        lane.match("warm", frozenset(), qvec, vecs.__getitem__)  # embeds the phrases once
        lex: list[float] = []
        vec: list[float] = []
        for _ in range(rounds):
            for p in prompts:
                lex.append(timed(lane.match, p, frozenset()))
                vec.append(timed(lane.match, p, frozenset(), qvec, vecs.__getitem__))
        out[f"lane {n} lines lexical"] = summarize(lex)
        out[f"lane {n} lines lexical+vector"] = summarize(vec)
        shutil.rmtree(root, ignore_errors=True)
    return out


def report(r: dict[str, Any]) -> None:
    print(f"{r['chunks']} chunks, keyword only; p50 / p95 ms; ratio of p50s")
    print()
    print("| case | p50 ms | p95 ms | ratio |")
    print("|---|---|---|---|")
    pairs = {
        "search neutral": "search base",
        "recall neutral": "recall base",
        "search signals": "search neutral",
        "recall signals": "recall neutral",
    }
    for name in (
        "search base",
        "search neutral",
        "search signals",
        "recall base",
        "recall neutral",
        "recall signals",
    ):
        s = r[name]
        ref = pairs.get(name)
        ratio = f"{s['p50'] / r[ref]['p50']:.2f}x {ref}" if ref else "1.00"
        print(f"| {name} | {s['p50']:.2f} | {s['p95']:.2f} | {ratio} |")
    print()
    print("| trigger lane (in-process) | p50 ms | p95 ms |")
    print("|---|---|---|")
    for name, s in r.items():
        if name.startswith("lane"):
            print(f"| {name} | {s['p50']:.4f} | {s['p95']:.4f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", default="71945d4", help="the revision to compare with")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    note_load()
    lanes = lane_rows(args.rounds)  # in-process and quick: first
    with tempfile.TemporaryDirectory(prefix="md", dir="/tmp") as t:
        r = daemon_rows(args.chunks, args.rounds, args.baseline, Path(t))
    r.update(lanes)
    note_load()
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        report(r)


if __name__ == "__main__":
    main()
