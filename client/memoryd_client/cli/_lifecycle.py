"""memctl's commands that change what memory holds as a whole: forget, export, import
(docs/lifecycle.md). Registered by :func:`add_commands` from memctl's parser."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from memoryd_client.cli._base import EXIT_OK, Context
from memoryd_client.errors import ClientError

if TYPE_CHECKING:
    from memoryd_client.cli._base import Command
    from memoryd_client.types import ForgetResult


def add_commands(sub: Any, command: Command) -> None:
    """forget, export and import, each with its options."""
    p = command(
        sub,
        "export",
        cmd_export,
        "write the workspace's memory to a .tar.gz (markdown, provenance, manifest)",
        example="  memctl export -w alice -o alice-memory.tar.gz",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the .tar.gz to write")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace FILE if it exists (a regular file only; never a memory file)",
    )
    p = command(
        sub,
        "import",
        cmd_import,
        "merge an export into the workspace (no line twice)",
        example="  memctl import alice-memory.tar.gz -w alice",
    )
    p.add_argument("archive", metavar="FILE", help="a .tar.gz written by memctl export")
    p.add_argument("--dry-run", action="store_true", help="only count what it would add")
    _add_forget(sub, command)


def _add_forget(sub: Any, command: Command) -> None:
    p = command(
        sub,
        "forget",
        cmd_forget,
        "remove lines from memory for good (shows what would go unless --yes)",
        example="  memctl forget --path memory/2025-03-11.md --lines 4-6\n"
        "  memctl forget --query 'old deploy target' --yes\n"
        "  memctl forget --session 2f1c-abc --yes --purge",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--path", metavar="PATH", help="a memory file (with --lines)")
    what.add_argument("--query", metavar="TEXT", help="the lines a search finds (shown first)")
    what.add_argument(
        "--session",
        metavar="ID",
        help="every line that session wrote, its notes and summaries, and its transcript",
    )
    p.add_argument("--lines", metavar="A-B", help="with --path: the lines, e.g. 4-6 or 12")
    p.add_argument(
        "--max-results", type=int, metavar="N", help="with --query: at most N hits (default 5)"
    )
    p.add_argument("--yes", action="store_true", help="remove them (default: only show them)")
    p.add_argument("--dry-run", action="store_true", help="only show what would go (the default)")
    p.add_argument(
        "--purge",
        action="store_true",
        help="keep no pre-image (default: kept under memory/.history for forget.keep_days) "
        "and remove every copy memoryd holds: the same line in the other memory files, older "
        "pre-images, kept exports, the index and state databases; what it cannot reach is named",
    )


def cmd_forget(args: argparse.Namespace, ctx: Context) -> int:
    if args.path and not args.lines:
        raise ClientError("--path needs --lines (e.g. --lines 4-6)")
    if args.lines and not args.path:
        raise ClientError("--lines goes with --path")
    apply = args.yes and not args.dry_run
    result = ctx.client.forget(
        workspace=ctx.workspace(),
        path=args.path,
        lines=args.lines,
        query=args.query,
        session_id=args.session,
        max_results=args.max_results,
        dry_run=not apply,
        purge=args.purge,
    )
    if args.json:
        ctx.print_json(result.raw)
        return EXIT_OK
    print_forget(ctx, result)
    return EXIT_OK


def print_forget(ctx: Context, result: ForgetResult) -> None:
    verb = "would forget" if result.dry_run else "forgot"
    for r in result.removed:
        if r.whole_file:
            ctx.print(f"{verb} {r.path} (the whole transcript)")
            continue
        via = f" (through {', '.join(r.via)})" if r.via else ""
        ctx.print(f"{verb} {r.path}:{','.join(r.lines)}{via}")
        for line in r.text.splitlines():
            ctx.print(f"    {line}")
    for hit in result.unmatched:
        ctx.note(
            f"{hit.path}:{','.join(hit.lines)} was found by meaning, no line holds a word of "
            "the query: nothing taken there (name lines with --path and --lines)"
        )
    for path in result.left_outside:
        ctx.note(f"{path} is outside the workspace: not deleted (the session is never flushed)")
    if not result.removed:
        ctx.print(
            "nothing to forget" + (" (session marked forgotten)" if result.session_id else "")
        )
    _print_purged(ctx, result)
    _print_sync(ctx, result)
    if result.dry_run:
        if result.removed:
            ctx.note(f"dry run: {result.lines} line(s) in {result.files} file(s); add --yes")
    elif result.kept:
        ctx.note(f"pre-image kept in {result.kept} (forget.keep_days; --purge keeps none)")


def _print_purged(ctx: Context, result: ForgetResult) -> None:
    """A purge: the copies it rewrote, and above all what it could not reach (the person
    must deal with those: an archive written elsewhere, a git history, a transcript)."""
    purged = result.raw.get("purged")
    if not isinstance(purged, dict):
        return
    history, exports = purged.get("history") or {}, purged.get("exports") or {}
    older = [*history.get("rewritten", ()), *history.get("removed", ())]
    kept = [*exports.get("rewritten", ()), *exports.get("removed", ())]
    ctx.note(
        f"purged: no pre-image kept; {len(older)} older history file(s) and {len(kept)} kept "
        "export(s) rewritten or removed; the index and state databases scrubbed"
    )
    for item in purged.get("not_reached") or ():
        ctx.note(f"NOT reached: {item.get('path')}: {item.get('why')}")
    for path in purged.get("still_in") or ():
        ctx.note(
            f"still in {path}: an agent's transcript quoting the line, left as it is "
            "(forget its session to remove it)"
        )


def _print_sync(ctx: Context, result: ForgetResult) -> None:
    """A purge on a synced workspace: what it does to the sync history (docs/sync.md)."""
    sync = result.raw.get("sync")
    if not isinstance(sync, dict):
        return
    remote = sync.get("remote")
    if result.dry_run:
        ctx.note(
            f"this workspace syncs to {remote}: the purge rewrites memoryd's sync history "
            "without these lines and force-pushes it; the other hosts remove them at their "
            f"next sync. Out of reach: {sync.get('unreachable')}"
        )
    elif sync.get("done"):
        ctx.note(f"sync history rewritten without them and force-pushed to {remote}")
    else:
        ctx.note(
            f"sync history rewritten here; the force-push to {remote} is pending "
            f"({sync.get('pending') or sync.get('error')}): every sync tries it again"
        )


def cmd_export(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.export(args.output, workspace=ctx.workspace(), force=args.force)
    if args.json:
        ctx.print_json(result.raw)
    else:
        ctx.print(f"exported {result.files} file(s) to {result.path} ({result.bytes} bytes)")
    return EXIT_OK


def cmd_import(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.import_archive(
        args.archive, workspace=ctx.workspace(), dry_run=args.dry_run
    )
    if args.json:
        ctx.print_json(result.raw)
        return EXIT_OK
    verb = "would add" if result.dry_run else "added"
    ctx.print(
        f"{verb} {result.lines_added} line(s): {result.files_created} new file(s), "
        f"{result.files_merged} merged; {result.lines_already_there} already there"
    )
    if result.redacted:
        ctx.note(f"{result.redacted} secret(s) replaced by [REDACTED:kind] on the way in")
    return EXIT_OK
