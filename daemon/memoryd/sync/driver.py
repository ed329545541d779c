"""git's merge driver for memory files: ``python -m memoryd.sync.driver %O %A %B %P``.

Configured in the sync repository's own config (workspace_repo.py), so that a merge a person
runs by hand there (``git pull`` in a workspace synced through its own repository) merges
daily notes as a union, MEMORY.md three-way with keys and conflict notes, and the ledger by
record identity, exactly as memoryd's sync does: never with ``<<<<<<<`` markers. The
result is written to %A and the exit code is 0 (merged). The ledger's times come from the
two versions' ledgers when the ledger itself is merged, else from the work tree's ledger.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

from memoryd.files.provenance import LEDGER_REL
from memoryd.sync.merge_daily import Sides
from memoryd.sync.merge_file import merge_file
from memoryd.sync.merge_ledger import LedgerView, parse_records
from memoryd.sync.paths import kind_of


def _read(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: python -m memoryd.sync.driver BASE OURS THEIRS PATH", file=sys.stderr)
        return 2
    base_f, ours_f, theirs_f, rel = argv
    base, ours, theirs = _read(base_f), _read(ours_f), _read(theirs_f)
    ledger = _read(os.path.join(os.environ.get("GIT_WORK_TREE", "."), LEDGER_REL))
    day = dt.date.today().isoformat()
    sides = Sides(rel, LedgerView.of(parse_records(ledger)), "ours", "theirs", day=day)
    merged = merge_file(kind_of(rel), base or b"", ours, theirs, sides)
    Path(ours_f).write_bytes(merged.data or b"")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
