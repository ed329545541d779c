"""``memctl search``: where the query comes from, and a search across workspaces.

Across workspaces is one search per workspace from here, merged by score: each workspace's
scores are on the same 0..1 scale (cosine and BM25 relative to its own best keyword hit),
so the merge is a fair ranking though not identical to one index over everything.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any, TextIO

from memoryd_client.cli._base import UsageError
from memoryd_client.client import MemoryClient
from memoryd_client.types import SearchHit, SearchResult

DEFAULT_MAX_RESULTS = 6  # search.max_results' default


def read_query(args: argparse.Namespace, stdin: TextIO) -> str:
    """The query: words, ``--query TEXT``, or ``-`` for stdin; empty is a usage error."""
    words: list[str] = args.query or []
    if args.query_option is not None and words:
        raise UsageError("give the query once: as words, with --query, or - to read stdin")
    if args.query_option is not None:
        text = str(args.query_option)
    elif words == ["-"]:
        text = stdin.read()
    else:
        text = " ".join(words)
    if not text.strip():
        raise UsageError(
            "empty query: give words to search for (as arguments, with --query, "
            "or - to read them from stdin)"
        )
    return text


def search_many(client: MemoryClient, names: list[str], query: str, **options: Any) -> SearchResult:
    """The best hits of every named workspace, each hit carrying its workspace."""
    per_workspace = [(name, client.search(query, workspace=name, **options)) for name in names]
    hits: list[SearchHit] = []
    raw_hits: list[dict[str, Any]] = []
    for name, result in per_workspace:
        for hit, raw in zip(result.results, result.raw.get("results", []), strict=False):
            hits.append(replace(hit, workspace=name))
            raw_hits.append({**raw, "workspace": name})
    # Each workspace answered its own top max_results (its default when not given); the
    # merge keeps as many, the daemon's default when unknown here.
    limit = options.get("max_results") or DEFAULT_MAX_RESULTS
    order = sorted(range(len(hits)), key=lambda i: -hits[i].score)[:limit]
    degraded = [f"{name}: {d}" for name, r in per_workspace for d in r.degraded]
    notices = list(dict.fromkeys(n for _, r in per_workspace for n in r.notices))
    raw = {
        "results": [raw_hits[i] for i in order],
        "workspaces": names,
        "mode_used": ",".join(sorted({r.mode_used for _, r in per_workspace if r.mode_used})),
        "took_ms": round(sum(r.took_ms or 0.0 for _, r in per_workspace), 3),
        "pending_files": sum(r.pending_files for _, r in per_workspace),
    }
    if degraded:
        raw["degraded"] = degraded
    if notices:
        raw["notices"] = notices
    return SearchResult(
        results=[hits[i] for i in order],
        degraded=degraded,
        notices=notices,
        pending_files=int(raw["pending_files"]),
        raw=raw,
    )
