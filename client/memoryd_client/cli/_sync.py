"""memctl sync enable|status|now|disable: a workspace's memory on every machine, through git
(docs/sync.md). Registered by :func:`add_commands` from memctl's parser."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from memoryd_client.cli._base import EXIT_OK, Context

if TYPE_CHECKING:
    from collections.abc import Callable

    from memoryd_client.cli._base import Command, Handler
    from memoryd_client.sync_types import SyncRun, SyncState


def add_commands(
    sub: Any, command: Command, missing: Callable[[argparse.ArgumentParser, str], Handler]
) -> None:
    sync = sub.add_parser(
        "sync",
        help="keep a workspace's memory the same on every machine (git)",
        description="keep a workspace's memory the same on every machine (git)",
    )
    sync_sub = sync.add_subparsers(dest="sync_command", metavar="ACTION")
    sync.set_defaults(handler=missing(sync, "enable, status, now or disable"))
    p = command(
        sync_sub,
        "enable",
        cmd_enable,
        "sync the workspace through a git remote, then sync once",
        example="  memctl sync enable -w alice --remote git@github.com:me/alice-memory.git\n"
        "  memctl sync enable -w alice --remote file:///srv/git/memory.git --branch alice",
    )
    p.add_argument(
        "--remote",
        required=True,
        metavar="URL",
        help="file://, ssh (user@host:path) or https; credentials are git's own",
    )
    p.add_argument("--branch", metavar="NAME", help="the remote's branch (default main)")
    p.add_argument(
        "--repo",
        choices=("memoryd", "workspace"),
        help="memoryd: a repository of memoryd's own (default); workspace: commit into "
        "the workspace's own git repository",
    )
    command(
        sync_sub,
        "status",
        cmd_status,
        "last pull and push, what waits, conflicts, held files",
        example="  memctl sync status",
    )
    command(sync_sub, "now", cmd_now, "commit, pull, merge, push now", example="  memctl sync now")
    command(
        sync_sub,
        "disable",
        cmd_disable,
        "stop syncing the workspace",
        example="  memctl sync disable -w alice",
    )


def cmd_enable(args: argparse.Namespace, ctx: Context) -> int:
    run = ctx.client.sync_enable(
        args.remote, workspace=ctx.workspace(), branch=args.branch, repo=args.repo
    )
    if args.json:
        ctx.print_json(run.raw)
        return EXIT_OK
    _print_run(ctx, run)
    return EXIT_OK


def cmd_status(args: argparse.Namespace, ctx: Context) -> int:
    found = ctx.client.sync_status(workspace=ctx.workspace())
    if args.json:
        ctx.print_json(found.raw)
        return EXIT_OK
    if not found.workspaces:
        ctx.print("no workspace")
    for state in found.workspaces:
        _print_state(ctx, state)
    return EXIT_OK


def cmd_now(args: argparse.Namespace, ctx: Context) -> int:
    runs = ctx.client.sync_now(workspace=ctx.workspace())
    if args.json:
        ctx.print_json({"workspaces": [r.raw for r in runs]})
        return EXIT_OK
    if not runs:
        ctx.print("no workspace syncs (memctl sync enable -w NAME --remote URL)")
    for run in runs:
        _print_run(ctx, run)
    return EXIT_OK


def cmd_disable(args: argparse.Namespace, ctx: Context) -> int:
    answer = ctx.client.sync_disable(workspace=ctx.workspace())
    if args.json:
        ctx.print_json(answer)
        return EXIT_OK
    name = answer.get("workspace")
    if not answer.get("was_enabled"):
        ctx.print(f"{name}: sync was not enabled")
        return EXIT_OK
    ctx.print(f"{name}: sync disabled")
    if answer.get("repository"):
        ctx.note(f"memoryd's repository is kept in {answer['repository']}")
    return EXIT_OK


def _print_run(ctx: Context, run: SyncRun) -> None:
    r = run.report
    did = []
    if r.get("committed"):
        did.append("committed")
    if r.get("pulled"):
        did.append(f"pulled {r['pulled']} commit(s)")
    if r.get("written"):
        did.append(f"updated {len(r['written'])} file(s)")
    if r.get("pushed"):
        did.append("pushed")
    ctx.print(f"{run.workspace}: {', '.join(did) or 'up to date'}")
    for path, n in (r.get("forgotten") or {}).items():
        ctx.print(f"  forgotten elsewhere: {n} line(s) removed from {path}")
    if r.get("rewritten"):
        ctx.note("the remote's history was rewritten (a purge on another host): adopted")
    if r.get("offline"):
        ctx.note(f"remote unreachable, retried later: {r['offline']}")
    if r.get("error"):
        ctx.note(str(r["error"]))
    if run.status is not None:
        _print_problems(ctx, run.status)


def _print_state(ctx: Context, s: SyncState) -> None:
    if not s.enabled:
        ctx.print(f"{s.workspace}: sync off")
        return
    ctx.print(f"{s.workspace}: {s.remote} ({s.branch}, {s.repo} repository)")
    ctx.print(f"  last pull  {s.last_pull_at or 'never'}")
    ctx.print(f"  last push  {s.last_push_at or 'never'}")
    waiting = s.waiting
    if waiting:
        files = waiting.get("files") or []
        ctx.print(
            f"  waiting    {waiting.get('commits', 0)} commit(s) to push"
            + (f" (oldest {waiting['oldest_at']})" if waiting.get("oldest_at") else "")
            + f", {len(files)} file(s) to commit"
        )
    if s.running:
        ctx.print("  a sync is running")
    if s.next_sync_at:
        ctx.print(f"  next sync  {s.next_sync_at}")
    if s.offline_since:
        ctx.print(f"  offline since {s.offline_since} ({s.failures} failed tries)")
    _print_problems(ctx, s)


def _print_problems(ctx: Context, s: SyncState) -> None:
    if s.problem:
        ctx.note(s.problem)
    last = s.last_sync
    if last and not last.get("ok") and last.get("error") and not s.offline_since:
        ctx.note(f"last sync failed: {last['error']}")
    for c in s.conflicts:
        ctx.print(f"  conflict note: {c.path}:{c.line} (both hosts changed the lines below it)")
    for h in s.held:
        kinds = ", ".join(h.kinds)
        ctx.print(f"  held back: {h.path} holds a secret ({kinds}): not pushed until removed")
