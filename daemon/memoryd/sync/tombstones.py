"""Forgets that travel: a host removes the lines another host's forget recorded.

A forget writes a ``forget`` record {k, path, at} to the ledger (a tombstone: a key, never
the text). A tombstone is applied once per host: at the first sync that brings it, i.e.
when it is in the merged ledger but not in the ledger this host had committed (so a host's
own forgets, already done, are not applied again, and a line written anew by hand after a
tombstone was applied is left alone). The line goes from the tombstone's path unless the
merged ledger records an ``add`` of the same (path, key) after the tombstone: a later write
revives it (write-path.md section 3).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memoryd.files.lines import line_key
from memoryd.sync.merge_ledger import LedgerView, Tombstone

__all__ = ["Removal", "drop_lines", "unseen"]


@dataclass(frozen=True)
class Removal:
    path: str
    lines: int


def unseen(merged: LedgerView, committed: LedgerView) -> list[Tombstone]:
    """The tombstones this host has not applied yet, each still standing (no later add)."""
    seen = {t.raw for t in committed.tombstones}
    out = []
    for t in merged.tombstones:
        if t.raw in seen:
            continue
        added = merged.time_of(t.path, t.k)
        if added is not None and added > t.at:
            continue
        out.append(t)
    return out


def drop_lines(lines: list[str], keys: Iterable[str]) -> tuple[list[str], int]:
    """``lines`` without those whose key is in ``keys`` (a blank line the cut leaves
    doubled goes too); and how many went."""
    gone = set(keys)
    out: list[str] = []
    removed = 0
    cut = False  # a line was just cut: a blank that now doubles another goes too
    for line in lines:
        blank = not line.strip()
        if not blank and line_key(line) in gone:
            removed += 1
            cut = True
            continue
        if blank and cut and (not out or not out[-1].strip()):
            continue
        cut = cut and blank
        out.append(line)
    return out, removed
