"""``memctl``: the command line for memoryd (a thin layer over :class:`MemoryClient`).

- ``_main``: the edge, :func:`main`: runs the parser, hands each command a ``Context``, and
  turns every failure into one line (or one JSON object) with a stable exit code;
- ``_base``: what every part shares (exit codes, ``UsageError``, ``Context``, ``Handler``);
  a leaf;
- ``_parser``: the commands, their options and help; ``_commands`` and ``_agents`` (mcp,
  recall, flush, hook, setup): the handlers; ``_format``, ``_progress``, ``_search``,
  ``_doctor`` and ``_completion``: what those handlers use.

Importing this package loads the parser and the client, nothing heavy: the agent modules,
``json`` and the MCP SDK are imported by the commands that need them.
"""

from __future__ import annotations

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
    workspace_param,
)
from memoryd_client.cli._main import main

TYPE_CHECKING = False  # typing not at run time: `memctl search --json` starts here

if TYPE_CHECKING:
    from typing import Any

    from memoryd_client.cli._parser import build_parser, command, command_names


def __getattr__(name: str) -> Any:
    # The parser is built from every command module: imported when first used, so that
    # `memctl --version` (and the console script's import of main) need not load it.
    if name in ("build_parser", "command", "command_names"):
        from memoryd_client.cli import _parser

        return getattr(_parser, name)
    raise AttributeError(f"module 'memoryd_client.cli' has no attribute {name!r}")


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
