"""In-process search latency of the engine (``WorkspaceIndex.search``), query embedding excluded.

    python bench/search_latency.py [--sizes 1000,10000] [--big] [--rounds 10] [--json]
                                   [--corpus synthetic|locomo] [--index-dir DIR] [--profile]

For each size, a synthetic workspace (bench/synth.py) is indexed into a temp index with a
deterministic fake embedding provider (``BenchProvider``: seeded random unit vectors per
text, 384 dims), so 10k+ chunks get vectors in seconds instead of the local model's many
minutes. Fine for latency (the KNN and fusion work is the same), meaningless for quality.

``--corpus locomo`` builds the workspace from copies of the LoCoMo dev daily logs instead
and asks LoCoMo's questions (a speaker's name is on every line, so the OR query matches
nearly every chunk: the hard case for BM25).

The heap is set up as the daemon sets it (runtime/heap.py: every array above 128 KB is an
mmap), which at 100k chunks matters as much as the work itself.

50 fixed queries (``synth.make_queries``) are searched once per mode to warm the query-
embedding cache and the page cache, then ``--rounds`` times each; every call is timed
around ``search()`` (wall clock, one thread). Modes: keyword, hybrid (default fusion).
Target (issue 2): p50 < 5 ms at 10k chunks.

``--index-dir DIR`` keeps the workspaces and indexes there and reuses them in later runs
(100k chunks with vectors take ~8 minutes to build), so another revision's code can be
measured on the very same index (``PYTHONPATH=<its worktree>/daemon:<its worktree>/client``);
each run then also times a reopen until both in-memory copies are loaded. ``--profile``
prints, per size and mode, the share of the searches' time in each function (cProfile,
a separate pass after the timed one).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from latency import summarize
from memoryd.embeddings.base import Vectors
from memoryd.index import schema
from memoryd.index.search.query import fts_match, query_terms
from memoryd.index.types import Mode, SearchRequest
from memoryd.index.workspace import WorkspaceIndex
from memoryd.runtime import heap
from memoryd.runtime.config import Config, config_from_mapping
from memoryd.runtime.logs import configure_logging
from synth import locomo_queries, make_locomo_workspace, make_queries, make_workspace

TARGET_P50_MS_10K = 5.0
DIMS = 384


class BenchProvider:
    """A deterministic stand-in for an embedding model: the same text, the same unit vector."""

    name = "bench"
    model = "hash"

    @property
    def dims(self) -> int:
        return DIMS

    @property
    def provider_key(self) -> str:
        return f"bench-hash-{DIMS}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), DIMS), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out

    def close(self) -> None:
        pass


def build(
    size: int,
    workdir: Path,
    cfg: Config,
    seed: int,
    queries: list[str],
    corpus: str = "synthetic",
    reuse: bool = False,
) -> tuple[WorkspaceIndex, dict[str, Any]]:
    ws = workdir / f"ws-{size}"
    stamp = workdir / f"ws-{size}.{corpus}"
    if not (reuse and stamp.exists()):
        if corpus == "locomo":
            make_locomo_workspace(ws, size)
        else:
            make_workspace(ws, size, seed)
        stamp.touch()
    ix = WorkspaceIndex(ws, workdir / f"ix-{size}.sqlite", cfg, BenchProvider(), "bench")
    started = time.perf_counter()
    ix.open()
    report = ix.sync()
    sync_s = time.perf_counter() - started
    started = time.perf_counter()
    ok = ix.wait_embedded()
    vectors_s = time.perf_counter() - started
    load_s = None
    if reuse:  # the index was there: time a reopen until the in-memory copies are loaded
        ix.close()
        ix = WorkspaceIndex(ws, workdir / f"ix-{size}.sqlite", cfg, BenchProvider(), "bench")
        started = time.perf_counter()
        ix.open()
        while True:
            st = ix.status()
            if st.get("keyword_scan") != "loading" and st.get("vector_scan") == "memory":
                break
            if time.perf_counter() - started > 600:
                raise SystemExit(f"the in-memory copies did not load: {st}")
            time.sleep(0.02)
        load_s = time.perf_counter() - started
    st = ix.status()
    info = {
        "chunks": st["chunks"],
        "files": st["files"],
        "sync_s": sync_s,
        "matches_p50": statistics.median(keyword_matches(ix, queries)),
        "vectors_s": vectors_s,
        "load_s": load_s,
        "vector_ready": ok and st["vector_ready"],
        "chunks_written": report.chunks_written,
    }
    return ix, info


def keyword_matches(ix: WorkspaceIndex, queries: list[str]) -> list[int]:
    """How many chunks each query's FTS OR-query matches (the work BM25 ranking does)."""
    conn = schema.connect(ix.db_path, readonly=True)
    try:
        sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
        return [
            int(str(conn.execute(sql, (fts_match(query_terms(q)),)).fetchall()[0][0]))
            for q in queries
        ]
    finally:
        conn.close()


def profile(ix: WorkspaceIndex, queries: list[str], mode: Mode, rounds: int) -> list[str]:
    """Lines "share  function" of the searches' time (cProfile: own time, top 15)."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    for _ in range(rounds):
        for q in queries:
            prof.enable()
            ix.search(SearchRequest(q, mode=mode))
            prof.disable()
    stats = cast(Any, pstats.Stats(prof)).stats  # {(file, line, fn): (cc, nc, tt, ct, callers)}
    total = sum(v[2] for v in stats.values()) or 1.0
    rows = sorted(stats.items(), key=lambda kv: -kv[1][2])[:15]
    return [
        f"{v[2] / total:6.1%}  {Path(k[0]).name}:{k[1]}({k[2]})  cumulative {v[3] / total:.0%}"
        for k, v in rows
    ]


def measure(ix: WorkspaceIndex, queries: list[str], mode: Mode, rounds: int) -> dict[str, Any]:
    hits = 0
    for q in queries:  # warm: query-embedding cache, page cache, reader connections
        resp = ix.search(SearchRequest(q, mode=mode))
        if resp.mode_used != mode:
            raise SystemExit(f"asked {mode}, got {resp.mode_used}: {resp.degraded}")
    ms: list[float] = []
    cpu_ms: list[float] = []
    gc.collect()
    for _ in range(rounds):
        for q in queries:
            req = SearchRequest(q, mode=mode)
            c = time.thread_time()
            t = time.perf_counter()
            resp = ix.search(req)
            ms.append((time.perf_counter() - t) * 1000)
            cpu_ms.append((time.thread_time() - c) * 1000)
            hits += len(resp.results)
    out: dict[str, Any] = summarize(ms)
    out["cpu_p50"] = summarize(cpu_ms)["p50"]
    out["avg_hits"] = hits / len(ms)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="1000,10000", help="chunk counts, comma-separated")
    ap.add_argument("--big", action="store_true", help="add 100k chunks (several minutes)")
    ap.add_argument("--rounds", type=int, default=10, help="passes over the 50 queries")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument(
        "--query-ranks",
        default="30,1500",
        metavar="LO,HI",
        help="vocabulary frequency ranks the query words come from "
        "(e.g. 300,4000 for selective queries)",
    )
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", choices=("synthetic", "locomo"), default="synthetic")
    ap.add_argument("--index-dir", type=Path, help="keep the indexes here and reuse them")
    ap.add_argument("--profile", action="store_true", help="where the searches' time goes")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    configure_logging("warning", json=True)
    heap.configure()  # as the daemon does (cli.py): large temporaries are mmaps, as there
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.big:
        sizes.append(100_000)
    modes = [cast(Mode, m) for m in args.modes.split(",") if m]
    cfg = config_from_mapping({}, {})
    lo, hi = (int(x) for x in args.query_ranks.split(","))
    if args.corpus == "locomo":
        queries = locomo_queries(args.queries)
    else:
        queries = make_queries(args.queries, ranks=(lo, hi))
    rows: list[dict[str, Any]] = []
    loads = [os.getloadavg()[0]]
    profiles: list[tuple[int, str, list[str]]] = []
    with contextlib.ExitStack() as stack:
        if args.index_dir:
            args.index_dir.mkdir(parents=True, exist_ok=True)
            tmp = str(args.index_dir)
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="memoryd-bench-lat-"))
        for size in sizes:
            print(f"building {size} chunks...", file=sys.stderr)
            ix, info = build(
                size, Path(tmp), cfg, args.seed, queries, args.corpus, args.index_dir is not None
            )
            print(
                f"  {info['chunks']} chunks in {info['files']} files: keyword index "
                f"{info['sync_s']:.1f}s, fake vectors {info['vectors_s']:.1f}s",
                file=sys.stderr,
            )
            for mode in modes:
                loads.append(os.getloadavg()[0])
                r = measure(ix, queries, mode, args.rounds)
                rows.append(
                    {"size": size, "mode": mode, **info, **r, "matches_p50": info["matches_p50"]}
                )
                if args.profile:
                    profiles.append((size, mode, profile(ix, queries, mode, 2)))
            ix.close()
    loads.append(os.getloadavg()[0])
    if args.json:
        print(json.dumps({"rows": rows, "loadavg": loads, "profiles": profiles}, indent=2))
        return
    print("### In-process search latency (WorkspaceIndex.search, query embedding cached)\n")
    print(
        "| target chunks | chunks | mode | searches | p50 ms | p95 ms | p99 ms | mean ms "
        "| max ms | CPU p50 ms | keyword matches p50 | avg hits | copies loaded s |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        loaded = "-" if r["load_s"] is None else f"{r['load_s']:.2f}"
        print(
            f"| {r['size']} | {r['chunks']} | {r['mode']} | {r['n']} | {r['p50']:.2f} "
            f"| {r['p95']:.2f} | {r['p99']:.2f} | {r['mean']:.2f} | {r['max']:.2f} "
            f"| {r['cpu_p50']:.2f} | {r['matches_p50']:.0f} | {r['avg_hits']:.1f} | {loaded} |"
        )
    for size, mode, lines in profiles:
        print(f"\nProfile, {size} chunks, {mode} (share of the searches' time, own):\n")
        print("```")
        print("\n".join(lines))
        print("```")
    print()
    for r in rows:
        if r["size"] == 10_000:
            verdict = "ok" if r["p50"] < TARGET_P50_MS_10K else "MISS"
            print(
                f"- target p50 < {TARGET_P50_MS_10K:.0f} ms at 10k chunks ({r['mode']}): "
                f"{r['p50']:.2f} ms — {verdict}"
            )
    what = (
        "LoCoMo questions over copies of its logs"
        if args.corpus == "locomo"
        else (f"word ranks {lo}-{hi}")
    )
    print(
        f"\n{len(queries)} queries ({what}) x {args.rounds} rounds per row, "
        "after one warm-up pass "
        "(CPU: the searching thread's own CPU time; keyword matches: chunks the query's "
        "FTS OR-query matches); "
        f"fake 384-d vectors (BenchProvider); load average (1 min) {min(loads):.2f} to "
        f"{max(loads):.2f} on {os.cpu_count()} cores; python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
