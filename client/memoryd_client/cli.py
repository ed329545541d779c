"""``memctl``: the command line for memoryd (a thin layer over :class:`MemoryClient`).

This module is the edge: it runs the parser (``_parser``: the commands, their options and
help), gives each command a ``Context``, and turns every failure into one line on stderr
(``memctl: error: ...``), or with ``--json`` one JSON object on stdout, with a stable exit
code and never a traceback. The commands themselves are in ``_commands``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from memoryd_client._cli_base import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    UsageError,
)
from memoryd_client._parser import Handler, build_parser, command, command_names
from memoryd_client.client import MemoryClient
from memoryd_client.errors import (
    ClientError,
    ClientTimeout,
    ConnectionLost,
    DaemonNotRunning,
    ProtocolMismatch,
    RemoteError,
    SocketUnusable,
)
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
    "command",
    "command_names",
    "main",
    "workspace_param",
]


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
