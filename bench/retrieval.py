"""Retrieval quality of the engine, in-process, on LoCoMo-style workspaces.

    python bench/retrieval.py ../shared/bench/locomo-dev [--mode hybrid] [--fusion rrf] [--json]
    python bench/retrieval.py ../shared/bench/locomo-dev --compare   # all modes side by side
    python bench/retrieval.py ../shared/bench/locomo-dev --misses    # where the misses at 5 rank
    python bench/retrieval.py ../shared/bench/locomo-dev --by-session  # counted per daily file

``--misses`` asks, for every question the chosen mode misses in its top 5, where its first
evidence line ranks in keyword-only and vector-only search (top 20, no min_score): a miss
that neither signal ranks near the top cannot be fixed by fusing them differently.

``--by-session`` counts the chosen mode's top SESSION_DEPTH results (no min_score) per file,
as LongMemEval's recall_any@k counts sessions: what figures such as agentmemory's "R@5 95.2"
measure, not the line-level evidence the table above asks for.

The workspaces are the folders of WORKSPACES_DIR that the questions name (their ``conv``);
QRELS defaults to WORKSPACES_DIR/qrels.jsonl. ``--json`` prints one JSON object (a list of
them with ``--compare``) and nothing else on stdout. Indexes are built once under
--index-dir (default a temp dir) and reused, so a sweep pays for embeddings once.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _judge import KS, aggregate, judge, judge_sessions
from memoryd.embeddings.factory import choose_provider
from memoryd.index.types import SearchRequest
from memoryd.index.workspace import WorkspaceIndex
from memoryd.runtime.config import Config, config_from_mapping
from memoryd.runtime.logs import configure_logging

COLUMNS = ["recall@1", "recall@3", "recall@5", "recall@10", "full@10", "mrr", "snip@5", "avg_span"]
COMBOS = [
    ("keyword", "weighted"),
    ("vector", "weighted"),
    ("hybrid", "weighted"),
    ("hybrid", "rrf"),
]


def build_indexes(
    root: Path, convs: list[str], cfg: Config, index_dir: Path
) -> dict[str, WorkspaceIndex]:
    choice = choose_provider(cfg.embedding)
    out = {}
    for conv in convs:
        ix = WorkspaceIndex(
            root / conv, index_dir / f"{conv}.sqlite", cfg, choice.provider, choice.reason
        )
        ix.open()
        started = time.monotonic()
        ix.sync()
        ix.wait_embedded()
        print(
            f"indexed {conv} in {time.monotonic() - started:.1f}s ({choice.reason})",
            file=sys.stderr,
        )
        out[conv] = ix
    return out


def evaluate(
    indexes: dict[str, WorkspaceIndex],
    qrels: list[dict[str, Any]],
    mode: str,
    fusion: str,
    min_score: float | None,
) -> dict[str, Any]:
    per_q = []
    for q in qrels:
        resp = indexes[q["conv"]].search(
            SearchRequest(
                q["question"], max_results=10, min_score=min_score, mode=mode, fusion=fusion
            )
        )  # type: ignore[arg-type]
        per_q.append((q, judge(q, [h.to_dict() for h in resp.results])))
    by_cat: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q, m in per_q:
        by_cat[f"{q['category']}:{q.get('category_name', '')}"].append(m)
    return {
        "mode": mode,
        "fusion": fusion,
        "overall": aggregate([m for _, m in per_q]),
        "by_category": {k: aggregate(v) for k, v in sorted(by_cat.items())},
        "per_question": [m for _, m in per_q],
    }


MISS_DEPTH = 20  # how deep --misses looks in the keyword-only and vector-only rankings


def first_ranks(
    indexes: dict[str, WorkspaceIndex], qrels: list[dict[str, Any]], mode: str
) -> list[int | None]:
    """Each question's rank of its first evidence hit in ``mode`` alone (None: below
    MISS_DEPTH), with no min_score, so a weak but correct match still counts."""
    out: list[int | None] = []
    for q in qrels:
        req = SearchRequest(q["question"], max_results=MISS_DEPTH, min_score=0.0, mode=mode)  # type: ignore[arg-type]
        mrr = judge(q, [h.to_dict() for h in indexes[q["conv"]].search(req).results])["mrr"]
        out.append(round(1 / mrr) if mrr else None)
    return out


def print_misses(
    indexes: dict[str, WorkspaceIndex], qrels: list[dict[str, Any]], report: dict[str, Any]
) -> None:
    """The questions ``report`` misses at 5, by category, and where keyword-only and
    vector-only search rank them."""
    missed = [i for i, m in enumerate(report["per_question"]) if not m["recall@5"]]
    kw = first_ranks(indexes, [qrels[i] for i in missed], "keyword")
    vec = first_ranks(indexes, [qrels[i] for i in missed], "vector")

    def within(r: int | None, k: int) -> bool:
        return r is not None and r <= k

    cols = ["misses", "kw top 5", "vec top 5", "either top 5", "either top 10", "neither top 20"]
    rows: dict[str, list[int]] = defaultdict(lambda: [0] * len(cols))
    for i, k, v in zip(missed, kw, vec, strict=True):
        q = qrels[i]
        for cat in (f"{q['category']}:{q.get('category_name', '')}", "all"):
            row = rows[cat]
            for n, hit in enumerate(
                (
                    True,
                    within(k, 5),
                    within(v, 5),
                    within(k, 5) or within(v, 5),
                    within(k, 10) or within(v, 10),
                    k is None and v is None,
                )
            ):
                row[n] += hit
    print(f"\n### Misses at 5 ({report['mode']}/{report['fusion']}) and their ranks alone\n")
    print("| category | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for cat in [*sorted(c for c in rows if c != "all"), "all"]:
        print(f"| {cat} | " + " | ".join(str(x) for x in rows[cat]) + " |")
    print("\n| question | category | first evidence rank: keyword / vector (top 20) |")
    print("|---|---|---|")
    for i, k, v in zip(missed, kw, vec, strict=True):
        q = qrels[i]
        print(f"| {q['question']} | {q['category']} | {k or '-'} / {v or '-'} |")


SESSION_DEPTH = 50  # results --by-session reads: enough for ten distinct files


def print_by_session(
    indexes: dict[str, WorkspaceIndex], qrels: list[dict[str, Any]], mode: str, fusion: str
) -> None:
    """``mode``'s results counted per file (judge_sessions), by category."""
    by_cat: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q in qrels:
        req = SearchRequest(
            q["question"], max_results=SESSION_DEPTH, min_score=0.0, mode=mode, fusion=fusion
        )  # type: ignore[arg-type]
        m = judge_sessions(q, [h.to_dict() for h in indexes[q["conv"]].search(req).results])
        by_cat[f"{q['category']}:{q.get('category_name', '')}"].append(m)
        by_cat["all"].append(m)
    cols = [*(f"recall@{k}" for k in KS), "mrr"]
    print(f"\n### Counted per session (file), {mode}/{fusion}, top {SESSION_DEPTH}, no min_score\n")
    print("| category | n | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    for cat in [*sorted(c for c in by_cat if c != "all"), "all"]:
        agg = aggregate(by_cat[cat])
        print(f"| {cat} | {agg['n']} | " + " | ".join(f"{agg[c]:.3f}" for c in cols) + " |")


def print_table(rows: list[tuple[str, dict[str, Any]]]) -> None:
    print(f"| {'run':<26} | {'n':>4} | " + " | ".join(f"{c:>9}" for c in COLUMNS) + " |")
    print("|" + "---|" * (len(COLUMNS) + 2))
    for name, agg in rows:
        print(
            f"| {name:<26} | {agg['n']:>4} | "
            + " | ".join(f"{agg[c]:>9.3f}" for c in COLUMNS)
            + " |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("workspaces", type=Path)
    ap.add_argument("--qrels", type=Path)
    ap.add_argument("--mode", choices=["keyword", "vector", "hybrid"], default="hybrid")
    ap.add_argument("--fusion", choices=["weighted", "rrf"])
    ap.add_argument("--compare", action="store_true", help="all modes and fusions side by side")
    ap.add_argument("--min-score", type=float, help="override search.min_score")
    ap.add_argument("--provider", default="local", choices=["local", "openai", "none", "auto"])
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="config override, e.g. --set index.chunk_tokens=256",
    )
    ap.add_argument(
        "--by-session",
        action="store_true",
        help="also count the results per file (session), as LongMemEval's recall_any@k does",
    )
    ap.add_argument("--index-dir", type=Path, help="keep indexes here (reused across runs)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--misses",
        action="store_true",
        help="for each question missed at 5, its rank in keyword-only and vector-only search",
    )
    args = ap.parse_args()
    # The engine's log goes to stderr, warnings only: stdout is the table, or one JSON object.
    configure_logging("warning", json=True)

    data: dict[str, Any] = {"embedding": {"provider": args.provider}}
    for item in args.set:
        key, _, value = item.partition("=")
        section, _, name = key.partition(".")
        try:  # numbers, true/false, lists; anything else is a string (a model name)
            data.setdefault(section, {})[name] = json.loads(value)
        except ValueError:
            data.setdefault(section, {})[name] = value
    cfg = config_from_mapping(data)
    qrels_path = args.qrels or args.workspaces / "qrels.jsonl"
    if not qrels_path.is_file():
        ap.error(f"no questions at {qrels_path} (give --qrels)")
    qrels = [json.loads(line) for line in qrels_path.read_text().splitlines() if line.strip()]
    convs = sorted({q["conv"] for q in qrels})
    if missing := [c for c in convs if not (args.workspaces / c).is_dir()]:
        ap.error(f"the questions name workspaces not in {args.workspaces}: {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-") as tmp:
        index_dir = args.index_dir or Path(tmp)
        indexes = build_indexes(args.workspaces.resolve(), convs, cfg, index_dir)
        combos = COMBOS if args.compare else [(args.mode, args.fusion or cfg.search.fusion)]
        reports = [evaluate(indexes, qrels, m, f, args.min_score) for m, f in combos]
        if args.json:
            for r in reports:
                del r["per_question"]
            print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2))
        else:
            print_table([(f"{r['mode']}/{r['fusion']}", r["overall"]) for r in reports])
            if len(reports) == 1:
                print()
                print_table(list(reports[0]["by_category"].items()))
            if args.misses:  # of the chosen mode and fusion, also with --compare
                chosen = (args.mode, args.fusion or cfg.search.fusion)
                print_misses(
                    indexes,
                    qrels,
                    next(r for r in reports if (r["mode"], r["fusion"]) == chosen),
                )
            if args.by_session:
                print_by_session(indexes, qrels, args.mode, args.fusion or cfg.search.fusion)
        for ix in indexes.values():
            ix.close()


if __name__ == "__main__":
    main()
