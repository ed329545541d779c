"""Two hosts' commits merged into one tree, file by file, and the tombstones applied.

``integrate`` compares our last commit with the remote's: every path that differs is
merged three-way against their merge base by its kind's rule (merge_file.py); the ledger
first, as the merged ledger tells the other merges when each line was written and by whom.
Then the tombstones this host has not applied yet remove their lines (tombstones.py). The
answer is the new content of each path that changes against our commit: what the commit
will hold and what the workspace's files must become.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from memoryd.files.lines import line_key
from memoryd.files.provenance import LEDGER_REL
from memoryd.sync.merge_daily import Sides
from memoryd.sync.merge_file import merge_file
from memoryd.sync.merge_ledger import LedgerView, Tombstone, parse_records
from memoryd.sync.paths import Scope, kind_of
from memoryd.sync.repo import Entry, Repo
from memoryd.sync.text import as_bytes, as_text
from memoryd.sync.tombstones import Removal, drop_lines, unseen

__all__ = ["Integration", "integrate"]

FILE_MODE = "100644"


@dataclass
class Integration:
    ours: str | None
    theirs: str
    parents: list[str]
    contents: dict[str, bytes | None] = field(default_factory=dict)  # synced, vs ours
    other: dict[str, Entry | None] = field(default_factory=dict)  # not synced, vs ours
    notes: dict[str, int] = field(default_factory=dict)  # path -> conflict notes written
    removed: list[Removal] = field(default_factory=list)  # lines tombstones took out
    ledger: LedgerView = field(default_factory=LedgerView)  # the merged one
    is_theirs: bool = False  # the result is the remote's tree as it is (a fast-forward)
    committed: dict[str, bytes | None] = field(default_factory=dict)  # ours, of contents'


@dataclass(frozen=True)
class Hosts:
    ours: str
    theirs: str
    day: str
    ours_time: float = 0.0  # when each side's commit was made
    theirs_time: float = 0.0


def integrate(
    repo: Repo,
    scope: Scope,
    ours: str | None,
    theirs: str,
    base: str | None,
    hosts: Hosts,
    adopt: bool = False,
    purged: frozenset[str] = frozenset(),
) -> Integration:
    """Our commit ``ours`` (None: nothing committed yet) and the remote's ``theirs``, and
    their merge base ``base``. ``adopt``: the remote's history was rewritten (a purge): the
    result builds on theirs alone, and our old history is dropped. ``purged``: line keys a
    purge here is taking out of everything (purge.py): kept out of what the merge brings in."""
    parents = [theirs] if ours is None or adopt or base == ours else [ours, theirs]
    t_o, t_t = repo.tree_of(ours), repo.tree_of(theirs)
    t_b = t_o if base == ours else repo.tree_of(base)
    out = Integration(ours, theirs, parents)
    paths = sorted(p for p in t_o.keys() | t_t.keys() if t_o.get(p) != t_t.get(p))
    synced = [p for p in paths if scope.synced(p)]
    for p in paths:
        if p not in synced:  # memoryd never touches it: theirs unless only ours changed it
            changed_ours = t_o.get(p) != t_b.get(p)
            if not changed_ours:
                out.other[p] = t_t.get(p)
    oids = [e.oid for t in (t_o, t_t, t_b) for p in synced if (e := t.get(p)) is not None]
    ledger_oids = [e.oid for t in (t_o, t_t) if (e := t.get(LEDGER_REL)) is not None]
    blobs = repo.blobs([*oids, *ledger_oids])

    def blob(tree: dict[str, Entry], p: str) -> bytes | None:
        e = tree.get(p)
        if e is None:
            return None
        if e.oid not in blobs:  # a path the two sides hold alike (a tombstone's)
            blobs.update(repo.blobs([e.oid]))
        return blobs[e.oid]

    times = (hosts.ours_time, hosts.theirs_time)
    ordered = sorted(synced, key=lambda p: p != LEDGER_REL)  # the ledger first
    view = LedgerView.of(parse_records(blob(t_o, LEDGER_REL)))
    for p in ordered:
        sides = Sides(p, view, hosts.ours, hosts.theirs, times[0], times[1], hosts.day)
        merged = merge_file(kind_of(p), blob(t_b, p), blob(t_o, p), blob(t_t, p), sides)
        if merged.notes:
            out.notes[p] = merged.notes
        if merged.data != blob(t_o, p):
            out.contents[p] = merged.data
        if p == LEDGER_REL:
            view = LedgerView.of(parse_records(merged.data))
    out.ledger = view
    committed = LedgerView.of(parse_records(blob(t_o, LEDGER_REL)))
    stones = unseen(view, committed)
    _tombstones(out, stones, lambda p: blob(t_o, p), lambda p: blob(t_t, p), scope)
    if purged:
        for p, data in list(out.contents.items()):
            if data is not None and p != LEDGER_REL:
                text = as_text(data)
                lines, removed = drop_lines(text.lines, purged)
                if removed:
                    out.contents[p] = as_bytes(lines, text.newline_at_end)
    out.is_theirs = _is_theirs(out, paths, set(synced), t_t, blob)
    out.committed = {p: blob(t_o, p) for p in out.contents}
    return out


def _is_theirs(
    out: Integration,
    paths: list[str],
    synced: set[str],
    t_t: dict[str, Entry],
    blob: Callable[[dict[str, Entry], str], bytes | None],
) -> bool:
    """Whether the result is the remote's tree exactly (its commit is the result)."""
    for p in paths:  # every path the two sides hold differently takes theirs
        if p not in (out.contents if p in synced else out.other):
            return False
    for p, data in out.contents.items():
        e = t_t.get(p)
        if data is None or e is None:
            if data is not None or e is not None:
                return False
        elif e.mode != FILE_MODE or data != blob(t_t, p):
            return False
    return True


def _tombstones(
    out: Integration,
    stones: list[Tombstone],
    ours_blob: Callable[[str], bytes | None],
    theirs_blob: Callable[[str], bytes | None],
    scope: Scope,
) -> None:
    """Remove the lines of the tombstones not applied here yet, and count what this host
    lost to forgets made elsewhere (by the merge itself, or by the tombstones now).

    A line the remote's own version of the file still holds stays: the remote's ledger has
    the tombstone, so whoever committed that version had applied it, and the line is there
    again on purpose (written anew by hand, which records no ``add``)."""
    by_path: dict[str, set[str]] = {}
    for t in stones:
        if scope.synced(t.path):
            by_path.setdefault(t.path, set()).add(t.k)
    for path, keys in sorted(by_path.items()):
        theirs = theirs_blob(path)
        if theirs is not None:
            keys = keys - {line_key(x) for x in as_text(theirs).lines if x.strip()}
        before = ours_blob(path)
        current = out.contents.get(path, before)
        if current is None or not keys:
            continue
        text = as_text(current)
        lines, removed = drop_lines(text.lines, keys)
        if removed:
            out.contents[path] = as_bytes(lines, text.newline_at_end)
        had = sum(1 for x in as_text(before).lines if x.strip() and line_key(x) in keys)
        if had:
            out.removed.append(Removal(path, had))


def today(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).date().isoformat()
