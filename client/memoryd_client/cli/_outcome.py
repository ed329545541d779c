"""How memctl reports a command that failed: one line on stderr (``memctl: error: ...``),
or with ``--json`` one JSON object on stdout, with a stable code and exit code, never a
traceback. Both the edge (``_main``) and ``search --json``'s lean path report through it.
"""

from __future__ import annotations

import io
import os
import sys

from memoryd_client.cli._base import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_RUNNING,
    PROG,
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
if TYPE_CHECKING:  # not at run time (`memctl search --json`'s lean path imports this)
    from typing import Any, TextIO


def failed(exc: BaseException, out: TextIO, err: TextIO, as_json: bool) -> int:
    """The exit code for a command that raised ``exc``, its one line (or JSON) written.
    Called while ``exc`` is being handled (MEMCTL_DEBUG re-raises it)."""
    if isinstance(exc, DaemonNotRunning):
        data = {"socket": str(exc.socket)}
        return fail(out, err, as_json, "not_running", str(exc), EXIT_NOT_RUNNING, data)
    if isinstance(exc, RemoteError):
        return fail(out, err, as_json, exc.code, _remote_message(exc), EXIT_ERROR, exc.data)
    if isinstance(exc, ClientError):
        return fail(out, err, as_json, _client_code(exc), str(exc), EXIT_ERROR)
    if isinstance(exc, KeyboardInterrupt):
        return fail(out, err, as_json, "interrupted", "interrupted", EXIT_INTERRUPTED)
    if isinstance(exc, BrokenPipeError):
        # stdout closed early (`memctl search ... | head`): not an error worth a message.
        import contextlib  # not on a search's path

        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    if os.environ.get("MEMCTL_DEBUG"):
        raise exc
    return fail(
        out,
        err,
        as_json,
        "internal",
        f"internal error: {type(exc).__name__}: {exc} (MEMCTL_DEBUG=1 shows a traceback)",
        EXIT_ERROR,
    )


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


def fail(
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
