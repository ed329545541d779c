"""memctl's edge: it runs the parser (``_parser``: the commands, their options and help),
gives each command a ``Context``, and turns every failure into one line on stderr
(``memctl: error: ...``), or with ``--json`` one JSON object on stdout, with a stable exit
code and never a traceback. The commands themselves are in ``_commands`` and ``_agents``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

from memoryd_client.cli._base import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Context,
    Handler,
    UsageError,
)
from memoryd_client.errors import (
    ClientError,
    ClientTimeout,
    ConnectionLost,
    DaemonNotRunning,
    ProtocolMismatch,
    RemoteError,
    SocketUnusable,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time (`memctl search --json`'s lean path starts here)
    from collections.abc import Sequence
    from typing import Any, TextIO

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
    from memoryd_client.cli._parser import build_parser

    parser = build_parser(_named_command(argv))
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
    ctx = Context(args, out, err, parser)
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


def _named_command(argv: Sequence[str]) -> str | None:
    """The top-level command the words name (memctl's own options take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


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
