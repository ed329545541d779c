"""Recall of the in-memory KNN's quantised scan (sign bits, then exact rescoring of a
shortlist) against the exact scan, and what each costs.

    python bench/vector_recall.py --locomo-index-dir DIR [--locomo-mix 100000] [--index PATH ...]
                                  [--k 24] [--shortlists 64,128,256,512,1024,2048] [--json]

Vector sets:

- ``--locomo-index-dir``: the indexes bench/retrieval.py built there (``--index-dir``) with
  the real local model: every chunk vector and every window vector of every conversation
  in one mirror (real model vectors, a few thousand to tens of thousands), queried with the
  LoCoMo dev questions embedded by the same model (the default embedding config).
  ``--locomo-mix N`` adds N vectors made from those (each a random blend of two of them plus
  a little noise, normalised): as many rows as a year of memory, with the real vectors'
  geometry, queried with the same questions. Embedding 100k real chunks would take hours.
- ``--index PATH``: any memoryd index (e.g. one bench/search_latency.py kept with
  ``--index-dir``): its chunk vectors, queried with synth.make_queries embedded by
  search_latency's BenchProvider (random unit vectors: no structure, the hard case) and
  with stored vectors plus noise (a query near a chunk, as a real paraphrase is).

recall@k: the share of the exact top k (VectorMirror.knn(shortlist=0)) that the quantised
scan returns, averaged over the queries. k = 24 is what a search asks by default
(max_results 6 x candidate_multiplier 4). The default policy is
vector_mirror.default_shortlist.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from memoryd.embeddings.base import embed_query
from memoryd.embeddings.factory import choose_provider
from memoryd.index import schema
from memoryd.index.vectors.mirror import VectorMirror, default_shortlist
from memoryd.runtime.config import config_from_mapping
from memoryd.runtime.logs import configure_logging
from search_latency import BenchProvider
from synth import LOCOMO_DIR, make_queries

Matrix = npt.NDArray[np.float32]


def mirror_of(vectors: Matrix) -> VectorMirror:
    """A loaded mirror of these rows (ids 0..n-1), read as the daemon reads chunks_vec."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE v(chunk_id INTEGER PRIMARY KEY, embedding, source, day)")
    conn.executemany(
        "INSERT INTO v VALUES (?, ?, 'memory', '')",
        ((i, np.ascontiguousarray(v, np.float32).tobytes()) for i, v in enumerate(vectors)),
    )
    mirror = VectorMirror(1 << 40)
    mirror.load(conn, "v")
    return mirror


def index_vectors(path: Path, windows: bool) -> Matrix:
    conn = schema.connect(path, readonly=True)
    try:
        chunk = [bytes(b) for (b,) in conn.execute("SELECT embedding FROM chunks_vec")]
        out = [np.frombuffer(b"".join(chunk), np.float32).reshape(len(chunk), -1)]
        if windows:
            win = [bytes(b) for (b,) in conn.execute("SELECT embedding FROM window_vectors")]
            if win:
                m = np.frombuffer(b"".join(win), np.float16).reshape(len(win), -1)
                out.append(m.astype(np.float32))
    finally:
        conn.close()
    return np.concatenate(out)


def locomo_set(index_dir: Path, limit: int) -> tuple[str, Matrix, Matrix]:
    paths = sorted(index_dir.glob("conv-*.sqlite"))
    if not paths:
        raise SystemExit(f"no conv-*.sqlite in {index_dir}: run bench/retrieval.py --index-dir")
    vectors = np.concatenate([index_vectors(p, windows=True) for p in paths])
    questions: list[str] = []
    with (LOCOMO_DIR / "qrels.jsonl").open() as f:
        for line in f:
            q = json.loads(line)["question"]
            if q not in questions:
                questions.append(q)
    questions = questions[:limit]
    provider = choose_provider(config_from_mapping({}, {}).embedding).provider
    if provider is None:
        raise SystemExit("no embedding provider for the LoCoMo questions")
    queries = np.stack([embed_query(provider, q) for q in questions]).astype(np.float32)
    provider.close()
    what = f"LoCoMo dev, local model: {len(paths)} indexes' chunk + window vectors"
    return what, vectors, queries


def mixed(vectors: Matrix, n: int, seed: int = 1) -> Matrix:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, len(vectors), n), rng.integers(0, len(vectors), n)
    w = rng.uniform(0, 1, (n, 1)).astype(np.float32)
    out = w * vectors[a] + (1 - w) * vectors[b]
    out += rng.standard_normal(out.shape).astype(np.float32) * 0.01
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def synthetic_sets(path: Path, limit: int, seed: int = 3) -> list[tuple[str, Matrix, Matrix]]:
    vectors = index_vectors(path, windows=False)
    hashed = BenchProvider().embed(make_queries(limit))
    rng = np.random.default_rng(seed)
    picked = vectors[rng.choice(len(vectors), limit, replace=False)]
    noisy = picked + rng.standard_normal(picked.shape).astype(np.float32) * 0.02
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    return [
        (f"{path.name}: BenchProvider queries (random)", vectors, hashed),
        (f"{path.name}: stored vectors + noise (sigma .02 a dim: cosine ~.93)", vectors, noisy),
    ]


def measure(
    what: str, vectors: Matrix, queries: Matrix, k: int, shortlists: list[int]
) -> list[dict[str, Any]]:
    mirror = mirror_of(vectors)
    exact: list[set[int]] = []
    ms: list[float] = []
    for q in queries:
        t = time.perf_counter()
        exact.append(set(mirror.knn(q, k, shortlist=0) or []))
        ms.append((time.perf_counter() - t) * 1000)
    default = default_shortlist(len(vectors), k)
    rows = [{"set": what, "rows": len(vectors), "shortlist": "exact", "recall": 1.0, "ms": ms}]
    for size in sorted({*shortlists, *([default] if default else [])}):
        if size >= len(vectors):
            continue
        got, ms = [], []
        for q, want in zip(queries, exact, strict=True):
            t = time.perf_counter()
            found = set(mirror.knn(q, k, shortlist=size) or [])
            ms.append((time.perf_counter() - t) * 1000)
            got.append(len(found & want) / max(1, len(want)))
        rows.append(
            {
                "set": what,
                "rows": len(vectors),
                "shortlist": size,
                "default": size == default,
                "recall": statistics.fmean(got),
                "worst": min(got),
                "ms": ms,
            }
        )
    for r in rows:
        r["p50_ms"] = statistics.median(r.pop("ms"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--locomo-index-dir", type=Path)
    ap.add_argument("--locomo-mix", type=int, default=0, metavar="N")
    ap.add_argument("--index", type=Path, action="append", default=[])
    ap.add_argument("--k", type=int, default=24)
    ap.add_argument("--shortlists", default="64,128,256,512,1024,2048")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    configure_logging("warning", json=True)
    shortlists = [int(s) for s in args.shortlists.split(",") if s]
    sets: list[tuple[str, Matrix, Matrix]] = []
    if args.locomo_index_dir:
        what, vectors, queries = locomo_set(args.locomo_index_dir, args.queries)
        sets.append((what, vectors, queries))
        if args.locomo_mix:
            sets.append(
                (f"{args.locomo_mix} blends of those", mixed(vectors, args.locomo_mix), queries)
            )
    for path in args.index:
        sets += synthetic_sets(path, args.queries)
    loads = [os.getloadavg()[0]]
    rows = [r for s in sets for r in measure(*s, args.k, shortlists)]
    loads.append(os.getloadavg()[0])
    if args.json:
        print(json.dumps({"rows": rows, "loadavg": loads}, indent=2))
        return
    print(f"### Quantised KNN scan: recall@{args.k} against the exact scan\n")
    print("| vectors | rows | shortlist | recall@k | worst query | scan p50 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        mark = " (default)" if r.get("default") else ""
        worst = f"{r['worst']:.3f}" if "worst" in r else "-"
        print(
            f"| {r['set']} | {r['rows']} | {r['shortlist']}{mark} | {r['recall']:.4f} "
            f"| {worst} | {r['p50_ms']:.2f} |"
        )
    print(
        f"\n{len(sets) and len(sets[0][2])} queries a set; load average (1 min) "
        f"{min(loads):.2f} to {max(loads):.2f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    sys.exit(main())
