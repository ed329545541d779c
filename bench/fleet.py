"""Fleet mode (docs/fleet.md) against a real Postgres + pgvector: publish throughput and
remote search latency, each beside the local engine on the same index in the same run.

    python bench/fleet.py [--sizes 10000] [--big] [--rounds 3] [--json]
    python bench/fleet.py --locomo ../shared/bench/locomo-dev [--index-dir DIR]

For each size a synthetic workspace (bench/synth.py) is indexed with the deterministic
BenchProvider (search_latency.py: 384-dim vectors in seconds; latency, not quality), then
published in full to a scratch Postgres (tests/scratch_postgres.py: the pgserver wheel's
Postgres 16 + pgvector on a Unix socket), then 50 queries are searched ``--rounds`` times
per mode locally (WorkspaceIndex.search, in-memory copies) and remotely (RemoteIndex.search
over one connection, query embedding excluded in both). ``--big`` adds 100k chunks.

``--locomo`` instead indexes the LoCoMo dev workspaces with the bundled local model (as
bench/retrieval.py does), publishes them, and asks every question both ways (hybrid, the
default fusion, top 10): R@k and MRR through the fleet next to the local engine's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from pgvector.psycopg import register_vector

from latency import summarize
from memoryd.embeddings.base import as_query_vector
from memoryd.fleet.local_reader import LocalIndexReader
from memoryd.fleet.postgres_schema import ensure_schema
from memoryd.fleet.publisher import Fingerprint, WorkspacePublisher
from memoryd.fleet.remote_search import RemoteIndex
from memoryd.fleet.service import text_reader
from memoryd.index.types import Mode, SearchRequest
from memoryd.runtime.config import config_from_mapping
from memoryd.runtime.logs import configure_logging
from search_latency import BenchProvider, build
from synth import make_queries

if TYPE_CHECKING:
    from scratch_postgres import ScratchPostgres

SCHEMA = "memoryd_fleet"


def run_size(size: int, pg: ScratchPostgres, work: Path, rounds: int) -> list[dict[str, Any]]:
    cfg = config_from_mapping({})
    queries = make_queries(50)
    ix, info = build(size, work, cfg, 1, queries)
    dsn = pg.create_database(f"bench{size}")
    rows: list[dict[str, Any]] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        ensure_schema(conn, SCHEMA)
        register_vector(conn)
        reader = LocalIndexReader(ix.db_path, text_reader(ix))
        pub = WorkspacePublisher(SCHEMA, "bench", "ws", "bench-holder", 300.0)
        started = time.perf_counter()
        report = pub.publish(conn, reader, ix.generation, Fingerprint("bench", "hash", 384))
        publish_s = time.perf_counter() - started
        conn.execute("ANALYZE")
        rows.append(
            {
                "size": info["chunks"],
                "what": "publish (full)",
                "chunks": report.chunks,
                "seconds": round(publish_s, 2),
                "chunks_per_s": round(report.chunks / publish_s, 1),
            }
        )
        remote = RemoteIndex(SCHEMA)
        ws = remote.one(conn, "bench", "ws")
        provider = BenchProvider()
        qvecs = {q: as_query_vector(provider.embed([q])[0]) for q in queries}
        for mode in ("keyword", "hybrid"):
            m: Mode = mode  # type: ignore[assignment]
            local_ms: list[float] = []
            remote_ms: list[float] = []
            for r in range(rounds + 1):  # round 0 warms both sides
                for q in queries:
                    req = SearchRequest(q, mode=m)
                    t = time.perf_counter()
                    ix.search(req)
                    lt = (time.perf_counter() - t) * 1000
                    t = time.perf_counter()
                    remote.search(
                        conn,
                        ws,
                        req,
                        cfg.search,
                        qvecs[q] if mode == "hybrid" else None,
                        cfg.index.vector_window_tokens,
                    )
                    rt = (time.perf_counter() - t) * 1000
                    if r:
                        local_ms.append(lt)
                        remote_ms.append(rt)
            loc, rem = summarize(local_ms), summarize(remote_ms)
            rows.append(
                {
                    "size": info["chunks"],
                    "what": f"search {mode}",
                    "local_p50": round(loc["p50"], 2),
                    "local_p99": round(loc["p99"], 2),
                    "remote_p50": round(rem["p50"], 2),
                    "remote_p99": round(rem["p99"], 2),
                    "ratio_p50": round(rem["p50"] / loc["p50"], 1),
                }
            )
        reader.close()
    ix.close()
    return rows


def locomo(root: Path, index_dir: Path, pg: ScratchPostgres) -> list[dict[str, Any]]:
    from _judge import aggregate, judge
    from retrieval import build_indexes

    cfg = config_from_mapping({"embedding": {"provider": "local"}})
    qrels = [
        json.loads(line) for line in (root / "qrels.jsonl").read_text().splitlines() if line.strip()
    ]
    convs = sorted({q["conv"] for q in qrels})
    indexes = build_indexes(root.resolve(), convs, cfg, index_dir)
    provider = next(iter(indexes.values())).queries.provider
    assert provider is not None
    dsn = pg.create_database("locomo")
    local_m, fleet_m = [], []
    with psycopg.connect(dsn, autocommit=True) as conn:
        ensure_schema(conn, SCHEMA)
        register_vector(conn)
        remote = RemoteIndex(SCHEMA)
        fp = Fingerprint(provider.name, provider.model, provider.dims or 0)
        for conv, ix in indexes.items():
            reader = LocalIndexReader(ix.db_path, text_reader(ix))
            WorkspacePublisher(SCHEMA, "bench", conv, "bench-holder", 300.0).publish(
                conn, reader, ix.generation, fp
            )
            reader.close()
        spaces = {conv: remote.one(conn, "bench", conv) for conv in indexes}
        for q in qrels:
            req = SearchRequest(q["question"], max_results=10)
            local = indexes[q["conv"]].search(req).results
            qvec = as_query_vector(provider.embed([q["question"]])[0])
            hits, _ = remote.search(
                conn, spaces[q["conv"]], req, cfg.search, qvec, cfg.index.vector_window_tokens
            )
            local_m.append(judge(q, [h.to_dict() for h in local]))
            fleet_m.append(judge(q, [h.to_dict() for h in hits]))
    for ix in indexes.values():
        ix.close()
    return [{"path": "local", **aggregate(local_m)}, {"path": "fleet", **aggregate(fleet_m)}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--big", action="store_true", help="also 100k chunks")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--locomo", type=Path, help="LoCoMo dev workspaces: quality, fleet vs local")
    ap.add_argument("--index-dir", type=Path, help="--locomo: keep the indexes here")
    args = ap.parse_args()
    configure_logging("warning", json=True)
    # The tests' throwaway Postgres (test-only code: it is not in the wheel).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from scratch_postgres import ScratchPostgres

    if args.locomo:
        with tempfile.TemporaryDirectory() as tmp, ScratchPostgres() as pg:
            found = locomo(args.locomo, args.index_dir or Path(tmp), pg)
        if args.json:
            print(json.dumps(found, indent=2))
            return
        cols = ["recall@1", "recall@3", "recall@5", "recall@10", "mrr", "snip@5"]
        print("| path | n | " + " | ".join(cols) + " |")
        print("|---|---:|" + "---:|" * len(cols))
        for r in found:
            print(f"| {r['path']} | {r['n']} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")
        print(
            "| fleet - local | | "
            + " | ".join(f"{found[1][c] - found[0][c]:+.3f}" for c in cols)
            + " |"
        )
        return
    sizes = [int(s) for s in args.sizes.split(",")] + ([100_000] if args.big else [])
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, ScratchPostgres() as pg:
        for size in sizes:
            rows += run_size(size, pg, Path(tmp), args.rounds)
            print(f"done {size}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        "| chunks | what | local p50 ms | local p99 ms | fleet p50 ms | fleet p99 ms "
        "| fleet/local p50 | publish |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if r["what"].startswith("publish"):
            print(
                f"| {r['size']} | {r['what']} | | | | | | {r['chunks']} chunks in "
                f"{r['seconds']} s = **{r['chunks_per_s']} chunks/s** |"
            )
        else:
            print(
                f"| {r['size']} | {r['what']} | {r['local_p50']} | {r['local_p99']} | "
                f"{r['remote_p50']} | {r['remote_p99']} | {r['ratio_p50']}x | |"
            )


if __name__ == "__main__":
    main()
