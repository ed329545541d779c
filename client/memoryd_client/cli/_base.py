"""What every part of memctl shares: the exit codes, how a usage error is raised, and the
:class:`Context` a command runs with.

A leaf of the CLI: the edge (``_main``), the parser and every command module import it, and
it imports none of them.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # argparse and the client load with the parser and the first call;
    # typing not at all at run time (`memctl search --json`'s lean path imports this module)
    import argparse
    from collections.abc import Callable, Iterable
    from typing import Any, Final, Protocol, TextIO, TypeAlias

    from memoryd_client.client import MemoryClient
    from memoryd_client.types import WorkspaceInfo

PROG: Final = "memctl"

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_NOT_RUNNING: Final = 3
EXIT_INTERRUPTED: Final = 130

EXIT_CODES_HELP: Final = (
    "exit codes: 0 ok, 1 error (the daemon refused, or a job failed), 2 usage,\n"
    "3 daemon not running, 130 interrupted. With --json every outcome is JSON on stdout,\n"
    'an error as {"error": {"code", "message", "data"}}.'
)


def version_line() -> str:
    """What ``memctl --version`` prints."""
    from memoryd_client import __version__
    from memoryd_client.protocol import PROTOCOL_VERSION

    return f"{PROG} {__version__} (protocol {PROTOCOL_VERSION})"


class UsageError(Exception):
    """A problem with the command line (exit code 2); ``parser`` prints its usage."""

    def __init__(self, message: str, parser: argparse.ArgumentParser | None = None) -> None:
        super().__init__(message)
        self.parser = parser


def text_argument(words: list[str], empty: str) -> str:
    """A command's TEXT words joined, or stdin when they are a lone ``-``; ``empty``: the
    usage error for a text that is blank."""
    import sys

    text = sys.stdin.read() if words == ["-"] else " ".join(words)
    if not text.strip():
        raise UsageError(empty)
    return text


class Context:
    """What a command needs: the parsed options and a client, connected lazily; ``parser``:
    memctl's whole parser (``completion`` writes its scripts from it)."""

    def __init__(
        self,
        args: argparse.Namespace,
        stdout: TextIO,
        stderr: TextIO,
        parser: argparse.ArgumentParser,
    ) -> None:
        self.args = args
        self.parser = parser
        self.stdout = stdout
        self.stderr = stderr
        self._client: MemoryClient | None = None
        self._workspaces: list[WorkspaceInfo] | None = None

    @property
    def client(self) -> MemoryClient:
        if self._client is None:
            from memoryd_client.client import MemoryClient

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
        return cwd_if_in_one(ws.path for ws in self.workspaces())

    def print(self, text: str = "") -> None:
        print(text, file=self.stdout)

    def note(self, text: str) -> None:
        write_note(self.stderr, text)

    def print_json(self, obj: Any) -> None:
        write_json(self.stdout, obj)


def write_note(err: TextIO, text: str) -> None:
    """Something the user should know beside the result: stderr, never mixed in."""
    print(f"{PROG}: note: {text}", file=err)


def write_json(out: TextIO, obj: Any) -> None:
    """A command's result with ``--json``."""
    import json  # here: most runs of a human command never need it

    out.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def cwd_if_in_one(roots: Iterable[str]) -> str | None:
    """The current directory when it lies in one of the workspace folders ``roots`` (the
    daemon resolves it to that workspace), else None."""
    cwd = os.path.realpath(os.getcwd())
    for path in roots:
        root = os.path.realpath(path)
        if cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep):
            return os.getcwd()
    return None


def workspace_param(value: str) -> str:
    """A name stays a name; a path (has a '/', or starts with '.' or '~') goes absolute."""
    if os.sep in value or "/" in value or value.startswith((".", "~")):
        return os.path.abspath(os.path.expanduser(value))
    return value


Handler: TypeAlias = "Callable[[argparse.Namespace, Context], int]"
"""A command: the parsed options and a context in, the exit code out."""

if TYPE_CHECKING:

    class Command(Protocol):
        """How the parser adds one memctl command (its shared options with it): what a
        command group's ``add_commands`` is handed."""

        def __call__(
            self,
            subparsers: Any,
            name: str,
            handler: Handler,
            help: str,
            *,
            workspace: bool = True,
            example: str | None = None,
        ) -> argparse.ArgumentParser: ...
