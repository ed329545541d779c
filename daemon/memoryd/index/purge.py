"""What a purge (``forget --purge``) does to the index database beyond deleting the rows.

Deleting a chunk removes its row, but SQLite leaves the bytes where they were (a freed cell,
a page on the free list) and FTS5 keeps a deleted document's terms in its older segments
until they are merged. The connections run with ``secure_delete`` on (sqlite.py: freed
content is zeroed when it is freed), and after a purge's rows are deleted:

- the FTS5 index is merged into one segment (``optimize``): the old segments, which still
  spell the terms, are freed, and so zeroed;
- once per database file, ``VACUUM``: what was freed before ``secure_delete`` was on (a file
  made by an older version) is rewritten away; the meta key ``secure_since`` records it;
- the WAL is checkpointed and truncated: no older page image stays in it.

The keyword copy's sidecar file (its stems) is removed by the caller: it is written again at
the next clean close from the copy, which holds no stem of a deleted chunk.
"""

from __future__ import annotations

import time
from typing import Any

import apsw

from memoryd.index.schema import get_meta, set_meta
from memoryd.runtime.logs import get_logger

__all__ = ["scrub"]

log = get_logger("memoryd.index")

CHECKPOINT_TRIES = 20  # readers finishing their snapshot: a busy checkpoint is tried again


def scrub(conn: apsw.Connection) -> dict[str, Any]:
    """Make the deleted rows' bytes unreadable in the database and its WAL (writer thread,
    after the purge's rows were deleted). What was done, with timings in ms."""
    out: dict[str, Any] = {}
    started = time.perf_counter()
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
    out["fts_optimize_ms"] = round((time.perf_counter() - started) * 1000, 1)
    if get_meta(conn).get("secure_since") is None:
        started = time.perf_counter()
        conn.execute("VACUUM")
        set_meta(conn, {"secure_since": str(round(time.time()))})
        out["vacuum_ms"] = round((time.perf_counter() - started) * 1000, 1)
    out["wal_truncated"] = checkpoint(conn)
    return out


def checkpoint(conn: apsw.Connection) -> bool:
    """Checkpoint the WAL into the database and truncate it to nothing; False when readers
    kept it busy every time (the next checkpoint finishes it)."""
    for _ in range(CHECKPOINT_TRIES):
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone() or (1, 0, 0)
        if not busy:
            return True
        time.sleep(0.05)
    log.warning("purge_checkpoint_busy", tries=CHECKPOINT_TRIES)
    return False
