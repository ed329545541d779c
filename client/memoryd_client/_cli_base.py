"""What every part of memctl shares: the exit codes and how a usage error is raised.

A leaf: ``cli`` (the parser and the edge) and ``_commands`` (the handlers) both import it.
"""

from __future__ import annotations

import argparse
from typing import Final, NoReturn

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


class UsageError(Exception):
    """A problem with the command line (exit code 2); ``parser`` prints its usage."""

    def __init__(self, message: str, parser: argparse.ArgumentParser | None = None) -> None:
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is raised for memctl's edge to report (as JSON with
    ``--json``) instead of printed and exited on the spot. Subparsers share the class."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self)


def text_argument(words: list[str], empty: str) -> str:
    """A command's TEXT words joined, or stdin when they are a lone ``-``; ``empty``: the
    usage error for a text that is blank."""
    import sys

    text = sys.stdin.read() if words == ["-"] else " ".join(words)
    if not text.strip():
        raise UsageError(empty)
    return text
