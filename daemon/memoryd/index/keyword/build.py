"""The in-memory BM25's arrays, how a whole copy is built at once, and how a followed copy's
arrays take a new chunk (``Docs.add``) and drop the deleted ones (``compacted``).

A load counts the chunks a run at a time (keyword_counts) and merges the runs (``Build``);
a bulk sync that starts on an empty index streams the same merge from its commits
(``Stream``), with the runs counted by its chunking processes (prepare.py), so the copy is
ready when the sync ends instead of being built from the chunks after it.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import field
from itertools import compress, repeat
from operator import is_
from typing import TYPE_CHECKING, Any

from memoryd.index.keyword.counts import Counted, Stems, count_chunks
from memoryd.index.row_codes import NO_DAY, SOURCE_CODES, day_number
from memoryd.records import Fields, Record
from memoryd.runtime.foreground import FOREGROUND
from memoryd.runtime.lazy_numpy import np

try:  # _compiled_dates.c's day_chunks; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - installs without a compiler
    compiled = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from dataclasses import dataclass as fields_record
    from dataclasses import dataclass as frozen_record  # records.py says why

    import numpy.typing as npt
else:
    from memoryd.records import fields_record, frozen_record

POSTING_BYTES = 6  # uint32 slot + uint16 doubled frequency
DENSE_SHARE = 6  # a stem in over 1/6 of the chunks: a byte per chunk beats 6 per posting
STEM_BYTES = 250  # a dict entry and two small arrays
SLOT_BYTES = 30  # per chunk: float64 length and norm, bool alive, int8 source, int32 day, int64 id
DAY_CHUNKS_MAX = 8  # named days (and source codes) _compiled.day_chunks takes; past it numpy


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class StemPostings(Fields):
    """A stem's postings in the keyword copy: its chunks' slots and weights."""

    slots: npt.NDArray[np.uint32]  # chunks, as slots of Docs
    freq2: npt.NDArray[np.uint16]  # 2 x (TEXT_WEIGHT x tf(text) + HEADING_WEIGHT x tf(heading))
    n: int = 0  # entries in use (live or dead)
    df: int = 0  # live chunks containing the stem: FTS5's nHit
    # A common stem's freq2 by slot instead (0: not in that chunk; slots and freq2 empty):
    # stems in most chunks hold most postings, and one add over all slots scores them faster
    # than a scatter. Beyond its end, nothing.
    dense: npt.NDArray[np.uint8] | None = None
    # No posting's freq2 is above this (deleted ones may have been): what bounds the stem's
    # contribution to a score when ``top`` skips chunks that lack rarer query words.
    top_f2: int = 0xFFFF

    @property
    def nbytes(self) -> int:
        return len(self.slots) * POSTING_BYTES + (0 if self.dense is None else len(self.dense))


@functools.cache
def no_slots() -> npt.NDArray[np.uint32]:
    """A dense stem's empty list (one array, made on first use: runtime/lazy_numpy.py)."""
    return np.zeros(0, np.uint32)


@functools.cache
def no_freq() -> npt.NDArray[np.uint16]:
    return np.zeros(0, np.uint16)


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Docs(Fields):
    """Per chunk, by slot: slots are handed out in order and never reused until compaction,
    so a deleted chunk's postings can stay in place (hidden by ``alive``) even when SQLite
    gives its id to a new chunk."""

    length: npt.NDArray[np.float64]  # tokens in all columns: FTS5's D
    alive: npt.NDArray[np.bool_]
    source: npt.NDArray[np.int8]
    day: npt.NDArray[np.int32]
    chunk_id: npt.NDArray[np.int64]
    slot_of: dict[int, int] = field(default_factory=dict)  # live chunks only
    used: int = 0
    rows: int = 0
    tokens: int = 0

    @classmethod
    def empty(cls, capacity: int) -> Docs:
        return cls(
            np.zeros(capacity, np.float64),
            np.zeros(capacity, np.bool_),
            np.zeros(capacity, np.int8),
            np.zeros(capacity, np.int32),
            np.zeros(capacity, np.int64),
        )

    def take(self, keep: npt.NDArray[np.intp], capacity: int, index: bool = True) -> Docs:
        """A new Docs with room for ``capacity`` slots holding the slots ``keep``, in order;
        ``index``: with ``slot_of`` (a build makes it once, at its end)."""
        new = Docs.empty(capacity)
        n = len(keep)
        for name in ("length", "alive", "source", "day", "chunk_id"):
            getattr(new, name)[:n] = getattr(self, name)[keep]
        new.used, new.rows, new.tokens = n, self.rows, self.tokens
        if index:
            new.slot_of = {int(c): s for s, c in enumerate(new.chunk_id[:n]) if new.alive[s]}
        return new

    def add(self, chunk_id: int, length: int, source: str, day: str) -> Docs:
        """Give the chunk the next slot; returns the Docs now in use (new arrays when full:
        readers may hold the old ones)."""
        if chunk_id in self.slot_of:  # the triggers delete first: the copy is off
            raise ValueError(f"chunk {chunk_id} is already in the keyword mirror")
        docs = self
        if docs.used == len(docs.length):
            docs = docs.take(np.arange(docs.used), max(1024, docs.used + docs.used // 2))
        slot = docs.used
        docs.length[slot] = length
        docs.source[slot] = SOURCE_CODES.get(source, -1)
        docs.day[slot] = day_number(day)
        docs.chunk_id[slot] = chunk_id
        docs.alive[slot] = True
        docs.slot_of[chunk_id] = slot
        docs.used += 1
        docs.rows += 1
        docs.tokens += length
        return docs


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Postings(Fields):
    """A copy's live chunks (by slot) and every stem's postings, flat: stem k's are
    ``slots[sum(counts[:k]) : sum(counts[:k + 1])]`` (ascending), the same of freq2."""

    length: npt.NDArray[np.float64]
    source: npt.NDArray[np.int8]
    day: npt.NDArray[np.int32]
    chunk_id: npt.NDArray[np.int64]
    rows: int
    tokens: int
    stems: list[str]
    counts: npt.NDArray[np.int64]
    slots: npt.NDArray[np.uint32]
    freq2: npt.NDArray[np.uint16]


def flat_postings(
    docs: Docs,
    rows: int,
    tokens: int,
    lists: Sequence[
        tuple[str, npt.NDArray[np.uint32], npt.NDArray[np.uint16], npt.NDArray[np.uint8] | None]
    ],
    alive: npt.NDArray[np.bool_],
    used: int,
) -> Postings:
    """The live chunks of ``docs`` and their postings (``lists``: stem, slots, freq2 and the
    dense column of a common stem) as flat arrays, deleted chunks dropped and slots
    renumbered: what the sidecar saves (KeywordMirror.export)."""
    live = np.flatnonzero(alive)
    renumber = np.zeros(max(used, 1), np.uint32)
    renumber[live] = np.arange(len(live), dtype=np.uint32)
    stems: list[str] = []
    counts: list[int] = []
    slot_parts: list[npt.NDArray[np.uint32]] = []
    f2_parts: list[npt.NDArray[np.uint16]] = []
    for stem, slots, f2, dense in lists:
        if dense is not None:
            slots = np.flatnonzero(dense[:used]).astype(np.uint32)
            f2 = dense[slots].astype(np.uint16)
        keep = alive[slots]
        n = int(np.count_nonzero(keep))
        if n:
            stems.append(stem)
            counts.append(n)
            slot_parts.append(renumber[slots[keep]])
            f2_parts.append(f2[keep])
    return Postings(
        docs.length[live],
        docs.source[live],
        docs.day[live],
        docs.chunk_id[live],
        rows,
        tokens,
        stems,
        np.array(counts, np.int64),
        np.concatenate(slot_parts) if slot_parts else np.zeros(0, np.uint32),
        np.concatenate(f2_parts) if f2_parts else np.zeros(0, np.uint16),
    )


def sliced(
    stems: list[str],
    counts: npt.NDArray[np.int64],
    flat_slots: npt.NDArray[np.uint32],
    flat_f2: npt.NDArray[np.uint16],
    used: int,
    capacity: int,
) -> dict[str, StemPostings]:
    """Each stem's postings as slices of the flat arrays: no per-stem copies (and no heap
    they would fragment); a stem's first append after this copies its slice out. Stems in
    over 1/DENSE_SHARE of the ``used`` slots get a dense array of ``capacity`` slots."""
    if not stems:
        return {}
    n = counts.tolist()
    bounds = np.concatenate(([0], np.cumsum(counts)))
    starts = bounds[:-1].tolist()
    top = np.maximum.reduceat(flat_f2, bounds[:-1]).tolist()  # every stem has a posting
    is_dense = [n[k] * DENSE_SHARE > used and top[k] <= 0xFF for k in range(len(stems))]
    out: dict[str, StemPostings] = {}
    for k, stem in enumerate(stems):
        if is_dense[k]:
            dense = np.zeros(capacity, np.uint8)
            a, b = starts[k], starts[k] + n[k]
            dense[flat_slots[a:b]] = flat_f2[a:b]
            out[stem] = StemPostings(no_slots(), no_freq(), n[k], n[k], dense, top[k])
    # The lists' slices must not keep the dense stems' postings alive: new flat arrays.
    sparse = np.repeat(~np.array(is_dense), counts)
    flat_slots, flat_f2 = flat_slots[sparse], flat_f2[sparse]
    at = 0
    for k, stem in enumerate(stems):
        if not is_dense[k]:
            out[stem] = StemPostings(
                flat_slots[at : at + n[k]], flat_f2[at : at + n[k]], n[k], n[k], None, top[k]
            )
            at += n[k]
    return out


class Build:
    """A copy built from runs of counted chunks given in slot order: each run's stems are
    renumbered into the copy's (by first use, as counting chunk by chunk numbers them) and
    its postings kept flat until ``finish`` sorts them by stem, once."""

    def __init__(self, expected: int) -> None:
        self.docs = Docs.empty(expected + expected // 8 + 64)
        self.number: dict[str, int] = {}  # stem -> its number in the flat arrays
        self._parts: list[
            tuple[npt.NDArray[np.int32], npt.NDArray[np.uint32], npt.NDArray[np.uint16]]
        ] = []
        self._counts = np.zeros(0, np.int64)  # postings by stem number, as of ``size``
        self.uncounted: list[npt.NDArray[np.int32]] = []  # stem numbers ``size`` adds in
        self.postings = 0

    def add(
        self, counted: Counted, ids: Sequence[int], sources: Sequence[str], days: Sequence[str]
    ) -> npt.NDArray[np.int32]:
        """Give the run's chunks the next slots; returns its postings' stem numbers."""
        number = self.number
        names = counted.stem_list()
        found = list(map(number.get, names))
        if None in found:  # stems not seen before, numbered in the order they come
            for stem in compress(names, map(is_, found, repeat(None))):
                number[stem] = len(number)
            found = list(map(number.__getitem__, names))
        stems = np.array(found, np.int32)[counted.stem]
        docs = self.docs
        first, n = docs.used, counted.chunks
        capacity = len(docs.length)
        while first + n > capacity:  # grown as chunk by chunk grows it
            capacity = max(1024, capacity + capacity // 2)
        if capacity > len(docs.length):
            docs = self.docs = docs.take(np.arange(first), capacity, index=False)
        length = counted.lengths()
        docs.length[first : first + n] = length
        docs.source[first : first + n] = [SOURCE_CODES.get(s, -1) for s in sources]
        docs.day[first : first + n] = [day_number(d) for d in days]
        docs.chunk_id[first : first + n] = ids
        docs.alive[first : first + n] = True
        docs.used += n
        docs.rows += n
        docs.tokens += int(length.sum())
        self._parts.append((stems, counted.chunk + np.uint32(first), counted.freq2))
        self.postings += len(stems)
        return stems

    def size(self, used: int) -> int:
        """Bytes of the postings and stems as they stand, with ``used`` slots: what bounds
        a dense stem's array. Counts what ``uncounted`` holds first."""
        if self.uncounted:
            new = np.concatenate(self.uncounted)
            self.uncounted = []
            seen = max(len(self._counts), int(new.max(initial=-1)) + 1)  # stems numbered
            self._counts = np.bincount(new, minlength=seen) + np.pad(
                self._counts, (0, seen - len(self._counts))
            )
        per_stem = np.minimum(self._counts * POSTING_BYTES, used)  # sparse or dense
        return int(per_stem.sum()) + len(self._counts) * STEM_BYTES

    def finish(self, max_bytes: int) -> tuple[Docs, dict[str, StemPostings]] | None:
        """The copy; None when it takes more than ``max_bytes``."""
        docs = self.docs
        want = docs.used + docs.used // 8 + 64  # the room a load of this many chunks makes
        if len(docs.length) != want:
            docs = docs.take(np.arange(docs.used), want, index=False)
        # Long-lived small objects made last, after the build's garbage is gone, so they do
        # not pin its heap pages (malloc_trim can only give back whole free pages).
        docs.slot_of = dict(zip(docs.chunk_id[: docs.used].tolist(), range(docs.used), strict=True))
        if not self._parts:
            return docs, {}
        parts, self._parts = self._parts, []
        flat_stems = np.concatenate([p[0] for p in parts])
        # By stem, slots ascending within one: a radix sort when the stems fit 16 bits (a
        # year of notes has tens of thousands), 0.1 s instead of 1.2 s at 100k chunks.
        keys = flat_stems.astype(np.uint16) if len(self.number) <= 1 << 16 else flat_stems
        order = np.argsort(keys, kind="stable")
        del keys
        flat_slots = np.concatenate([p[1] for p in parts])[order]
        flat_f2 = np.concatenate([p[2] for p in parts])[order]
        del parts, order
        counts = np.bincount(flat_stems, minlength=len(self.number))
        post = sliced(list(self.number), counts, flat_slots, flat_f2, docs.used, len(docs.length))
        size = sum(p.nbytes for p in post.values()) + len(post) * STEM_BYTES
        return None if size + len(docs.length) * SLOT_BYTES > max_bytes else (docs, post)


@frozen_record(frozen=True, eq=False, repr=False)
class _Expected(Record):
    """A file's chunks as staged, counted already: the rows its commit will insert."""

    chunks: list[tuple[str, str]]  # (text, heading)
    counted: Counted


# (chunk id, text, heading, source, day): a row the chunks trigger saw inserted
Row = tuple[int, str, str, str, str]
_CHECK_POSTINGS = 1 << 20  # a stream checks its size every this many postings
# Rows a commit counts itself (all a bulk run's when the writer chunked them: sync.py) are
# counted this many at a time, stepping aside for a search between (runtime/foreground.py):
# a batch's at once held the writer in Python ~30 ms at 1,001 files. 32 rows (~7k tokens)
# keep count_chunks' arrays under the daemon's mmap threshold (runtime/heap.py, 128 KB):
# at 128 rows each array was a fresh mmap, 75k page faults in all against 35k, and the run's
# CPU 2.27 s against 2.09 (in process, the daemon's heap settings, load 12-14). Counted
# file by file as they were written instead, between the chunking, they cost ~12% more.
_LOOSE_RUN = 32


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Stream(Fields):
    """A copy built as a bulk sync on an empty index commits, instead of after it.

    The sync says which rows it staged counted already (``expect``, in staging order); the
    insert trigger hands over each row (``stage``), and a commit (``apply``) merges its
    rows in id order: a file's from the run counted ahead, any other row (a transcript's)
    counted here. What a stream cannot follow (a deleted row, a rolled-back transaction, a
    change it missed) breaks it, and the copy is loaded from the chunks after the sync, as
    without a stream."""

    stems: Stems
    max_bytes: int
    build: Build = field(default_factory=lambda: Build(0))
    broken: str | None = None  # why the copy must be loaded instead
    over_budget: bool = False
    _expected: deque[_Expected] = field(default_factory=deque)
    _staged: list[Row] = field(default_factory=list)
    _checked: int = 0  # postings at the last size check

    @property
    def following(self) -> bool:
        return self.broken is None and not self.over_budget

    def expect(self, chunks: list[tuple[str, str]], counted: Counted) -> None:
        if self.following and chunks:
            self._expected.append(_Expected(chunks, counted))

    def stage(self, row: Row) -> None:
        if self.following:
            self._staged.append(row)

    def fail(self, why: str) -> None:
        if self.broken is None:
            self.broken = why
            self.build, self._expected, self._staged = Build(0), deque(), []

    def apply(self) -> None:
        """A commit: merge its rows. Never raises (a commit hook)."""
        rows, self._staged = self._staged, []
        if not rows or not self.following:
            return
        try:
            self._merge(rows)
        except Exception as exc:  # the copy is worth less than the commit: load it later
            self.fail(f"merging failed: {exc!r}")
            return
        build = self.build
        if build.postings - self._checked >= _CHECK_POSTINGS:  # too big: give up early
            self._checked = build.postings
            if build.size(build.docs.used) > self.max_bytes:
                self.over_budget = True
                self.build, self._expected = Build(0), deque()

    def _merge(self, rows: list[Row]) -> None:
        loose: list[Row] = []  # rows no counted file gave: counted here
        i = 0
        while i < len(rows):
            exp = self._expected[0] if self._expected else None
            n = len(exp.chunks) if exp is not None else 0
            run = rows[i : i + n]
            if (
                exp is None
                or len(run) < n
                or any(r[1:3] != c for r, c in zip(run, exp.chunks, strict=True))
            ):
                loose.append(rows[i])
                i += 1
                continue
            self._add(loose)
            loose = []
            self._add(run, exp.counted)
            self._expected.popleft()
            i += n
        self._add(loose)

    def _add(self, rows: list[Row], counted: Counted | None = None) -> None:
        if counted is None and len(rows) > _LOOSE_RUN:  # a search goes first between runs
            for at in range(0, len(rows), _LOOSE_RUN):
                FOREGROUND.step_aside()
                self._add(rows[at : at + _LOOSE_RUN])
            return
        if rows:
            if counted is None:
                counted = count_chunks([(r[1], r[2]) for r in rows], self.stems)
            ids, sources, days = [r[0] for r in rows], [r[3] for r in rows], [r[4] for r in rows]
            self.build.uncounted.append(self.build.add(counted, ids, sources, days))

    def finish(self) -> tuple[Docs, dict[str, StemPostings]] | None:
        """The copy, or None when it takes more than ``max_bytes``."""
        return None if self.over_budget else self.build.finish(self.max_bytes)


def kept(
    pick: Callable[[npt.NDArray[Any]], npt.NDArray[Any]],
    docs: Docs,
    codes: list[int] | None,
    day_range: tuple[int | None, int | None] | None,
) -> npt.NDArray[np.bool_]:
    """Which chunks a search's filters keep (alive, of the sources asked, dated within the
    range), for the slots ``pick`` takes of the copy's columns: a few (gathered), or all
    below a count (a slice, read as is: nothing here writes to it)."""
    keep: npt.NDArray[np.bool_] = pick(docs.alive)
    if codes is not None:  # one source (the default: memory) is one comparison
        src = pick(docs.source)
        keep = keep & ((src == codes[0]) if len(codes) == 1 else np.isin(src, codes))
    if day_range is not None:
        days = pick(docs.day)
        keep = keep & (days != NO_DAY)
        if day_range[0] is not None:
            keep = keep & (days >= day_range[0])
        if day_range[1] is not None:
            keep = keep & (days <= day_range[1])
    return keep


def chunks_on_days(
    docs: Docs | None, days: Sequence[str], sources: Sequence[str], limit: int
) -> list[int] | None:
    """What ``SELECT id FROM chunks WHERE day IN (days) AND source IN (sources) ORDER BY id
    LIMIT limit`` answers, from the copy's columns (``docs``: KeywordMirror.docs_now); None
    when they cannot say: a day or a source they do not hold as such, or no copy."""
    numbers = [day_number(d) for d in days]
    if docs is None or not days or NO_DAY in numbers or limit < 0:
        return None
    if any(s not in SOURCE_CODES for s in sources):
        return None
    used = docs.used  # slots past it are a writer's, not yet ours (see mirror.py)
    codes = [SOURCE_CODES[s] for s in sources]
    if compiled is not None and len(numbers) <= DAY_CHUNKS_MAX and len(codes) <= DAY_CHUNKS_MAX:
        columns = (docs.day, docs.alive, docs.source, docs.chunk_id)  # one pass, in C
        return compiled.day_chunks(*columns, used, tuple(numbers), tuple(codes), limit)
    keep = kept(lambda column: column[:used], docs, codes, None)
    day = docs.day[:used]
    on = day == numbers[0]
    for n in numbers[1:]:
        on = on | (day == n)
    return [int(i) for i in np.sort(docs.chunk_id[:used][keep & on])[:limit]]


def compacted(post: dict[str, StemPostings], docs: Docs) -> tuple[dict[str, StemPostings], Docs]:
    """The postings and Docs without the deleted chunks' postings and slots: new arrays
    throughout (readers may hold the old ones), the live slots renumbered in order."""
    live = np.flatnonzero(docs.alive[: docs.used])
    renumber = np.zeros(max(docs.used, 1), np.uint32)
    renumber[live] = np.arange(len(live), dtype=np.uint32)
    capacity = max(1024, len(live) + len(live) // 2)
    out: dict[str, StemPostings] = {}
    for stem, p in post.items():
        if p.dense is not None:
            by_slot = np.zeros(docs.used, np.uint8)
            m = min(len(p.dense), docs.used)
            by_slot[:m] = p.dense[:m]
            live_f2 = by_slot[live]
            n = int(np.count_nonzero(live_f2))
            if n:
                dense = np.zeros(capacity, np.uint8)
                dense[: len(live)] = live_f2
                out[stem] = StemPostings(no_slots(), no_freq(), n, p.df, dense, p.top_f2)
            continue
        keep = docs.alive[p.slots[: p.n]]
        n = int(np.count_nonzero(keep))
        if n:
            out[stem] = StemPostings(
                renumber[p.slots[: p.n][keep]], p.freq2[: p.n][keep], n, p.df, None, p.top_f2
            )
    return out, docs.take(live, capacity)
