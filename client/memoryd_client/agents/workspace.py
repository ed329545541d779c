"""Which workspace an agent means when it does not say: the one holding its directory.

Agents are started in their project folder (Claude Code starts MCP servers and hooks there),
so the registered workspace containing that folder is the natural default; with none, the
only registered workspace; with several, the agent has to name one.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: the hook (before every prompt) loads neither
    from collections.abc import Sequence
    from typing import Protocol, TypeVar

    class Registered(Protocol):
        """A registered workspace: a :class:`~memoryd_client.types.WorkspaceInfo`, or the
        hook's own from the wire map."""

        @property
        def name(self) -> str: ...
        @property
        def path(self) -> str: ...

    W = TypeVar("W", bound=Registered)


def _real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))


def containing(workspaces: Sequence[W], directory: str) -> W | None:
    """The registered workspace whose folder holds ``directory`` (the deepest one wins)."""
    here = _real(directory)
    best: W | None = None
    best_len = -1
    for ws in workspaces:
        root = _real(ws.path)
        if (here == root or here.startswith(root.rstrip(os.sep) + os.sep)) and len(root) > best_len:
            best, best_len = ws, len(root)
    return best


def default_for(workspaces: Sequence[W], directory: str) -> W | None:
    """The workspace containing ``directory``, else the only one, else None."""
    found = containing(workspaces, directory)
    if found is not None:
        return found
    return workspaces[0] if len(workspaces) == 1 else None


def choices_message(workspaces: Sequence[Registered]) -> str:
    """What to tell an agent that named no workspace when several (or none) exist."""
    if not workspaces:
        return "no workspace is registered with memoryd (memctl workspace add PATH)"
    names = ", ".join(f"{ws.name} ({ws.path})" for ws in workspaces)
    return f"several workspaces are registered; name one with the workspace argument: {names}"


def looks_like_path(value: str) -> bool:
    """A name stays a name; anything with a separator, or starting with '.' or '~', is a path."""
    return os.sep in value or "/" in value or value.startswith((".", "~"))
