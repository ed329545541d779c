"""``memctl``: the command line for memoryd (a thin layer over :class:`MemoryClient`).

Every command takes the same ``--json``, ``--socket`` and ``--timeout`` options, and every
command acting on one workspace the same ``--workspace NAME|PATH``; they are added by one
helper so they cannot drift apart. This module is the parser and the edge: errors are one
line on stderr (``memctl: error: ...``), or with ``--json`` one JSON object on stdout, with
a stable exit code and never a traceback. The commands themselves are in ``_commands``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import io
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from memoryd_client import _commands as cmd
from memoryd_client._cli_base import (
    EXIT_CODES_HELP,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Parser,
    UsageError,
)
from memoryd_client.client import DEFAULT_TIMEOUT, MemoryClient
from memoryd_client.errors import (
    ClientError,
    ClientTimeout,
    ConnectionLost,
    DaemonNotRunning,
    ProtocolMismatch,
    RemoteError,
    SocketUnusable,
)
from memoryd_client.protocol import PROTOCOL_VERSION
from memoryd_client.search_terms import FUSIONS, MODES, SOURCES
from memoryd_client.types import WorkspaceInfo

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_RUNNING",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROG",
    "Context",
    "Handler",
    "UsageError",
    "build_parser",
    "command_names",
    "main",
    "workspace_param",
]

Handler = Callable[[argparse.Namespace, "Context"], int]


# ---------------------------------------------------------------- shared options


def add_common_options(parser: argparse.ArgumentParser, *, workspace: bool) -> None:
    """The options every command has (and ``--workspace`` for one-workspace commands)."""
    group = parser.add_argument_group("common options")
    group.add_argument(
        "--json",
        action="store_true",
        help="print the result, or the error, as JSON on stdout (progress: JSON lines on stderr)",
    )
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


def positive_int(text: str) -> int:
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


def iso_date(text: str) -> str:
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


def command(
    subparsers: Any,
    name: str,
    handler: Handler,
    help: str,
    *,
    workspace: bool = True,
    example: str | None = None,
) -> argparse.ArgumentParser:
    """Add a command with the common options; ``example``: lines shown under its --help."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=help,
        epilog=f"example:\n{example}" if example else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_options(p, workspace=workspace)
    p.set_defaults(handler=handler)
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Talk to the memoryd daemon: search, read and append agent memory.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  memctl workspace add ~/agents/alice\n"
            '  memctl search "what did we decide about the schema"\n'
            "  memctl search --json --all -n 5 schema decision\n\n"
            "the daemon: start it with `memoryd run` (or `memoryd service install`),\n"
            "stop it with `memoryd stop`.\n\n" + EXIT_CODES_HELP
        ),
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    command(
        sub,
        "status",
        cmd.status,
        "show the daemon's and the workspaces' state",
        example="  memctl status            # every workspace\n  memctl status -w alice --json",
    )

    p = command(
        sub,
        "search",
        cmd.search,
        "hybrid search of the memory",
        example='  memctl search "what did we decide about the schema"\n'
        "  memctl search --all --json -n 3 lisbon flight\n"
        "  echo 'a long question' | memctl search -",
    )
    p.add_argument(
        "query",
        nargs="*",
        metavar="QUERY",
        help="words to search for, or - to read the query from stdin",
    )
    p.add_argument(
        "-q",
        "--query",
        dest="query_option",
        metavar="TEXT",
        help="the query as one argument (instead of words)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="search every registered workspace; each hit names its workspace "
        "(the default when no workspace is chosen and several are registered)",
    )
    p.add_argument(
        "-n", "--max-results", type=positive_int, metavar="N", help="at most N results (default 6)"
    )
    p.add_argument(
        "--min-score",
        type=_score,
        metavar="SCORE",
        help="drop results scoring below this, 0..1 (default 0.35)",
    )
    p.add_argument("--mode", choices=MODES, help="which signals rank the results (default hybrid)")
    p.add_argument(
        "--fusion",
        choices=FUSIONS,
        help="how hybrid search combines them (default: the daemon's, weighted)",
    )
    p.add_argument(
        "--source",
        action="append",
        choices=SOURCES,
        help="search this source (repeatable; default: the daemon's search.sources, memory)",
    )
    p.add_argument("--path-prefix", metavar="PREFIX", help="only paths starting with PREFIX")
    p.add_argument(
        "--since", type=iso_date, metavar="YYYY-MM-DD", help="only notes of this day or later"
    )
    p.add_argument(
        "--until", type=iso_date, metavar="YYYY-MM-DD", help="only notes of this day or earlier"
    )
    p.add_argument(
        "--fleet",
        action="store_true",
        help="every workspace of every host in the fleet (fleet mode)",
    )

    p = command(
        sub,
        "get",
        cmd.get,
        "print lines of a memory file",
        example="  memctl get MEMORY.md\n  memctl get memory/2025-01-31.md --from 40 --lines 20",
    )
    p.add_argument("path", metavar="PATH", help="workspace-relative, e.g. memory/2025-01-31.md")
    p.add_argument(
        "--from",
        dest="from_line",
        type=positive_int,
        metavar="LINE",
        help="first line to print (1-based; default 1)",
    )
    p.add_argument(
        "--lines", type=positive_int, metavar="N", help="how many lines (default: to the end)"
    )

    p = command(
        sub,
        "append",
        cmd.append,
        "append a note to a daily file",
        example="  memctl append 'Decided: keep SQLite' --heading Decisions\n"
        "  echo 'from a pipe' | memctl append -",
    )
    p.add_argument("text", nargs="+", metavar="TEXT", help="the text, or - to read stdin")
    p.add_argument(
        "--date", type=iso_date, metavar="YYYY-MM-DD", help="the daily file's day (default today)"
    )
    p.add_argument("--heading", metavar="TEXT", help="put the note under this heading")

    p = command(
        sub,
        "reindex",
        cmd.reindex,
        "bring the index up to date now",
        example="  memctl reindex --wait    # and wait for the embeddings",
    )
    p.add_argument("--full", action="store_true", help="re-read every file, not only changes")
    p.add_argument("--wait", action="store_true", help="also wait for the embeddings")

    ws = sub.add_parser(
        "workspace",
        help="register, unregister and list workspaces",
        description="register, unregister and list workspaces",
    )
    ws_sub = ws.add_subparsers(dest="workspace_command", metavar="ACTION")
    ws.set_defaults(handler=_missing_action(ws))
    p = command(
        ws_sub,
        "add",
        cmd.workspace_add,
        "register a workspace",
        workspace=False,
        example="  memctl workspace add ~/agents/alice --name alice",
    )
    p.add_argument(
        "path",
        metavar="PATH",
        help="the agent's folder: the one holding MEMORY.md, memory/, sessions/",
    )
    p.add_argument("--name", help="(default: the directory's name)")
    p = command(
        ws_sub,
        "remove",
        cmd.workspace_remove,
        "unregister a workspace",
        workspace=False,
        example="  memctl workspace remove alice --delete-index",
    )
    p.add_argument("target", metavar="NAME|PATH", help="the workspace's name or folder")
    p.add_argument("--delete-index", action="store_true", help="also delete its index")
    command(
        ws_sub,
        "list",
        cmd.workspace_list,
        "list the workspaces",
        workspace=False,
        example="  memctl workspace list --json",
    )

    fleet = sub.add_parser(
        "fleet",
        help="fleet mode: the hosts sharing memory (docs/fleet.md)",
        description="fleet mode: the hosts sharing memory (docs/fleet.md)",
    )
    fleet_sub = fleet.add_subparsers(dest="fleet_command", metavar="ACTION")
    fleet.set_defaults(handler=_missing_action(fleet, "status"))
    command(
        fleet_sub,
        "status",
        cmd.fleet_status,
        "hosts, their workspaces, publish lag and lease holders",
        workspace=False,
        example="  memctl fleet status --json",
    )

    jobs = sub.add_parser(
        "jobs", help="see and run the scheduled jobs", description="see and run the scheduled jobs"
    )
    jobs_sub = jobs.add_subparsers(dest="jobs_command", metavar="ACTION")
    jobs.set_defaults(handler=_missing_action(jobs, "list or run"))
    p = command(
        jobs_sub,
        "list",
        cmd.jobs_list,
        "each job per workspace: schedule, next run, last result",
        example="  memctl jobs list --history 5",
    )
    p.add_argument(
        "--history", type=positive_int, metavar="N", help="also show each job's last N runs"
    )
    p = command(
        jobs_sub,
        "run",
        cmd.jobs_run,
        "run a job now",
        example="  memctl jobs run hippocampus --dry-run   # the diff, nothing written",
    )
    p.add_argument("name", metavar="NAME", help="hippocampus, retention or fallback_summary")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="show what the job would do and change nothing (hippocampus: the diff)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="hippocampus: accept an answer that drops more than max_drop_ratio of "
        "MEMORY.md's lines or a heading",
    )

    command(
        sub,
        "doctor",
        cmd.doctor,
        "check the setup; print the fix for each problem",
        workspace=False,
        example="  memctl doctor",
    )

    p = command(
        sub,
        "completion",
        cmd.completion,
        "print a shell completion script for memctl",
        workspace=False,
        example='  eval "$(memctl completion bash)"        # in ~/.bashrc\n'
        "  memctl completion zsh > ~/.zfunc/_memctl  # fpath+=~/.zfunc\n"
        "  memctl completion fish > ~/.config/fish/completions/memctl.fish",
    )
    p.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete in")

    from memoryd_client.agents.commands import add_commands as add_agent_commands

    add_agent_commands(sub, command)  # mcp, recall, hook, setup (agents/commands.py)
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
        raise UsageError(f"missing action: {actions}", parser)

    return handler


# ---------------------------------------------------------------- context


class Context:
    """What a command needs: the parsed options and a client, connected lazily."""

    def __init__(self, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
        self.args = args
        self.stdout = stdout
        self.stderr = stderr
        self._client: MemoryClient | None = None
        self._workspaces: list[WorkspaceInfo] | None = None

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

    def workspaces(self) -> list[WorkspaceInfo]:
        if self._workspaces is None:
            self._workspaces = self.client.workspace_list()
        return self._workspaces

    def workspace(self) -> str | None:
        """``--workspace``, or the current directory when it lies in a registered one."""
        given: str | None = self.args.workspace
        if given:
            return workspace_param(given)
        cwd = os.path.realpath(os.getcwd())
        for ws in self.workspaces():
            root = os.path.realpath(ws.path)
            if cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep):
                return os.getcwd()
        return None

    def print(self, text: str = "") -> None:
        print(text, file=self.stdout)

    def note(self, text: str) -> None:
        """Something the user should know beside the result: stderr, never mixed in."""
        print(f"{PROG}: note: {text}", file=self.stderr)

    def print_json(self, obj: Any) -> None:
        import json  # here: most runs of a human command never need it

        json.dump(obj, self.stdout, indent=2, ensure_ascii=False, default=str)
        self.stdout.write("\n")


def workspace_param(value: str) -> str:
    """A name stays a name; a path (has a '/', or starts with '.' or '~') goes absolute."""
    if os.sep in value or "/" in value or value.startswith((".", "~")):
        return os.path.abspath(os.path.expanduser(value))
    return value


# ---------------------------------------------------------------- entry point


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run memctl; returns the exit code (the console script exits with it)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv  # known before parsing, so a usage error is JSON too
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        if not as_json:
            (exc.parser or parser).print_usage(err)
        return _fail(out, err, as_json, "usage", str(exc), EXIT_USAGE)
    except SystemExit as exc:  # argparse: --help or --version
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        if not as_json:
            parser.print_usage(err)
        return _fail(
            out, err, as_json, "usage", f"missing command (try `{PROG} --help`)", EXIT_USAGE
        )
    ctx = Context(args, out, err)
    try:
        return handler(args, ctx)
    except UsageError as exc:
        if exc.parser is not None and not as_json:
            exc.parser.print_usage(err)
        return _fail(out, err, as_json, "usage", str(exc), EXIT_USAGE)
    except DaemonNotRunning as exc:
        return _fail(
            out,
            err,
            as_json,
            "not_running",
            str(exc),
            EXIT_NOT_RUNNING,
            {"socket": str(exc.socket)},
        )
    except RemoteError as exc:
        return _fail(out, err, as_json, exc.code, _remote_message(exc), EXIT_ERROR, exc.data)
    except ClientError as exc:
        return _fail(out, err, as_json, _client_code(exc), str(exc), EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail(out, err, as_json, "interrupted", "interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # stdout closed early (`memctl search ... | head`): not an error worth a message.
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as exc:  # a bug: still one line, never a traceback
        if os.environ.get("MEMCTL_DEBUG"):
            raise
        return _fail(
            out,
            err,
            as_json,
            "internal",
            f"internal error: {type(exc).__name__}: {exc} (MEMCTL_DEBUG=1 shows a traceback)",
            EXIT_ERROR,
        )
    finally:
        ctx.close()


def _remote_message(exc: RemoteError) -> str:
    """The daemon's words, with its wire parameter named as memctl's option."""
    names = exc.data.get("workspaces")
    if exc.data.get("param") == "workspace" and isinstance(names, list):
        return (
            f"several workspaces are registered ({', '.join(map(str, names))}): name one "
            "with -w/--workspace NAME, or search them all with --all"
        )
    return str(exc)


def _client_code(exc: ClientError) -> str:
    """A stable code for the errors that happen on this side of the socket."""
    for klass, code in (
        (ClientTimeout, "timeout"),
        (ConnectionLost, "connection_lost"),
        (ProtocolMismatch, "protocol_mismatch"),
        (SocketUnusable, "socket_unusable"),
    ):
        if isinstance(exc, klass):
            return code
    return "error"


def _fail(
    out: TextIO,
    err: TextIO,
    as_json: bool,
    code: str,
    message: str,
    exit_code: int,
    data: dict[str, Any] | None = None,
) -> int:
    one_line = " ".join(message.split())
    if as_json:
        import json

        error = {"code": code, "message": one_line, "data": data or {}}
        json.dump({"error": error}, out, ensure_ascii=False, default=str)
        out.write("\n")
    else:
        print(f"{PROG}: error: {one_line}", file=err)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
