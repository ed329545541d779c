"""Supersession: of the memory lines sharing ``<!-- key: K -->``, the newest stands.

Newest: by the note's date (a daily file's day; MEMORY.md, USER.md and other notes: the day of
their last change), then by position (the later line). The older lines are superseded:
search and recall leave them out of their snippets (a hit left with nothing else goes)
unless ``include_superseded``; a hit showing a standing line says what it superseded
(``supersedes: ["path#Lnn"]``). A key on an untrusted or system line is ignored: a web page
must not supersede the owner's fact (docs/provenance.md).

Where the keyed lines come from: the index (the chunks whose words include "key", read once
per index generation, on a thread of its own). A search costs one dict lookup and an int
compare; a workspace with no keyed line nothing more.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memoryd.files.annotations import parse_line
from memoryd.files.lines import line_key
from memoryd.files.provenance import ledger_for
from memoryd.runtime.logs import get_logger

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex

__all__ = ["Superseded", "Supersession"]

log = get_logger("memoryd.lifecycle.supersession")

IGNORED_ORIGINS: Final = ("untrusted", "system")


@dataclass
class Superseded:
    """Per (path, line): who stands over a superseded line, what a standing line superseded."""

    by: dict[tuple[str, int], str] = field(default_factory=dict)
    over: dict[tuple[str, int], list[str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.by


def _day(root: Path, rel: str, day: str) -> str:
    if day:
        return day
    try:
        stamp = os.stat(root / rel).st_mtime
    except OSError:
        return ""
    return dt.date.fromtimestamp(stamp).isoformat()


def compute(root: Path, index: WorkspaceIndex) -> Superseded:
    """The workspace's supersessions as the index holds its files now (a reader thread)."""
    keyed: dict[tuple[str, int], tuple[str, str]] = {}  # (path, line) -> (key, day)
    with index.readers.borrow() as r:
        rows = r.conn.execute(
            "SELECT c.path, c.start_line, c.text, c.day FROM chunks_fts f "
            "JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH 'key' "
            "AND c.source = 'memory'"
        ).fetchall()
    ledger = ledger_for(root) if rows else None
    for path, start, text, day in rows:
        for i, line in enumerate(str(text).split("\n")):
            if "<!--" not in line:
                continue
            notes = parse_line(line)[1]
            if notes is None or notes.key is None:
                continue
            prov = ledger.lookup(line_key(line)) if ledger is not None else None
            if prov is not None and prov.origin in IGNORED_ORIGINS:
                continue
            keyed[(str(path), int(str(start)) + i)] = (notes.key, str(day))
    out = Superseded()
    groups: dict[str, list[tuple[str, int, str]]] = {}
    days: dict[str, str] = {}
    for (rel, number), (key, day) in keyed.items():
        if rel not in days:
            days[rel] = _day(root, rel, day)
        groups.setdefault(key, []).append((days[rel], number, rel))
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort()
        _, top_line, top_path = members[-1]
        standing = f"{top_path}#L{top_line}"
        out.over[(top_path, top_line)] = [f"{p}#L{n}" for _, n, p in members[:-1]]
        for _, n, p in members[:-1]:
            out.by[(p, n)] = standing
    return out


class Supersession:
    """One per daemon: each workspace's supersessions, as of an index generation.

    A search never waits for them: when the index changed since they were read, the search
    uses what is known and a thread of its own reads them again (a reader connection, never
    the search's pool), so they follow a write within moments.
    """

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[int, Superseded]] = {}
        self._pending: set[Path] = set()
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="memoryd-supersession")

    def current(self, root: Path, index: WorkspaceIndex) -> Superseded | None:
        """What is known (None: nothing yet); a read is started when it is not this
        generation's."""
        got = self._cache.get(root)
        if got is None or got[0] != index.generation:
            with self._lock:
                start = root not in self._pending
                self._pending.add(root)
            if start:
                self._worker.submit(self._refresh, root, index)
        return None if got is None else got[1]

    def _refresh(self, root: Path, index: WorkspaceIndex) -> None:
        try:
            generation = index.generation
            found = compute(root, index)
            with self._lock:
                self._cache[root] = (generation, found)
        except Exception:  # an index closing meanwhile: the next search tries again
            log.warning("supersession_not_read", workspace=str(root), exc_info=True)
        finally:
            with self._lock:
                self._pending.discard(root)

    def wait(self, root: Path, index: WorkspaceIndex, timeout: float = 5.0) -> bool:
        """Until this generation's are known (tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self._cache.get(root)
            if got is not None and got[0] == index.generation:
                return True
            self.current(root, index)
            time.sleep(0.01)
        return False


def apply(answer: dict[str, Any], sup: Superseded, include: bool) -> dict[str, Any]:
    """The search answer with superseded lines left out of its hits (or marked, with
    ``include``), and standing lines' hits saying what they superseded (in place)."""
    if sup.empty:
        return answer
    kept = []
    for hit in answer.get("results", []):
        if hit.get("source", "memory") != "memory":
            kept.append(hit)
            continue
        path = str(hit["path"])
        first = int(hit.get("snippet_start_line") or hit["start_line"])
        lines = str(hit.get("snippet") or "").split("\n")
        numbers = range(first, first + len(lines))
        over = [o for n in numbers for o in sup.over.get((path, n), [])]
        if over:
            hit["supersedes"] = over
        gone = [n for n in numbers if (path, n) in sup.by]
        if gone and include:
            hit["superseded"] = True
            hit["superseded_by"] = sorted({sup.by[(path, n)] for n in gone})
        elif gone:
            left = [text for n, text in zip(numbers, lines, strict=True) if (path, n) not in sup.by]
            if not any(line_key(text) for text in left):
                continue  # nothing but superseded lines (and headings): the hit goes
            hit["snippet"] = "\n".join(left)
        kept.append(hit)
    answer["results"] = kept
    return answer
