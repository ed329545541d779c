"""Judging a ranked result list against LoCoMo-style qrels, as shared/bench/eval_retrieval.py
does (recall@k, full@k, MRR over the top 10, avg_span, snip@k). Kept in step with it."""

from __future__ import annotations

from typing import Any

KS = (1, 3, 5, 10)


def judge(q: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, float]:
    locs = [(loc["dia_id"], loc["path"], loc["line"]) for loc in q["evidence_locations"]]
    evidence = q["evidence"]
    covered_at: dict[str, int] = {}
    for rank, r in enumerate(results, 1):
        for dia, path, line in locs:
            if (
                dia not in covered_at
                and r["path"] == path
                and r["start_line"] <= line <= r["end_line"]
            ):
                covered_at[dia] = rank
    first = min(covered_at.values(), default=None)
    snip_at: dict[str, int] = {}
    for rank, r in enumerate(results, 1):
        for dia in evidence:
            if dia not in snip_at and f"[{dia}]" in r["snippet"]:
                snip_at[dia] = rank
    first_snip = min(snip_at.values(), default=None)
    spans = [r["end_line"] - r["start_line"] + 1 for r in results]
    m = {
        "mrr": 1.0 / first if first else 0.0,
        "avg_span": sum(spans) / len(spans) if spans else 0.0,
    }
    for k in KS:
        n_cov = sum(1 for d in evidence if covered_at.get(d, 10**9) <= k)
        m[f"recall@{k}"] = float(first is not None and first <= k)
        m[f"full@{k}"] = float(n_cov == len(evidence))
        m[f"snip@{k}"] = float(first_snip is not None and first_snip <= k)
    return m


def judge_sessions(q: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, float]:
    """The results counted per file, the unit LongMemEval's recall_any@k counts (a session;
    a LoCoMo daily file is one): each file ranks where its first result does, and a hit is a
    file that holds an evidence line, wherever in it."""
    gold = {loc["path"] for loc in q["evidence_locations"]}
    files = list(dict.fromkeys(r["path"] for r in results))
    first = next((rank for rank, path in enumerate(files, 1) if path in gold), None)
    m = {"mrr": 1.0 / first if first else 0.0}
    for k in KS:
        m[f"recall@{k}"] = float(first is not None and first <= k)
    return m


def aggregate(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    return {"n": len(rows), **{k: round(sum(r[k] for r in rows) / len(rows), 4) for k in rows[0]}}
