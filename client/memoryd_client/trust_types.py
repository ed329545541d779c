"""The answers of the trust methods (docs/provenance.md): ``observe`` (a session's trust),
a search hit's lines with their own origin, the review queue. Kept apart from types.py (which
re-exports them) so neither grows past a module's size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from memoryd_client._wire import _Wire

__all__ = ["LineOrigin", "ObserveResult", "ReviewItem", "ReviewList"]


@dataclass
class LineOrigin(_Wire):
    """One line of a hit's snippet with a recorded origin (a line not listed: the owner's)."""

    _what: ClassVar[str] = "line origin"

    line: int
    origin: str
    session_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class ObserveResult(_Wire):
    """The answer to ``observe``: the session's trust as the daemon now keeps it.
    ``origin``: the least trusted origin it read since its user's last message (``owner``:
    nothing from outside); ``stretch``: since its last flush; ``save``: the stretch a
    Stop-hook save covers, until the next user message."""

    _what: ClassVar[str] = "observe result"

    session_id: str
    event: str = ""
    origin: str = "owner"
    stretch: str = "owner"
    save: str | None = None
    session_kind: str | None = None
    what: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class ReviewItem(_Wire):
    """A line waiting for the owner's review (docs/provenance.md, "What waits on the
    owner"): an untrusted write that asks to be kept long-term."""

    _what: ClassVar[str] = "review item"

    id: str
    path: str
    line: int
    text: str = ""  # secrets masked
    origin: str = "untrusted"
    via: str = ""  # how it was written: append, mcp, flush, summary, import...
    at: float = 0.0  # when (Unix seconds)
    reasons: list[str] = field(default_factory=list)  # why it waits
    session_id: str | None = None
    session_kind: str | None = None
    session_read: str | None = None  # what the session read that made it untrusted
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class ReviewList(_Wire):
    """The answer to ``review.list``."""

    _what: ClassVar[str] = "review list"

    workspace: str | None = None
    items: list[ReviewItem] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
