"""memctl review [approve ID | reject ID]: untrusted writes that ask to be kept long-term,
waiting for the owner (docs/provenance.md, "What waits on the owner"). Registered by
:func:`add_commands` from memctl's parser."""

from __future__ import annotations

import argparse
import datetime as _dt
from typing import TYPE_CHECKING, Any

from memoryd_client.cli._base import EXIT_OK, Context

if TYPE_CHECKING:
    from memoryd_client.cli._base import Command
    from memoryd_client.trust_types import ReviewItem


def add_commands(sub: Any, command: Command) -> None:
    review = command(
        sub,
        "review",
        cmd_list,
        "list what waits for your review: untrusted notes that ask to be kept",
        example="  memctl review -w alice\n"
        "  memctl review approve 3fa9c2d1   # the line is yours: its annotations apply\n"
        "  memctl review reject 3fa9c2d1    # forget it (its pre-image is kept)",
    )
    review_sub = review.add_subparsers(dest="review_command", metavar="ACTION")
    command(
        review_sub,
        "list",
        cmd_list,
        "list what waits for your review (what `memctl review` alone does)",
        example="  memctl review list -w alice --json",
    )
    p = command(
        review_sub,
        "approve",
        cmd_approve,
        "take a waiting line as yours (recalled, its annotations apply)",
        example="  memctl review approve 3fa9c2d1",
    )
    p.add_argument("id", metavar="ID", help="the item's id (4 or more of its characters)")
    p = command(
        review_sub,
        "reject",
        cmd_reject,
        "forget a waiting line (its pre-image kept for forget.keep_days)",
        example="  memctl review reject 3fa9c2d1",
    )
    p.add_argument("id", metavar="ID", help="the item's id (4 or more of its characters)")


def _when(at: float) -> str:
    return _dt.datetime.fromtimestamp(at).astimezone().isoformat(timespec="minutes")


def _describe(ctx: Context, item: ReviewItem) -> None:
    ctx.print(f"{item.id}  {item.path}:{item.line}  {item.origin} ({item.via}, {_when(item.at)})")
    ctx.print(f"    {item.text}")
    if item.session_id:
        read = f"; it read {item.session_read}" if item.session_read else ""
        ctx.print(f"    session {item.session_id}{read}")
    for reason in item.reasons:
        ctx.print(f"    - {reason}")


def cmd_list(args: argparse.Namespace, ctx: Context) -> int:
    found = ctx.client.review_list(workspace=ctx.workspace())
    if args.json:
        ctx.print_json(found.raw)
        return EXIT_OK
    if not found.items:
        ctx.print(f"nothing waits for review in {found.workspace}")
        return EXIT_OK
    ctx.print(f"{len(found.items)} waiting for review in {found.workspace}:")
    for item in found.items:
        _describe(ctx, item)
    ctx.print("approve: memctl review approve ID; reject (forget): memctl review reject ID")
    return EXIT_OK


def cmd_approve(args: argparse.Namespace, ctx: Context) -> int:
    item = ctx.client.review_approve(args.id, workspace=ctx.workspace())
    if args.json:
        ctx.print_json(item.raw)
        return EXIT_OK
    ctx.print(f"approved {item.id}: {item.path}:{item.line} is yours now")
    return EXIT_OK


def cmd_reject(args: argparse.Namespace, ctx: Context) -> int:
    item, forgot = ctx.client.review_reject(args.id, workspace=ctx.workspace())
    if args.json:
        ctx.print_json({"rejected": item.raw, "forget": forgot.raw})
        return EXIT_OK
    kept = f"; its pre-image is in {forgot.kept}" if forgot.kept else ""
    ctx.print(f"rejected {item.id}: {item.path}:{item.line} forgotten{kept}")
    return EXIT_OK
