"""What ``memctl sync status`` shows of a workspace: the last pull and push, what waits
(commits not pushed, files not committed), conflicts, held files, and the remote's state.

The last outcome is kept in ``status.json`` in the workspace's sync folder, so a restart
still says when the last push was. The rest is read live from the repository and the
workspace's files when asked.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from memoryd.files.fsutil import atomic_write
from memoryd.files.layout import display_name
from memoryd.sync.conflict_note import find_notes
from memoryd.sync.engine import Report
from memoryd.sync.paths import CURATED, NOTE, Scope, kind_of
from memoryd.sync.repo import Repo

__all__ = ["Recorded", "conflicts_in", "display_remote", "waiting"]

STATUS: Final = "status.json"


def display_remote(url: str) -> str:
    """The remote as status shows it: a user name in an https URL is dropped too."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class Recorded:
    """The last outcomes, kept across restarts."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / STATUS
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError):
            raw = {}
        self.data: dict[str, Any] = raw if isinstance(raw, dict) else {}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(self.path, json.dumps(self.data, indent=1).encode(), mode=0o600)

    def record(self, report: Report, at: float, trigger: str) -> None:
        d = self.data
        if report.committed:
            d["last_commit_at"] = at
        if report.fetched:
            d["last_pull_at"] = at
        if report.pushed:
            d["last_push_at"] = at
        d["held"] = [h.to_dict() for h in report.held]
        problem = report.offline or report.error
        if report.offline:
            d.setdefault("offline_since", at)
        else:
            d.pop("offline_since", None)
        d["last_sync"] = {
            "at": at,
            "trigger": trigger,
            "ok": problem is None,
            "error": problem,
            "report": report.to_dict(),
        }
        self.save()

    def failed(self, error: str, at: float, trigger: str) -> None:
        self.data["last_sync"] = {"at": at, "trigger": trigger, "ok": False, "error": error}
        self.save()


def waiting(repo: Repo, head: str | None, seen: str | None) -> dict[str, Any]:
    """Commits made here and not on the remote yet, and how old the oldest is (``head``:
    our branch, ``seen``: the remote tip last seen, as Repo.tips reads them)."""
    if head is None or head == seen:
        return {"commits": 0, "oldest_at": None}
    spec = f"{seen}..{head}" if seen else head
    count = repo.count(spec)
    oldest = None
    if count:
        out = repo.git.out("log", "--reverse", "--format=%ct", spec).split("\n")
        oldest = float(out[0]) if out and out[0] else None
    return {"commits": count, "oldest_at": oldest}


def conflicts_in(root: Path, scope: Scope) -> list[dict[str, Any]]:
    """The conflict notes in the curated files and notes: [{path, line}] (the path as
    display_name shows it)."""
    out: list[dict[str, Any]] = []
    for rel, size in scope.walk(root):
        if kind_of(rel) not in (CURATED, NOTE) or size > 16 << 20:
            continue
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out += [{"path": display_name(rel), "line": n} for n in find_notes(text)]
    return out


def iso(at: Any) -> str | None:
    if not isinstance(at, int | float):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
