"""``memctl``: the command line for memoryd (a thin layer over :class:`MemoryClient`).

Every command takes the same ``--json``, ``--socket`` and ``--timeout`` options, and every
command acting on one workspace the same ``--workspace NAME|PATH``; they are added by one
helper so they cannot drift apart. Errors are one line on stderr (``memctl: error: ...``)
with a stable exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import io
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any, Final, NoReturn, TextIO

from memoryd_client._format import (
    ProgressBar,
    format_jobs,
    format_run,
    format_search,
    format_status,
)
from memoryd_client.client import DEFAULT_TIMEOUT, MemoryClient
from memoryd_client.errors import ClientError, DaemonNotRunning
from memoryd_client.paths import socket_path as resolve_socket_path
from memoryd_client.protocol import PROTOCOL_VERSION

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_NOT_RUNNING: Final = 3
EXIT_INTERRUPTED: Final = 130

PROG = "memctl"

Handler = Callable[[argparse.Namespace, "Context"], int]


class UsageError(Exception):
    """A problem with the command line found after parsing (exit code 2)."""


# ---------------------------------------------------------------- shared options


def add_common_options(parser: argparse.ArgumentParser, *, workspace: bool) -> None:
    """The options every command has (and ``--workspace`` for one-workspace commands)."""
    group = parser.add_argument_group("common options")
    group.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    group.add_argument(
        "--socket",
        metavar="PATH",
        help="the daemon's socket (default: $MEMORYD_SOCKET, else under $MEMORYD_HOME, "
        "else the per-user runtime directory)",
    )
    group.add_argument(
        "--timeout",
        type=_positive_float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for an answer (default {DEFAULT_TIMEOUT:g})",
    )
    if workspace:
        group.add_argument(
            "-w",
            "--workspace",
            metavar="NAME|PATH",
            help="a registered workspace's name, or a path (with a '/') inside one "
            "(default: the one containing the current directory, else the only one)",
        )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _score(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {text}")
    return value


def _iso_date(text: str) -> str:
    try:
        _dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None
    return text


class _VersionAction(argparse.Action):
    """``--version``, reading the installed version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        print(f"{PROG} {version()} (protocol {PROTOCOL_VERSION})")
        parser.exit(EXIT_OK)


def version() -> str:
    from memoryd_client import __version__

    return __version__


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Talk to the memoryd daemon: search, read and append agent memory.",
        epilog="exit codes: 0 ok, 1 error, 2 usage, 3 daemon not running",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(
        subparsers: Any, name: str, handler: Handler, help: str, *, workspace: bool = True
    ) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = subparsers.add_parser(name, help=help, description=help)
        add_common_options(p, workspace=workspace)
        p.set_defaults(handler=handler)
        return p

    command(sub, "status", cmd_status, "show the daemon's and the workspaces' state")

    p = command(sub, "search", cmd_search, "hybrid search of the memory")
    p.add_argument("query", nargs="+", metavar="QUERY", help="words to search for")
    p.add_argument("-n", "--max-results", type=_positive_int, metavar="N", help="(default 6)")
    p.add_argument("--min-score", type=_score, metavar="SCORE", help="0..1")
    p.add_argument("--mode", choices=["hybrid", "vector", "keyword"])
    p.add_argument("--fusion", choices=["weighted", "rrf"])
    p.add_argument(
        "--source",
        action="append",
        choices=["memory", "sessions"],
        help="search this source (repeatable; default: the daemon's search.sources, memory)",
    )
    p.add_argument("--path-prefix", metavar="PREFIX", help="only paths starting with PREFIX")
    p.add_argument("--since", type=_iso_date, metavar="YYYY-MM-DD")
    p.add_argument("--until", type=_iso_date, metavar="YYYY-MM-DD")

    p = command(sub, "get", cmd_get, "print lines of a memory file")
    p.add_argument("path", metavar="PATH", help="workspace-relative, e.g. memory/2025-01-31.md")
    p.add_argument("--from", dest="from_line", type=_positive_int, metavar="LINE")
    p.add_argument("--lines", type=_positive_int, metavar="N")

    p = command(sub, "append", cmd_append, "append a note to a daily file")
    p.add_argument("text", nargs="+", metavar="TEXT", help="the text, or - to read stdin")
    p.add_argument("--date", type=_iso_date, metavar="YYYY-MM-DD", help="(default today)")
    p.add_argument("--heading", metavar="TEXT", help="put the note under this heading")

    p = command(sub, "reindex", cmd_reindex, "bring the index up to date now")
    p.add_argument("--full", action="store_true", help="re-read every file, not only changes")
    p.add_argument("--wait", action="store_true", help="also wait for the embeddings")

    ws = sub.add_parser("workspace", help="register, unregister and list workspaces")
    ws_sub = ws.add_subparsers(dest="workspace_command", metavar="ACTION")
    ws.set_defaults(handler=_missing_action(ws))
    p = command(ws_sub, "add", cmd_workspace_add, "register a workspace", workspace=False)
    p.add_argument("path", metavar="PATH")
    p.add_argument("--name", help="(default: the directory's name)")
    p = command(ws_sub, "remove", cmd_workspace_remove, "unregister a workspace", workspace=False)
    p.add_argument("target", metavar="NAME|PATH")
    p.add_argument("--delete-index", action="store_true", help="also delete its index")
    command(ws_sub, "list", cmd_workspace_list, "list the workspaces", workspace=False)

    fleet = sub.add_parser("fleet", help="fleet mode: the hosts sharing memory (docs/fleet.md)")
    fleet_sub = fleet.add_subparsers(dest="fleet_command", metavar="ACTION")
    fleet.set_defaults(handler=_missing_action(fleet, "status"))
    command(fleet_sub, "status", cmd_fleet_status,
            "hosts, their workspaces, publish lag and lease holders", workspace=False)

    jobs = sub.add_parser("jobs", help="see and run the scheduled jobs")
    jobs_sub = jobs.add_subparsers(dest="jobs_command", metavar="ACTION")
    jobs.set_defaults(handler=_missing_action(jobs, "list or run"))
    p = command(jobs_sub, "list", cmd_jobs_list,
                "each job per workspace: schedule, next run, last result")
    p.add_argument("--history", type=_positive_int, metavar="N",
                   help="also show each job's last N runs")
    p = command(jobs_sub, "run", cmd_jobs_run, "run a job now")
    p.add_argument("name", metavar="NAME", help="hippocampus, retention or fallback_summary")
    p.add_argument("--dry-run", action="store_true",
                   help="show what the job would do and change nothing (hippocampus: the diff)")
    p.add_argument("--force", action="store_true",
                   help="hippocampus: accept an answer that drops more than max_drop_ratio of "
                   "MEMORY.md's lines or a heading")

    command(
        sub,
        "doctor",
        cmd_doctor,
        "check the setup; print the fix for each problem",
        workspace=False,
    )
    return parser


def command_names(parser: argparse.ArgumentParser | None = None) -> list[str]:
    """Every runnable command, e.g. ``["status", ..., "workspace add", ...]``."""
    names: list[str] = []

    def walk(p: argparse.ArgumentParser, prefix: str) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    before = len(names)
                    walk(child, f"{prefix}{name} ")
                    if len(names) == before:
                        names.append(f"{prefix}{name}")

    walk(parser or build_parser(), "")
    return names


def _missing_action(
    parser: argparse.ArgumentParser, actions: str = "add, remove or list"
) -> Handler:
    def handler(args: argparse.Namespace, ctx: Context) -> int:
        parser.print_usage(sys.stderr)
        raise UsageError(f"missing action: {actions}")

    return handler


# ---------------------------------------------------------------- context


class Context:
    """What a command needs: the parsed options and a client, connected lazily."""

    def __init__(self, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
        self.args = args
        self.stdout = stdout
        self.stderr = stderr
        self._client: MemoryClient | None = None

    @property
    def client(self) -> MemoryClient:
        if self._client is None:
            self._client = MemoryClient(
                self.args.socket, timeout=self.args.timeout, client_name=PROG
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def workspace(self) -> str | None:
        """``--workspace``, or the current directory when it lies in a registered one."""
        given: str | None = self.args.workspace
        if given:
            return workspace_param(given)
        cwd = os.path.realpath(os.getcwd())
        for ws in self.client.workspace_list():
            root = os.path.realpath(ws.path)
            if cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep):
                return os.getcwd()
        return None

    def print(self, text: str = "") -> None:
        print(text, file=self.stdout)

    def print_json(self, obj: Any) -> None:
        import json  # here: most runs of a human command never need it

        json.dump(obj, self.stdout, indent=2, ensure_ascii=False, default=str)
        self.stdout.write("\n")


def workspace_param(value: str) -> str:
    """A name stays a name; a path (has a '/', or starts with '.' or '~') goes absolute."""
    if os.sep in value or "/" in value or value.startswith((".", "~")):
        return os.path.abspath(os.path.expanduser(value))
    return value


# ---------------------------------------------------------------- commands


def cmd_status(args: argparse.Namespace, ctx: Context) -> int:
    status = ctx.client.status(ctx.workspace())
    if args.json:
        ctx.print_json(status.raw)
    else:
        for line in format_status(status):
            ctx.print(line)
    return EXIT_OK


def cmd_search(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.search(
        " ".join(args.query),
        workspace=ctx.workspace(),
        max_results=args.max_results,
        min_score=args.min_score,
        sources=args.source,
        mode=args.mode,
        fusion=args.fusion,
        path_prefix=args.path_prefix,
        since=args.since,
        until=args.until,
    )
    if args.json:
        ctx.print_json(result.raw)
    else:
        for line in format_search(result):
            ctx.print(line)
        for reason in result.degraded:
            print(f"{PROG}: note: {reason}", file=ctx.stderr)
    return EXIT_OK


def cmd_get(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.get(
        args.path, workspace=ctx.workspace(), from_line=args.from_line, lines=args.lines
    )
    if args.json:
        ctx.print_json(result.raw)
    else:
        ctx.stdout.write(
            result.text if result.text.endswith("\n") or not result.text else result.text + "\n"
        )
    return EXIT_OK


def cmd_append(args: argparse.Namespace, ctx: Context) -> int:
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    if not text.strip():
        raise UsageError("nothing to append: the text is empty")
    result = ctx.client.append(
        text, workspace=ctx.workspace(), date=args.date, heading=args.heading
    )
    if args.json:
        ctx.print_json(result.raw)
    else:
        ctx.print(f"appended to {result.path}:{result.start_line}-{result.end_line}")
    return EXIT_OK


def cmd_reindex(args: argparse.Namespace, ctx: Context) -> int:
    bar = ProgressBar(ctx.stderr) if ctx.stderr.isatty() else None
    try:
        result = ctx.client.reindex(
            workspace=ctx.workspace(), full=args.full, wait=args.wait, on_progress=bar
        )
    finally:
        if bar is not None:
            bar.finish()
    if args.json:
        ctx.print_json(result.raw)
    else:
        summary = (
            f"reindexed in {result.seconds:.2f}s: {result.files_scanned} files scanned, "
            f"{result.files_changed} changed, {result.files_removed} removed, "
            f"{result.files_skipped} skipped; {result.chunks_written} chunks written, "
            f"{result.chunks_removed} removed"
        )
        if result.vectors_pending:
            summary += f"; {result.vectors_pending} vectors pending"
        ctx.print(summary)
    return EXIT_OK


def cmd_workspace_add(args: argparse.Namespace, ctx: Context) -> int:
    path = os.path.abspath(os.path.expanduser(args.path))
    if not os.path.isdir(path):
        raise ClientError(f"not a directory: {path}")
    result = ctx.client.workspace_add(path, args.name)
    if args.json:
        ctx.print_json(result.raw)
    elif result.changed:
        ctx.print(f"added workspace {result.name} at {result.path} (indexing in the background)")
    else:
        ctx.print(f"workspace {result.name} at {result.path} was already registered")
    return EXIT_OK


def cmd_workspace_remove(args: argparse.Namespace, ctx: Context) -> int:
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


def cmd_workspace_list(args: argparse.Namespace, ctx: Context) -> int:
    workspaces = ctx.client.workspace_list()
    if args.json:
        ctx.print_json({"workspaces": [asdict(ws) for ws in workspaces]})
    elif not workspaces:
        ctx.print("no workspace registered (memctl workspace add PATH)")
    else:
        width = max(len(ws.name) for ws in workspaces)
        for ws in workspaces:
            ctx.print(f"{ws.name:<{width}}  {ws.path}  ({ws.source})")
    return EXIT_OK


def cmd_fleet_status(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.call("fleet.status")
    if args.json:
        ctx.print_json(result)
        return EXIT_OK
    ctx.print(f"this host: {result['host']}  postgres: {result['dsn']}  ({result['state']})")
    for name, item in sorted(result["workspaces"].items()):
        lag = f", {item['lag_generations']} generations behind" if item.get(
            "lag_generations") else ""
        ctx.print(f"  {name}: {item['state']}{lag}")
    for reason in result["degraded"]:
        ctx.print(f"  degraded: {reason}")
    ctx.print("host  workspace  chunks  published  age_s  publisher")
    for w in result.get("fleet") or []:
        holder = w["holder"]
        who = f"pid {holder.get('pid')} on {holder.get('machine')}" if holder else "(lease expired)"
        ctx.print(f"{w['host']}  {w['workspace']}  {w['chunks']}  {w['published_at']}  "
                  f"{w['published_age_s']}  {who}")
    return EXIT_OK


def cmd_jobs_list(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.client.jobs_list(workspace=ctx.workspace(), history=args.history)
    if args.json:
        ctx.print_json(result.raw)
    else:
        for line in format_jobs(result):
            ctx.print(line)
    return EXIT_OK


def cmd_jobs_run(args: argparse.Namespace, ctx: Context) -> int:
    """Exit 0 for ok and skipped (said why), 1 when the run failed."""
    bar = ProgressBar(ctx.stderr) if ctx.stderr.isatty() else None
    try:
        run = ctx.client.jobs_run(
            args.name, workspace=ctx.workspace(), dry_run=args.dry_run, force=args.force,
            on_progress=bar,
        )
    finally:
        if bar is not None:
            bar.finish()
    if args.json:
        ctx.print_json(run.raw)
    else:
        for line in format_run(run):
            ctx.print(line)
    return EXIT_ERROR if run.status == "failed" else EXIT_OK


def cmd_doctor(args: argparse.Namespace, ctx: Context) -> int:
    from memoryd_client._doctor import run_doctor

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


# ---------------------------------------------------------------- entry point


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run memctl; returns the exit code (the console script exits with it)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_usage(err)
        print(f"{PROG}: error: missing command (try `{PROG} --help`)", file=err)
        return EXIT_USAGE
    ctx = Context(args, out, err)
    try:
        return handler(args, ctx)
    except UsageError as exc:
        return _fail(err, str(exc), EXIT_USAGE)
    except DaemonNotRunning as exc:
        return _fail(err, str(exc), EXIT_NOT_RUNNING)
    except ClientError as exc:
        return _fail(err, str(exc), EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail(err, "interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # stdout closed early (`memctl search ... | head`): not an error worth a message.
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as exc:  # a bug: still one line, never a traceback
        if os.environ.get("MEMCTL_DEBUG"):
            raise
        return _fail(
            err,
            f"internal error: {type(exc).__name__}: {exc} (MEMCTL_DEBUG=1 shows a traceback)",
            EXIT_ERROR,
        )
    finally:
        ctx.close()


def _fail(stream: TextIO, message: str, code: int) -> int:
    one_line = " ".join(message.split())
    print(f"{PROG}: error: {one_line}", file=stream)
    return code


if __name__ == "__main__":
    sys.exit(main())
