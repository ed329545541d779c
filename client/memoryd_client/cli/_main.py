"""memctl's edge: it runs the parser (``_parser``: the commands, their options and help),
gives each command a ``Context``, and turns every failure into one line on stderr
(``memctl: error: ...``), or with ``--json`` one JSON object on stdout, with a stable exit
code and never a traceback. The commands themselves are in ``_commands`` and ``_agents``.
"""

from __future__ import annotations

import sys

from memoryd_client.cli._base import (
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Context,
    Handler,
    UsageError,
)
from memoryd_client.cli._outcome import fail, failed

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time (`memctl search --json`'s lean path starts here)
    from collections.abc import Sequence
    from typing import TextIO

# ---------------------------------------------------------------- entry point


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run memctl; returns the exit code (the console script exits with it)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv  # known before parsing, so a usage error is JSON too
    if argv == ["--version"]:  # before the parser: its command modules need not load
        from memoryd_client.cli._base import version_line

        print(version_line(), file=out)
        return EXIT_OK
    if as_json and argv[:1] == ["search"]:  # what agents run: without the parser if it can
        from memoryd_client.cli._search_json import search_json

        code = search_json(argv, out, err)
        if code is not None:
            return code
    return run_parsed(argv, out, err)


def run_parsed(argv: list[str], out: TextIO, err: TextIO) -> int:
    """memctl's full path: its parser, a ``Context``, the command (every command, and what
    the lean paths leave to it)."""
    as_json = "--json" in argv
    from memoryd_client.cli._parser import build_parser

    parser = build_parser(_named_command(argv))
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        if not as_json:
            (exc.parser or parser).print_usage(err)
        return fail(out, err, as_json, "usage", str(exc), EXIT_USAGE)
    except SystemExit as exc:  # argparse: --help or --version
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        if not as_json:
            parser.print_usage(err)
        return fail(
            out, err, as_json, "usage", f"missing command (try `{PROG} --help`)", EXIT_USAGE
        )
    ctx = Context(args, out, err, parser)
    try:
        return handler(args, ctx)
    except UsageError as exc:
        if exc.parser is not None and not as_json:
            exc.parser.print_usage(err)
        return fail(out, err, as_json, "usage", str(exc), EXIT_USAGE)
    except (Exception, KeyboardInterrupt) as exc:
        return failed(exc, out, err, as_json)
    finally:
        ctx.close()


def _named_command(argv: Sequence[str]) -> str | None:
    """The top-level command the words name (memctl's own options take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)
