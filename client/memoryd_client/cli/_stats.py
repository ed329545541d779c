"""memctl stats: what memory cost each agent, per day (the daemon's counts, docs/cli.md).
Registered by :func:`add_commands` from memctl's parser."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from memoryd_client.cli._base import EXIT_OK, Context
from memoryd_client.usage import METRICS

if TYPE_CHECKING:
    from memoryd_client.cli._base import Command

_SHORT = {
    "recalls": "recalls",
    "recall_empty": "empty",
    "recall_tokens": "recall tok",
    "digests": "digests",
    "digest_tokens": "digest tok",
    "llm_tokens_flush": "flush LLM",
    "llm_tokens_hippocampus": "hippo LLM",
    "llm_tokens_fallback_summary": "summary LLM",
    "recalled_searched": "searched again",
    "recalled_cited": "cited",
}


def add_commands(sub: Any, command: Command) -> None:
    p = command(
        sub,
        "stats",
        cmd_stats,
        "what memory costs each agent: tokens injected by recall and digests, empty "
        "recalls, LLM tokens of flush, hippocampus and summaries, recalled lines used again",
        example="  memctl stats                 # per agent, the last 30 days\n"
        "  memctl stats --days 7 --daily -w alice --json",
    )
    p.add_argument("--days", type=int, default=30, metavar="N", help="the last N days (30)")
    p.add_argument("--daily", action="store_true", help="one row per day, not per agent")


def cmd_stats(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.stats(days=args.days, workspace=ctx.workspace())
    if args.json:
        ctx.print_json(result.raw)
        return EXIT_OK
    if not result.rows:
        ctx.print(f"nothing counted since {result.since}")
        return EXIT_OK
    table: list[tuple[tuple[str, ...], dict[str, int]]]
    if args.daily:
        table = [((r.day, r.agent, r.workspace), r.metrics) for r in result.rows]
        head: tuple[str, ...] = ("day", "agent", "workspace")
    else:
        table = [((a, w), m) for (a, w), m in sorted(result.totals().items())]
        head = ("agent", "workspace")
    columns = [m for m in METRICS if any(row.get(m) for _, row in table)]
    cells = [[*key, *(str(row.get(m, 0)) for m in columns)] for key, row in table]
    header = [*head, *(_SHORT[m] for m in columns)]
    widths = [max(len(x) for x in col) for col in zip(header, *cells, strict=False)]
    ctx.print(f"since {result.since} ({result.days} days)")
    for line in (header, *cells):
        ctx.print("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())
    return EXIT_OK
