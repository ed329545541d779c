"""memctl's parser: the commands, their options and help, and the shared option helpers.

Every command is added through ``command()``, which gives it the common options (``--json``,
``--socket``, ``--timeout``, and ``--workspace`` for one-workspace commands) so they cannot
drift apart, and an example for its ``--help``. ``_main`` is the edge that runs the parser;
the handlers are in ``_commands`` (and ``_agents`` for the agent commands).
"""

from __future__ import annotations

import argparse
import datetime as _dt
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from memoryd_client import search_options, search_terms
from memoryd_client._connection import DEFAULT_TIMEOUT
from memoryd_client.cli import _commands as cmd
from memoryd_client.cli._base import (
    EXIT_CODES_HELP,
    EXIT_OK,
    PROG,
    Context,
    Handler,
    UsageError,
    version_line,
)
from memoryd_client.cli._lifecycle import add_commands as add_lifecycle_commands
from memoryd_client.search_options import COUNT, DAY, FLAG, SCORE
from memoryd_client.search_terms import ORIGINS, SESSION_KINDS


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is raised for memctl's edge to report (as JSON with
    ``--json``) instead of printed and exited on the spot. Subparsers share the class."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self)


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


_READERS: dict[str, Callable[[str], Any]] = {COUNT: positive_int, SCORE: _score, DAY: iso_date}


class _VersionAction(argparse.Action):
    """``--version``, reading the installed version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        print(version_line())
        parser.exit(EXIT_OK)


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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """memctl's parser; ``only``: a top-level command whose group alone is built, when it
    is one of ``_GROUPS`` (a search need not build ~35 subparsers before it runs)."""
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
    group = _GROUPS.get(only) if only else None
    if group is not None:
        group(sub)
        return parser
    _search_commands(sub)
    _note_commands(sub)
    _workspace_commands(sub)
    _fleet_commands(sub)
    _jobs_commands(sub)
    _tool_commands(sub)
    from memoryd_client.cli._agents import add_commands as add_agent_commands

    add_agent_commands(sub, command)  # mcp, recall, flush, hook, setup (_agents.py)
    add_lifecycle_commands(sub, command)  # forget, export, import (_lifecycle.py)
    _sync_commands(sub)
    _review_commands(sub)
    from memoryd_client.cli._stats import add_commands as add_stats_commands

    add_stats_commands(sub, command)  # stats (_stats.py)
    return parser


def _review_commands(sub: Any) -> None:
    """review [approve ID | reject ID] (_review.py)."""
    from memoryd_client.cli._review import add_commands

    add_commands(sub, command)


def _sync_commands(sub: Any) -> None:
    """sync enable|status|now|disable (_sync.py)."""
    from memoryd_client.cli._sync import add_commands

    add_commands(sub, command, _missing_action)


def _search_commands(sub: Any) -> None:
    """status and search."""
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
    add_search_options(p)


def add_search_options(p: argparse.ArgumentParser) -> None:
    """A search's options, one flag per row of the table (``search_options.OPTIONS``): its
    kind says how the flag's value is read, the row's name is where it lands
    (``_search.search_options`` reads them back)."""
    for option in search_options.OPTIONS:
        spec: dict[str, Any] = {"dest": option.name, "help": option.help}
        if option.kind == FLAG:
            spec["action"] = "store_true"
        else:
            spec["metavar"] = option.metavar
            if option.repeat:
                spec["action"] = "append"
            if option.choices:
                spec["choices"] = getattr(search_terms, option.choices)
            else:
                spec["type"] = _READERS.get(option.kind)
        p.add_argument(*option.flags, **spec)


def _note_commands(sub: Any) -> None:
    """get, append, reindex: reading and writing the notes."""
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
        "--raw",
        action="store_true",
        help="the file as it is: secrets written in it are not masked",
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
    p.add_argument(
        "--origin",
        choices=ORIGINS,
        help="who the text comes from (default: owner on a terminal, else agent); "
        "untrusted for web pages and tool output",
    )
    p.add_argument("--session-id", metavar="ID", help="the session it was written in")
    p.add_argument("--session-kind", choices=SESSION_KINDS, help="that session's kind")

    p = command(
        sub,
        "reindex",
        cmd.reindex,
        "bring the index up to date now",
        example="  memctl reindex --wait    # and wait for the embeddings",
    )
    p.add_argument("--full", action="store_true", help="re-read every file, not only changes")
    p.add_argument("--wait", action="store_true", help="also wait for the embeddings")


def _workspace_commands(sub: Any) -> None:
    """workspace add|remove|list."""
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
        example="  memctl workspace add ~/agents/alice --name alice\n"
        "  memctl workspace add ~/agents/bob --wait   # and index it now",
    )
    p.add_argument(
        "path",
        metavar="PATH",
        help="the agent's folder: the one holding MEMORY.md, memory/, sessions/",
    )
    p.add_argument("--name", help="(default: the directory's name)")
    p.add_argument(
        "--wait",
        action="store_true",
        help="return once it is indexed, embeddings too (reindex --wait in the same call)",
    )
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


def _fleet_commands(sub: Any) -> None:
    """fleet status."""
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


def _jobs_commands(sub: Any) -> None:
    """jobs list|run."""
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
    p.add_argument(
        "name", metavar="NAME", help="hippocampus, retention, fallback_summary or ledger_compaction"
    )
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


def _tool_commands(sub: Any) -> None:
    """doctor and completion: memctl's own tools."""
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


# Top-level commands built alone when the command line names them; every other (the agent
# commands, doctor, completion, which writes its scripts from the whole parser, a name that
# is no command) gets the whole parser.
_GROUPS: dict[str, Callable[[Any], None]] = {
    "status": _search_commands,
    "search": _search_commands,
    "get": _note_commands,
    "append": _note_commands,
    "reindex": _note_commands,
    "workspace": _workspace_commands,
    "fleet": _fleet_commands,
    "jobs": _jobs_commands,
    "sync": _sync_commands,
    "review": _review_commands,
}
