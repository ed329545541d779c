"""Appends to markdown files re-chunk only their tail.

The Syncer keeps the chunker's state (chunker.MarkdownState, ~100 bytes a line) of the
markdown files it chunked lately. When such a file changed only by growing (its old bytes
hash to what was indexed), ``chunk_appended`` gives the chunks from its last intact
top-level section on, and only the rows that differ are rewritten: the rows before keep
their ids and vectors, and an append to a 20,000-line daily log costs about what one to a
100-line log does. A file touched (a new mtime, the same bytes) keeps its state. Any
other change, a state not kept (evicted) or an append that changes the top-level split
re-chunks the file whole, as before.

The states live in memory only. After a restart, once the start-up scan is done, the
writer warms them (``Syncer.warm``, one file at a time and after any sync waiting): the
markdown files modified last, as many as the states would hold had the daemon seen them
written, are read and chunked again, without writing anything, and a state is kept when the
bytes still hash to the files row and give the chunks the index holds. Only long files
modified lately are (``WARM_MIN_BYTES``, ``WARM_WITHIN_S``): a short one re-chunks whole
cheaply, an old one is seldom appended to, and an index that holds only those never loads
the tokenizer for it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import apsw

from memoryd.index import store
from memoryd.index.chunker import Chunk, MarkdownState
from memoryd.index.vectors.mirror import VectorMirror
from memoryd.records import Fields, Record
from memoryd.runtime.heap import release_free_memory
from memoryd.runtime.logs import get_logger

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as fields_record
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import fields_record, frozen_record

log = get_logger("memoryd.index")

KEEP_FILES = 16  # the files written lately: a day's logs, MEMORY.md, a few topics
KEEP_LINES = 100_000  # ~120 bytes a line: at most ~12 MB of states in all
# Warmed after a restart: files of this size and up (~1,500 lines; smaller ones re-chunk
# whole at their next change in ~0.1 s or less), modified within this long (being written:
# today's log, yesterday's). The warm-up loads the tokenizer, which an index whose files
# do not change never needs, and leaves the daemon ~20-35 MB larger (1,500-20,000 lines):
# what the first append to such a file costs anyway.
WARM_MIN_BYTES = 128 * 1024
WARM_WITHIN_S = 2 * 86400


@frozen_record(frozen=True, eq=False, repr=False)
class Resume(Record):
    """Where a grown file's chunking starts again, and the state it starts in."""

    state: MarkdownState
    first: int  # the first line (index) the chunker needs...
    offset: int  # ...and where it starts in the file's bytes
    digest: str  # sha256 of the file's bytes now


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class _Kept(Fields):
    """A file's chunking state at its end, for the next growth."""

    digest: str  # sha256 of the bytes chunked (what the files row holds)
    size: int  # how many bytes those were
    state: MarkdownState


class TailStates:
    """Chunker states of recently chunked markdown files, least recently used first out.
    Writer thread only."""

    def __init__(self, files: int = KEEP_FILES, lines: int = KEEP_LINES) -> None:
        self.files = files
        self.lines = lines
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    def take(self, rel: str, indexed_hash: str, data: bytes) -> Resume | None:
        """Where to resume ``rel`` from, when ``data`` (its bytes now) only adds to what the
        index holds (``indexed_hash``, the files row's); None otherwise. Taken out: the state
        is put back once the new chunks are written, so a failed write leaves none behind."""
        kept = self._kept.pop(rel, None)
        if kept is None or kept.digest != indexed_hash or len(data) < kept.size:
            return None
        if len(data) == kept.size:  # touched (or edited in place): kept, as the last used
            self._kept[rel] = kept  # (a new state replaces it if the bytes did change)
            return None
        hasher = hashlib.sha256(memoryview(data)[: kept.size])
        if hasher.hexdigest() != kept.digest:
            return None  # edited, not (only) appended to
        hasher.update(memoryview(data)[kept.size :])  # the new digest, in the same pass
        first = kept.state.needs_from()
        # Line ``first`` starts after the first-th newline: walk back from the old end (the
        # old text had lines - 1 of them). UTF-8 never puts a newline byte inside a
        # character, so the bytes from there decode to the text from that line on.
        pos = kept.size
        for _ in range(kept.state.lines - first):
            pos = data.rfind(b"\n", 0, pos)
        return Resume(kept.state, first, pos + 1, hasher.hexdigest())

    def put(self, rel: str, digest: str, size: int, state: MarkdownState) -> None:
        self._kept.pop(rel, None)
        if state.lines > self.lines:
            return
        self._kept[rel] = _Kept(digest, size, state)
        total = sum(k.state.lines for k in self._kept.values())
        while len(self._kept) > self.files or total > self.lines:
            _, old = self._kept.popitem(last=False)
            total -= old.state.lines

    def room(self, lines: int) -> bool:
        """Whether a state of ``lines`` lines fits without dropping one kept."""
        total = sum(k.state.lines for k in self._kept.values())
        return len(self._kept) < self.files and total + lines <= self.lines

    def put_older(self, rel: str, digest: str, size: int, state: MarkdownState) -> bool:
        """Keep ``state`` as the least recently used one, if it fits without dropping
        another: a warmed state, of a file written before any whose state is kept."""
        if rel in self._kept or not self.room(state.lines):
            return False
        self._kept[rel] = _Kept(digest, size, state)
        self._kept.move_to_end(rel, last=False)
        return True

    def drop(self, rel: str) -> None:
        self._kept.pop(rel, None)

    def lines_of(self, rel: str) -> int:
        kept = self._kept.get(rel)
        return 0 if kept is None else kept.state.lines

    def __contains__(self, rel: str) -> bool:
        return rel in self._kept

    def __len__(self) -> int:
        return len(self._kept)


def replace_tail(
    conn: apsw.Connection,
    path: str,
    source: str,
    day: str,
    kept: int,
    chunks: Sequence[Chunk],
    mirror: VectorMirror | None = None,
) -> tuple[int, int]:
    """The file's chunks after its first ``kept`` become ``chunks``: rows equal to the new
    chunks stay as they are (ids, vectors), the rest are replaced. (removed, written)."""
    # A file's chunk ids rise with their position: they are inserted in order, and the
    # new tail always gets ids above the rows kept.
    ids = conn.execute(
        "SELECT id FROM chunks WHERE path = ? ORDER BY id LIMIT -1 OFFSET ?", (path, kept)
    ).fetchall()
    rows = [
        conn.execute(
            "SELECT id, start_line, end_line, heading, text FROM chunks WHERE id = ?", i
        ).fetchall()[0]
        for i in ids
    ]
    same = 0
    for row, c in zip(rows, chunks, strict=False):
        if row[1:] != (c.start_line, c.end_line, c.heading, c.text):
            break
        same += 1
    removed = store.delete_ids(conn, [cast(int, r[0]) for r in rows[same:]], mirror)
    written = store.insert_chunks(conn, path, source, day, chunks[same:])
    return removed, written


class Warmable(Protocol):
    """What warms the states: the writer's Syncer (sync.py)."""

    @property
    def tails(self) -> TailStates: ...

    def warm_targets(self) -> list[str]: ...

    def warm(self, rel: str) -> bool: ...


class TailWarmer:
    """The warm-up after a whole scan, on the writer thread: the chunker states that
    appends resume from, which a restart lost, so that the first append to a long daily
    log re-chunks only its tail. One file per writer task, each queued behind what waits
    there, and none while a sync is pending: syncs go first."""

    def __init__(
        self,
        root: Path,
        submit: Callable[[Callable[[], None]], object],
        syncer: Callable[[], Warmable | None],
        waiting: Callable[[], bool],
        closed: Callable[[], bool],
        on_index_error: Callable[[BaseException, str], None],
    ) -> None:
        """``submit``: queues a task on the writer thread (RuntimeError once closing);
        ``waiting``: a sync is pending; ``on_index_error``: an apsw error met warming."""
        self.root = root
        self._submit = submit
        self._syncer = syncer
        self._waiting = waiting
        self._closed = closed
        self._on_index_error = on_index_error
        # The files whose states are still to warm, the newest last; set while none are.
        self._to_warm: list[str] = []
        self._tally = [0, 0, 0.0]  # files, lines, seconds
        self._warmed = threading.Event()
        self._warmed.set()

    def start(self) -> None:
        """Writer thread, after a whole scan."""
        syncer = self._syncer()
        if syncer is None:
            return
        self._to_warm = syncer.warm_targets()
        if self._to_warm and self._warmed.is_set():  # else the warm-up under way goes on
            self._warmed.clear()
            self._tally = [0, 0, 0.0]
            self._next_soon()

    def _next_soon(self) -> None:
        try:
            self._submit(self._next)
        except RuntimeError:  # closing
            self._warmed.set()

    def _next(self) -> None:
        syncer = self._syncer()
        if self._closed() or syncer is None:
            self._to_warm = []
        elif not self._waiting():
            rel = self._to_warm.pop()
            started = time.perf_counter()
            try:
                if syncer.warm(rel):
                    self._tally[0] += 1
                    self._tally[1] += syncer.tails.lines_of(rel)
            except apsw.Error as exc:  # the index: damage is rebuilt; else left to syncs
                log.warning("tail_state_warm_failed", path=rel, error=str(exc))
                self._on_index_error(exc, "warming append states")
            except Exception as exc:  # reading a file: its next change chunks it whole
                log.warning("tail_state_warm_failed", path=rel, error=repr(exc))
            self._tally[2] += time.perf_counter() - started
        if self._to_warm:  # behind the syncs pending, if any
            self._next_soon()
            return
        files, lines, seconds = self._tally
        if files:
            release_free_memory()  # the texts read and chunked: a burst, as after a scan
            log.info(
                "tail_states_warmed",
                workspace=str(self.root),
                files=files,
                lines=lines,
                ms=round(seconds * 1000, 1),
            )
        self._warmed.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no warm-up is under way; False on timeout."""
        return self._warmed.wait(timeout)

    def cancelled(self) -> None:
        """The writer shut down: a warm-up still to do will not run."""
        self._warmed.set()
