"""memctl's commands: each takes the parsed options and a :class:`~memoryd_client.cli.Context`
and returns the exit code; errors are raised for the edge (``_main.main``) to report. The
agents' commands are in ``_agents``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd_client import protocol
from memoryd_client.cli._base import (
    EXIT_ERROR,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    Context,
    UsageError,
    text_argument,
    workspace_param,
)
from memoryd_client.cli._format import format_jobs, format_run, format_search, format_status
from memoryd_client.cli._progress import progress_reporter
from memoryd_client.cli._search import read_query, search_many, search_options
from memoryd_client.command_names import typed
from memoryd_client.errors import ClientError
from memoryd_client.paths import socket_path as resolve_socket_path

if TYPE_CHECKING:
    from memoryd_client.types import ReindexResult, SearchResult


def status(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.status(ctx.workspace())
    if args.json:
        ctx.print_json(result.raw)
    else:
        for line in format_status(result):
            ctx.print(line)
    return EXIT_OK


def search(args: argparse.Namespace, ctx: Context) -> int:
    query = read_query(args, sys.stdin)
    options = search_options(args)
    fleet = options.pop("fleet")
    if args.all and args.workspace:
        raise UsageError("--all searches every workspace: leave out -w/--workspace")
    if fleet:  # every host's workspaces: one search the daemon asks Postgres
        if args.workspace or args.all:
            raise UsageError(
                "--fleet searches every workspace of every host: leave out -w/--workspace and --all"
            )
        result = ctx.client.search(query, fleet=True, **options)
        return _print_search(result, args, ctx)
    workspace = None if args.all else ctx.workspace()
    names = [ws.name for ws in ctx.workspaces()] if workspace is None else []
    if args.all and not names:
        raise ClientError(
            f"no workspace is registered; add one with `{typed('memctl')} workspace add PATH`"
        )
    if args.all or len(names) > 1:
        result = search_many(ctx.client, names, query, **options)
    else:
        result = ctx.client.search(query, workspace=workspace, **options)
    return _print_search(result, args, ctx)


def _print_search(result: SearchResult, args: argparse.Namespace, ctx: Context) -> int:
    if args.json:
        ctx.print_json(protocol.with_hit_maps(result.raw))
    else:
        for line in format_search(result):
            ctx.print(line)
        for reason in result.degraded:
            ctx.note(reason)
    for notice in result.notices:
        ctx.note(notice)
    return EXIT_OK


def get(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.get(
        args.path,
        workspace=ctx.workspace(),
        from_line=args.from_line,
        lines=args.lines,
        raw=args.raw,
    )
    if args.from_line and args.from_line > max(result.total_lines, 1):
        raise ClientError(
            f"{result.path} has {result.total_lines} lines: --from {args.from_line} is past the end"
        )
    if args.json:
        ctx.print_json(result.raw)
    else:
        ctx.stdout.write(
            result.text if result.text.endswith("\n") or not result.text else result.text + "\n"
        )
    return EXIT_OK


def _on_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (ValueError, AttributeError):  # closed, or replaced by something without one
        return False


def append(args: argparse.Namespace, ctx: Context) -> int:
    text = text_argument(args.text, "nothing to append: the text is empty")
    # A person at a terminal is the owner; a pipe or a program is an agent (docs/provenance.md).
    origin = args.origin or ("owner" if _on_terminal() else "agent")
    result = ctx.client.append(
        text,
        workspace=ctx.workspace(),
        date=args.date,
        heading=args.heading,
        origin=origin,
        session_id=args.session_id,
        session_kind=args.session_kind,
    )
    if args.json:
        ctx.print_json(result.raw)
    elif result.duplicate:
        ctx.print(f"already there: {result.path}:{result.start_line} (nothing written)")
    else:
        ctx.print(f"appended to {result.path}:{result.start_line}-{result.end_line}")
    return EXIT_OK


def reindex(args: argparse.Namespace, ctx: Context) -> int:
    workspace = ctx.workspace()
    progress = progress_reporter(ctx.stderr, args.json)
    try:
        result = ctx.client.reindex(
            workspace=workspace, full=args.full, wait=args.wait, on_progress=progress
        )
    finally:
        progress.finish()
    if args.json:
        ctx.print_json(result.raw)
        return EXIT_OK
    if result.files_changed or result.files_removed or result.chunks_written:
        summary = (
            f"reindexed in {result.seconds:.2f}s: {result.files_scanned} files scanned, "
            f"{result.files_changed} changed, {result.files_removed} removed, "
            f"{result.files_skipped} skipped; {result.chunks_written} chunks written, "
            f"{result.chunks_removed} removed"
        )
    else:  # the background indexing had done it: say what is there, not "0 written"
        held = f"{result.files_scanned} files"
        for ws in ctx.client.status(workspace).workspaces[:1]:
            held = f"{ws.files} files, {ws.chunks} chunks"
        summary = (
            f"already up to date ({held} indexed; the background indexing had done "
            f"the work, {result.files_scanned} files checked in {result.seconds:.2f}s)"
        )
        if args.wait and not result.vectors_pending:
            summary += "; every chunk has its vectors"
    if result.vectors_pending:
        summary += f"; {result.vectors_pending} vectors pending"
    ctx.print(summary)
    return EXIT_OK


def workspace_add(args: argparse.Namespace, ctx: Context) -> int:
    path = os.path.abspath(os.path.expanduser(args.path))
    if not os.path.isdir(path):
        raise ClientError(f"not a directory: {path}")
    started = time.monotonic()
    if args.wait:
        progress = progress_reporter(ctx.stderr, args.json)
        try:
            result = ctx.client.workspace_add(path, args.name, wait=True, on_progress=progress)
        finally:
            progress.finish()
    else:
        result = ctx.client.workspace_add(path, args.name)
    waited = time.monotonic() - started
    for warning in layout_warnings(Path(path)):
        ctx.note(warning)
    done = result.indexed
    if args.json:
        ctx.print_json(result.raw)
    elif result.changed:
        how = "indexing in the background" if done is None else indexed_in(done, waited)
        ctx.print(f"added workspace {result.name} at {result.path} ({how})")
    else:
        ctx.print(f"workspace {result.name} at {result.path} was already registered")
    return EXIT_OK


def indexed_in(done: ReindexResult, waited: float) -> str:
    """The whole wait, then its keyword and vector parts apart: the keyword index is
    searchable long before the local model has embedded every chunk."""
    parts = [f"keyword {done.seconds:.2f}s"]
    if done.vectors_seconds is not None:
        parts.append(f"vectors {done.vectors_seconds:.2f}s")
    pending = f"; {done.vectors_pending} vectors pending" if done.vectors_pending else ""
    return f"indexed in {waited:.1f}s: {', '.join(parts)}{pending}"


def layout_warnings(path: Path) -> list[str]:
    """What looks wrong about a folder about to become a workspace (it is added anyway:
    an agent may not have written anything yet)."""
    if path.name in ("memory", "sessions") and path.parent != path:
        return [
            f"{path} looks like a workspace's {path.name}/ folder: the workspace is the "
            f"folder that holds it (memctl workspace add {path.parent})"
        ]
    expected = ("MEMORY.md", "memory.md", "memory", "sessions")
    if not any((path / name).exists() for name in expected):
        return [
            f"{path} has no MEMORY.md, memory/ or sessions/ yet: nothing to index until "
            "an agent writes one of them (memctl append creates memory/YYYY-MM-DD.md)"
        ]
    return []


def workspace_remove(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.workspace_remove(
        workspace_param(args.target), delete_index=args.delete_index
    )
    if args.json:
        ctx.print_json(result.raw)
    elif result.changed:
        ctx.print(f"removed workspace {result.name} ({result.path}); its files are untouched")
    else:
        ctx.print(f"workspace {result.name} was not registered")
    return EXIT_OK


def workspace_list(args: argparse.Namespace, ctx: Context) -> int:
    workspaces = ctx.workspaces()
    if args.json:
        ctx.print_json({"workspaces": [asdict(ws) for ws in workspaces]})
    elif not workspaces:
        ctx.print(f"no workspace registered ({typed('memctl')} workspace add PATH)")
    else:
        width = max(len(ws.name) for ws in workspaces)
        for ws in workspaces:
            ctx.print(f"{ws.name:<{width}}  {ws.path}  ({ws.source})")
    return EXIT_OK


def fleet_status(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.call("fleet.status")
    if args.json:
        ctx.print_json(result)
        return EXIT_OK
    ctx.print(f"this host: {result['host']}  postgres: {result['dsn']}  ({result['state']})")
    for name, item in sorted(result["workspaces"].items()):
        lag = (
            f", {item['lag_generations']} generations behind" if item.get("lag_generations") else ""
        )
        ctx.print(f"  {name}: {item['state']}{lag}")
    for reason in result["degraded"]:
        ctx.print(f"  degraded: {reason}")
    ctx.print("host  workspace  chunks  published  age_s  publisher")
    for w in result.get("fleet") or []:
        holder = w["holder"]
        who = f"pid {holder.get('pid')} on {holder.get('machine')}" if holder else "(lease expired)"
        ctx.print(
            f"{w['host']}  {w['workspace']}  {w['chunks']}  {w['published_at']}  "
            f"{w['published_age_s']}  {who}"
        )
    return EXIT_OK


def jobs_list(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.jobs_list(workspace=ctx.workspace(), history=args.history)
    if args.json:
        ctx.print_json(result.raw)
    else:
        for line in format_jobs(result):
            ctx.print(line)
    return EXIT_OK


def jobs_run(args: argparse.Namespace, ctx: Context) -> int:
    """Exit 0 for ok and skipped (said why), 1 when the run failed."""
    progress = progress_reporter(ctx.stderr, args.json)
    try:
        run = ctx.client.jobs_run(
            args.name,
            workspace=ctx.workspace(),
            dry_run=args.dry_run,
            force=args.force,
            on_progress=progress,
        )
    finally:
        progress.finish()
    if args.json:
        ctx.print_json(run.raw)
    else:
        for line in format_run(run):
            ctx.print(line)
    return EXIT_ERROR if run.status == "failed" else EXIT_OK


def doctor(args: argparse.Namespace, ctx: Context) -> int:
    from memoryd_client.cli._doctor import run_doctor

    report = run_doctor(resolve_socket_path(override=args.socket), args.socket, args.timeout)
    if args.json:
        ctx.print_json({"ok": report.ok, "checks": [c.as_dict() for c in report.checks]})
    else:
        for check in report.checks:
            ctx.print(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
            if not check.ok and check.fix:
                ctx.print(f"      fix: {check.fix}")
    if report.ok:
        return EXIT_OK
    return EXIT_ERROR if report.daemon_running else EXIT_NOT_RUNNING


def completion(args: argparse.Namespace, ctx: Context) -> int:
    from memoryd_client.cli._completion import script

    ctx.stdout.write(script(args.shell, ctx.parser))
    return EXIT_OK
