"""The provenance ledger across hosts: records merged by identity, and what they tell a merge.

A record's identity is its exact JSON line. Two hosts' ledgers merge three-way as sets: a
record both keep stays, a record one side added comes in, a record one side dropped since
the base (compaction, a forget's rewrite) stays dropped. The result is ordered by ``at``
(stable), so every host folds the same records in the same order (write-path.md section 3).

``forget`` records are the tombstones that make a forget travel (tombstones.py); they hold
a line key, never its text, so a purge keeps them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memoryd.files.provenance import least_trusted

__all__ = ["LedgerView", "Tombstone", "merge_ledgers", "parse_records"]

OWNER = "owner"


@dataclass(frozen=True)
class Tombstone:
    path: str
    k: str
    at: float
    raw: str  # the record's line: its identity


def parse_records(data: bytes | None) -> list[tuple[str, dict[str, Any]]]:
    """(line, record) for each valid record; torn or malformed lines are left out."""
    out: list[tuple[str, dict[str, Any]]] = []
    if not data:
        return out
    for raw in data.decode("utf-8", "replace").split("\n"):
        raw = raw.strip()
        if not raw:
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("op"), str):
            out.append((raw, obj))
    return out


def _at(obj: dict[str, Any]) -> float:
    at = obj.get("at")
    return float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0


def merge_ledgers(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> bytes:
    """The three-way set merge of three versions of the ledger, ordered by ``at``."""
    b = {raw for raw, _ in parse_records(base)}
    a_recs, t_recs = parse_records(ours), parse_records(theirs)
    a, t = {raw for raw, _ in a_recs}, {raw for raw, _ in t_recs}
    kept: dict[str, float] = {}
    for raw, obj in (*a_recs, *t_recs):
        if raw in kept:
            continue
        if (raw in a and raw in t) or (raw in a and raw not in b) or (raw in t and raw not in b):
            kept[raw] = _at(obj)
    ordered = sorted(kept, key=lambda r: kept[r])  # sorted() is stable: ours first on a tie
    return "".join(r + "\n" for r in ordered).encode("utf-8")


@dataclass
class LedgerView:
    """What a merged ledger says about the lines of each file: when each line was last
    added, how trusted it is, and the tombstones."""

    added_at: dict[tuple[str, str], float] = field(default_factory=dict)
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    tombstones: list[Tombstone] = field(default_factory=list)

    @classmethod
    def of(cls, records: Iterable[tuple[str, dict[str, Any]]]) -> LedgerView:
        view = cls()
        since: dict[tuple[str, str], str] = {}  # least trusted add since the last forget
        for raw, obj in sorted(records, key=lambda r: _at(r[1])):
            op, k, path = obj.get("op"), obj.get("k"), obj.get("path")
            if not (isinstance(k, str) and k and isinstance(path, str)):
                continue
            key = (path, k)
            if op == "add":
                origin = obj.get("origin")
                origin = origin if isinstance(origin, str) else OWNER
                view.added_at[key] = max(view.added_at.get(key, 0.0), _at(obj))
                since[key] = least_trusted(since.get(key, origin), origin)
            elif op == "forget":
                view.tombstones.append(Tombstone(path, k, _at(obj), raw))
                since.pop(key, None)
            elif op == "approve":
                since[key] = OWNER
        view.origin = since
        return view

    def time_of(self, path: str, k: str) -> float | None:
        return self.added_at.get((path, k))

    def trusted(self, path: str, k: str) -> bool:
        """Whether the line's annotations count (its key may supersede): owner or agent."""
        return self.origin.get((path, k), OWNER) in (OWNER, "agent")
