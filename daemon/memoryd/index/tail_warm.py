"""The warm-up's reads of the index (tails.py's TailWarmer drives them on the writer thread):
which files' chunker states to rebuild after a restart, and rebuilding one when its bytes
and chunks are still those indexed. Functions of the writer's Syncer, kept apart from the
syncs themselves."""

from __future__ import annotations

import hashlib
import time

from memoryd import sqlite
from memoryd.files.annotations import strip_annotations
from memoryd.index.chunker import chunk_markdown_state
from memoryd.index.sync import Syncer
from memoryd.index.tails import WARM_MIN_BYTES, WARM_WITHIN_S, TailStates
from memoryd.runtime.logs import get_logger
from memoryd_client.search_terms import SOURCE_SESSIONS

log = get_logger("memoryd.index")


class SyncerWarm:
    """A Syncer as tails.Warmable."""

    def __init__(self, syncer: Syncer) -> None:
        self.syncer = syncer

    @property
    def tails(self) -> TailStates:
        return self.syncer.tails

    def warm_targets(self) -> list[str]:
        return warm_targets(self.syncer)

    def warm(self, rel: str) -> bool:
        return warm(self.syncer, rel)


def warm_targets(self: Syncer) -> list[str]:
    """The markdown files whose chunker states an append would find kept had the
    daemon seen them written (the ones modified last, as many as ``tails`` keeps),
    oldest first: those long and recent enough to be worth one (tails.py), without one
    kept."""
    rows = self.conn.execute(
        "SELECT path, size, mtime_ns FROM files WHERE source != ? AND skipped_reason "
        "IS NULL AND hash != '' ORDER BY mtime_ns DESC, path DESC LIMIT ?",
        (SOURCE_SESSIONS, self.tails.files),
    ).fetchall()
    since = time.time_ns() - WARM_WITHIN_S * 1_000_000_000
    return [
        str(rel)
        for rel, size, mtime_ns in reversed(rows)
        if rel not in self.tails and int(size) >= WARM_MIN_BYTES and int(mtime_ns) >= since
    ]


def warm(self: Syncer, rel: str) -> bool:
    """Keep the chunker state of ``rel`` as if it had just been chunked (its next
    append re-chunks only its tail), when its bytes are still those indexed; writes
    nothing. False when no state was kept: changed since (its sync will chunk it),
    no room, or its chunks differ from the index's (the next change re-chunks it
    whole, as without a state)."""
    row = self._row(rel)
    f = self.layout.indexed(rel)
    if (
        rel in self.tails
        or row is None
        or not row.hash
        or row.skipped_reason
        or f is None
        or f.name_error is not None
        or f.source == SOURCE_SESSIONS
    ):
        return False
    try:
        st = f.path.stat()
    except OSError:
        return False
    if st.st_size != row.size:
        return False
    data = self.reads.read(f, st, quiet=True)
    if not isinstance(data, bytes) or not self.tails.room(data.count(b"\n") + 1):
        return False
    if hashlib.sha256(data).hexdigest() != row.hash:
        return False
    # Decoded as _decode does, without its warning: the sync that indexed it gave that.
    chunks, state = chunk_markdown_state(
        strip_annotations(data.decode("utf-8", errors="replace")),
        self.tokenizer(),
        self.chunk_tokens,
        self.chunk_overlap,
    )
    # Cheap to compare where a state meets the rows: their count, and the last one,
    # which an append replaces or follows.
    count = sqlite.scalar(self.conn, "SELECT count(*) FROM chunks WHERE path = ?", (rel,))
    last = sqlite.rows(
        self.conn,
        "SELECT start_line, end_line, text FROM chunks WHERE path = ? ORDER BY id DESC LIMIT 1",
        (rel,),
    )
    want = [(c.start_line, c.end_line, c.text) for c in chunks[-1:]]
    if count != state.chunks or last != want:
        log.info("tail_state_not_warmed", path=rel, reason="the index holds other chunks")
        return False
    return self.tails.put_older(rel, row.hash, len(data), state)
