"""The answers of git sync (docs/sync.md): ``sync.status``, ``sync.now``, ``sync.enable``:
each workspace's sync state and what a sync run did. Kept apart from types.py, read by the
same ``_wire`` field readers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from memoryd_client._wire import _Wire

__all__ = ["SyncConflict", "SyncHeld", "SyncList", "SyncRun", "SyncState"]


@dataclass
class SyncConflict(_Wire):
    """A conflict note a sync merge wrote (docs/sync.md): where it is."""

    _what: ClassVar[str] = "sync conflict"

    path: str
    line: int


@dataclass
class SyncHeld(_Wire):
    """A file not pushed because it holds a hand-written secret, and the secrets' kinds."""

    _what: ClassVar[str] = "held file"

    path: str
    kinds: list[str] = field(default_factory=list)


@dataclass
class SyncState(_Wire):
    """One workspace's sync (``sync.status``; docs/sync.md). Times are ISO 8601 UTC."""

    _what: ClassVar[str] = "sync status"

    workspace: str
    enabled: bool = False
    remote: str | None = None
    branch: str | None = None
    repo: str | None = None
    repository: str | None = None
    host: str | None = None
    running: bool = False
    problem: str | None = None
    last_commit_at: str | None = None
    last_pull_at: str | None = None
    last_push_at: str | None = None
    offline_since: str | None = None
    next_sync_at: str | None = None
    failures: int = 0
    last_sync: dict[str, Any] = field(default_factory=dict)
    waiting: dict[str, Any] = field(default_factory=dict)  # commits, oldest_at, files
    conflicts: list[SyncConflict] = field(default_factory=list)
    held: list[SyncHeld] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class SyncRun(_Wire):
    """One workspace's answer to ``sync.now`` (or ``sync.enable``): what the sync did
    (``report``) and the status after it."""

    _what: ClassVar[str] = "sync run"

    workspace: str
    report: dict[str, Any] = field(default_factory=dict)
    status: SyncState | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class SyncList(_Wire):
    """``sync.status`` and ``sync.now``: one entry per workspace."""

    _what: ClassVar[str] = "sync result"

    workspaces: list[SyncState] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
