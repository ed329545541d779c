"""An in-memory inverted index of the chunks that computes FTS5's bm25() with numpy.

FTS5 stays the store, and the fallback. This copy exists for speed: bm25() costs
0.5-0.8 µs for every chunk an OR query matches, and a question with one common word
matches thousands of chunks (1.6-2.6 ms at 10k chunks, most of a keyword search). The same
sum, done as array operations over each term's postings, takes ~0.1 ms.

The scores are FTS5's, bit for bit: the same tokenizer (porter over unicode61, called
through apsw), the same column weights, and the same double arithmetic in the same order
as fts5_aux.c (k1 1.2, b 0.75, IDF floored at 1e-6, document length and avgdl over all
columns, one term after another in query order). A test checks the top against FTS5's
through inserts, deletes and reused ids.

How the copy follows commits is in mirror.py. Readers never block on the writer: postings
are only appended past the count a reader saw, and growing builds new arrays. A deleted
chunk's postings stay until compaction; its ``alive`` flag hides them. When the postings
would take more than ``max_bytes``, or while loading, ``top`` answers None and the caller
asks FTS5.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, islice, repeat
from operator import is_
from typing import cast

import apsw
import numpy as np
import numpy.typing as npt

from memoryd.index.bm25 import K1, B, Term, idf, pruned, scored_all, scores_of
from memoryd.index.keyword_text import keyword_text
from memoryd.index.mirror import StagedMirror
from memoryd.index.schema import FTS_TOKENIZER
from memoryd.index.scratch import SCRATCH
from memoryd.index.vector_mirror import NO_DAY, SOURCE_CODES, day_number

TEXT_WEIGHT = 1.0  # bm25() column weights: text, heading
HEADING_WEIGHT = 0.5
POSTING_BYTES = 6  # uint32 slot + uint16 doubled frequency
DENSE_SHARE = 6  # a stem in over 1/6 of the chunks: a byte per chunk beats 6 per posting
STEM_BYTES = 250  # a dict entry and two small arrays
_BUILD_CHUNKS = 512  # chunks counted at a time by a load
_CHECK_POSTINGS = 1 << 14  # a load checks its projected size every this many postings
# Doubled column weights (text, heading): analyze's freq2 per token of each column.
_COLUMN_WEIGHTS2 = np.array([int(2 * TEXT_WEIGHT), int(2 * HEADING_WEIGHT)], np.int64)
SLOT_BYTES = 30  # per chunk: float64 length and norm, bool alive, int8 source, int32 day, int64 id
# Below this many chunks scoring every posting takes ~0.1 ms: MaxScore's bookkeeping would
# cost more than it saves.
PRUNE_FROM = 16_384

Stems = Callable[[str], list[str]]  # a text's tokens as FTS5 indexes them
# ("put", id, length, {stem: doubled frequency}, source, day) | ("del", id, 0, {...}, "", "")
_Op = tuple[str, int, int, dict[str, int], str, str]


def fts5_stems(conn: apsw.Connection) -> Stems:
    """The chunks_fts tokenizer (schema.FTS_TOKENIZER) over keyword_text(text), as its
    triggers index it, as a function of text."""
    porter = conn.fts5_tokenizer(*FTS_TOKENIZER)

    def stems(text: str) -> list[str]:
        found = porter(
            keyword_text(text).encode(),
            apsw.FTS5_TOKENIZE_DOCUMENT,
            None,
            include_offsets=False,
            include_colocated=False,
        )
        return found  # type: ignore[return-value]  # offsets and colocated off: tokens

    return stems


@dataclass
class _Postings:
    slots: npt.NDArray[np.uint32]  # chunks, as slots of _Docs
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


_NO_SLOTS = np.zeros(0, np.uint32)
_NO_FREQ = np.zeros(0, np.uint16)


@dataclass
class _Docs:
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
    def empty(cls, capacity: int) -> _Docs:
        return cls(
            np.zeros(capacity, np.float64),
            np.zeros(capacity, np.bool_),
            np.zeros(capacity, np.int8),
            np.zeros(capacity, np.int32),
            np.zeros(capacity, np.int64),
        )

    def take(self, keep: npt.NDArray[np.intp], capacity: int) -> _Docs:
        """A new _Docs with room for ``capacity`` slots holding the slots ``keep``, in order."""
        new = _Docs.empty(capacity)
        n = len(keep)
        for name in ("length", "alive", "source", "day", "chunk_id"):
            getattr(new, name)[:n] = getattr(self, name)[keep]
        new.used, new.rows, new.tokens = n, self.rows, self.tokens
        new.slot_of = {int(c): s for s, c in enumerate(new.chunk_id[:n]) if new.alive[s]}
        return new


@dataclass
class Postings:
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


def _sliced(
    stems: list[str],
    counts: npt.NDArray[np.int64],
    flat_slots: npt.NDArray[np.uint32],
    flat_f2: npt.NDArray[np.uint16],
    used: int,
    capacity: int,
) -> dict[str, _Postings]:
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
    out: dict[str, _Postings] = {}
    for k, stem in enumerate(stems):
        if is_dense[k]:
            dense = np.zeros(capacity, np.uint8)
            a, b = starts[k], starts[k] + n[k]
            dense[flat_slots[a:b]] = flat_f2[a:b]
            out[stem] = _Postings(_NO_SLOTS, _NO_FREQ, n[k], n[k], dense, top[k])
    # The lists' slices must not keep the dense stems' postings alive: new flat arrays.
    sparse = np.repeat(~np.array(is_dense), counts)
    flat_slots, flat_f2 = flat_slots[sparse], flat_f2[sparse]
    at = 0
    for k, stem in enumerate(stems):
        if not is_dense[k]:
            out[stem] = _Postings(
                flat_slots[at : at + n[k]], flat_f2[at : at + n[k]], n[k], n[k], None, top[k]
            )
            at += n[k]
    return out


class KeywordMirror(StagedMirror[_Op]):
    def __init__(
        self,
        max_bytes: int,
        on_stale: Callable[[], None] = lambda: None,
        stems: Stems | None = None,
        prune_from: int = PRUNE_FROM,
    ) -> None:
        super().__init__(max_bytes, on_stale)
        self.prune_from = prune_from  # chunks (slots) from which ``top`` tries _pruned
        # Writer thread only. Any connection has FTS5's tokenizers: a private one.
        self._stems = stems or fts5_stems(apsw.Connection(":memory:"))
        self._post: dict[str, _Postings] = {}
        self._docs = _Docs.empty(0)
        self._postings = 0  # entries in the arrays (live or dead)
        self._posting_bytes = 0  # the arrays' size, for the budget
        self._dead_postings = 0  # entries of deleted chunks still in the arrays
        self._compactions = 0
        self._pruned_tops = 0  # top answers scored from the rarer words' candidates only
        self._suspended = False  # a bulk sync: nothing followed until the next load
        # (docs, used, avgdl, norm, its minimum): what _norm computed last; readers share it
        self._norm_cache: tuple[_Docs, int, float, npt.NDArray[np.float64], float] | None = None

    # -------------------------------------------------------------- writer side

    def analyze(self, text: str, heading: str) -> tuple[int, dict[str, int]]:
        """(tokens, {stem: doubled weighted frequency}) of a chunk's two columns."""
        t, h = self._stems(text), self._stems(heading)
        freq = {s: int(2 * TEXT_WEIGHT) * c for s, c in Counter(t).items()}
        for s, c in Counter(h).items():
            freq[s] = freq.get(s, 0) + int(2 * HEADING_WEIGHT) * c
        return len(t) + len(h), freq

    def load(self, rows: Iterable[tuple[int, str, str, str, str]], expected: int) -> None:
        """(Re)build from (id, text, heading, source, day) of every chunk. Writer thread.
        ``expected``, the number of chunks, sizes the arrays.

        The postings are gathered as flat arrays, sorted by stem once, and each stem's list
        is a slice of one array (``_sliced``)."""
        self._begin_load()
        self._suspended = False
        if self.max_bytes > 0:
            try:
                built = self._build(rows, expected)
            except Exception:
                with self._lock:
                    self._failed = self._loaded = True  # FTS5 answers: no "loading" for good
                raise
            with self._lock:
                if built is None:
                    self._too_big = True
                else:
                    self._docs, self._post = built
                    self._norm_cache = None
                    self._count_postings()
        with self._lock:
            self._loaded = True

    def _build(
        self, rows: Iterable[tuple[int, str, str, str, str]], expected: int
    ) -> tuple[_Docs, dict[str, _Postings]] | None:
        """What ``analyze`` and ``_add_doc`` gave chunk by chunk, ``_BUILD_CHUNKS`` chunks at
        a time: their tokens in one list, numbered through a dict in C, counted per (stem,
        chunk) by numpy. Stems are numbered by first use, as chunk by chunk would, and the
        size is checked where that did (every ``_CHECK_POSTINGS`` postings), so the copy
        and the over-budget verdict are the same, in 0.6x the CPU (3.8 -> 2.3 s at 30k chunks:
        a dict and a Counter per chunk, a Python loop per posting)."""
        docs = _Docs.empty(expected + expected // 8 + 64)
        number: dict[str, int] = {}  # stem -> its number in the flat arrays
        parts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.uint32], npt.NDArray[np.uint16]]]
        parts = []
        counts = np.zeros(0, np.int64)  # postings by stem number, as of the last check
        pending = 0  # postings since the last check
        uncounted: list[npt.NDArray[np.int32]] = []  # their stem numbers, from earlier batches
        it = iter(rows)
        while batch := list(islice(it, _BUILD_CHUNKS)):
            first = docs.used
            docs, stems, slots, f2, per_doc = self._count_batch(batch, docs, number)
            parts.append((stems, slots, f2))
            # Size checks where chunk by chunk made them: after the chunk that brought the
            # postings since the last check to _CHECK_POSTINGS, and after the last chunk.
            doc_of = slots - np.uint32(first)
            lo = 0  # this batch's chunks from lo on are not counted yet
            for k, n in enumerate(per_doc.tolist()):
                pending += n
                if pending < _CHECK_POSTINGS and first + k + 1 != expected:
                    continue
                pending = 0
                uncounted.append(stems[(doc_of >= lo) & (doc_of <= k)])
                new = np.concatenate(uncounted)
                uncounted, lo = [], k + 1
                seen = max(len(counts), int(new.max(initial=-1)) + 1)  # stems numbered so far
                counts = np.bincount(new, minlength=seen) + np.pad(counts, (0, seen - len(counts)))
                used = first + k + 1
                # A large index that will not fit says so early: no building it up to the
                # budget only to throw it away.
                per_stem = np.minimum(counts * POSTING_BYTES, used)  # sparse or dense
                size = int(per_stem.sum()) + seen * STEM_BYTES
                if used >= 2048 and size * max(expected, used) > self.max_bytes * used:
                    return None
            if lo < len(batch):
                uncounted.append(stems[doc_of >= lo])
        # Long-lived small objects made last, after the load's garbage is gone, so they do not
        # pin its heap pages (malloc_trim can only give back whole free pages).
        docs.slot_of = dict(zip(docs.chunk_id[: docs.used].tolist(), range(docs.used), strict=True))
        if not parts:
            return docs, {}
        flat_stems = np.concatenate([p[0] for p in parts])
        order = np.argsort(flat_stems, kind="stable")  # by stem; slots ascending within one
        flat_slots = np.concatenate([p[1] for p in parts])[order]
        flat_f2 = np.concatenate([p[2] for p in parts])[order]
        del parts, order
        counts = np.bincount(flat_stems, minlength=len(number))
        post = _sliced(list(number), counts, flat_slots, flat_f2, docs.used, len(docs.length))
        size = sum(p.nbytes for p in post.values()) + len(post) * STEM_BYTES
        return None if size + len(docs.length) * SLOT_BYTES > self.max_bytes else (docs, post)

    def _count_batch(
        self,
        batch: list[tuple[int, str, str, str, str]],
        docs: _Docs,
        number: dict[str, int],
    ) -> tuple[
        _Docs,
        npt.NDArray[np.int32],
        npt.NDArray[np.uint32],
        npt.NDArray[np.uint16],
        npt.NDArray[np.int64],
    ]:
        """Add ``batch``'s chunks to ``docs`` (the next slots; new arrays when full) and give
        their postings: (stem number, slot, doubled weighted frequency) ordered by stem, then
        slot, and how many each chunk has. ``number`` gets the new stems, by first use."""
        lengths: list[int] = []  # tokens per column: text, heading, text, heading, ...
        tokens: list[str] = []
        heading_stems: dict[str, list[str]] = {}  # a section's chunks share a heading
        for _, text, heading, _, _ in batch:
            t = self._stems(text)
            h = heading_stems.get(heading)
            if h is None:
                h = heading_stems[heading] = self._stems(heading) if heading else []
            lengths += (len(t), len(h))
            tokens += t
            tokens += h
        ids = list(map(number.get, tokens))
        if None in ids:  # stems not seen before, numbered in the order they come
            for stem in dict.fromkeys(compress(tokens, map(is_, ids, repeat(None)))):
                number[stem] = len(number)
            ids = list(map(number.__getitem__, tokens))
        n = len(batch)
        by_column = np.array(lengths, np.int64)
        length = by_column[0::2] + by_column[1::2]
        # One sort of (stem, chunk, column) keys: a chunk's postings are its runs of equal
        # key // 2, and the low bit says which column (and so which weight) each token is.
        doc = np.repeat(np.arange(n, dtype=np.int64), length)
        column = np.repeat(np.tile(np.array([0, 1], np.int64), n), by_column)
        key = np.sort((np.array(ids, np.int64) * n + doc) * 2 + column)
        weight = _COLUMN_WEIGHTS2[key & 1]
        key >>= 1
        starts = np.flatnonzero(np.diff(key, prepend=-1))
        f2 = np.minimum(np.add.reduceat(weight, starts), 0xFFFF) if len(key) else weight
        key = key[starts]
        first = docs.used
        capacity = len(docs.length)
        while first + n > capacity:  # grown as _add_doc grows it, chunk by chunk
            capacity = max(1024, capacity + capacity // 2)
        if capacity > len(docs.length):
            docs = docs.take(np.arange(first), capacity)
        docs.length[first : first + n] = length
        docs.source[first : first + n] = [SOURCE_CODES.get(r[3], -1) for r in batch]
        docs.day[first : first + n] = [day_number(r[4]) for r in batch]
        docs.chunk_id[first : first + n] = [r[0] for r in batch]
        docs.alive[first : first + n] = True
        docs.used += n
        docs.rows += n
        docs.tokens += int(length.sum())
        return (
            docs,
            (key // n).astype(np.int32),
            (key % n + first).astype(np.uint32),
            f2.astype(np.uint16),
            np.bincount(key % n, minlength=n),
        )

    def _count_postings(self) -> None:
        self._postings = sum(p.n for p in self._post.values())
        self._posting_bytes = sum(p.nbytes for p in self._post.values())
        self._dead_postings = 0

    def export(self) -> Postings | None:
        """The live chunks and their postings as flat arrays (deleted ones dropped, slots
        renumbered), or None when the copy cannot answer. For keyword_sidecar.save."""
        with self._lock:
            if not self.usable:
                return None
            docs = self._docs
            used, rows, tokens = docs.used, docs.rows, docs.tokens
            lists = [(s, p.slots[: p.n], p.freq2[: p.n], p.dense) for s, p in self._post.items()]
            alive = docs.alive[:used].copy()
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

    def adopt(self, saved: Postings) -> None:
        """Load what ``export`` gave (read back by keyword_sidecar.load). Writer thread."""
        self._begin_load()
        self._suspended = False
        n = len(saved.chunk_id)
        docs = _Docs.empty(n + n // 8 + 64)
        for name in ("length", "source", "day", "chunk_id"):
            getattr(docs, name)[:n] = getattr(saved, name)
        docs.alive[:n] = True
        docs.used, docs.rows, docs.tokens = n, saved.rows, saved.tokens
        docs.slot_of = dict(zip(saved.chunk_id.tolist(), range(n), strict=True))
        post = _sliced(saved.stems, saved.counts, saved.slots, saved.freq2, n, len(docs.length))
        with self._lock:
            self._docs, self._post = docs, post
            self._norm_cache = None
            self._count_postings()
            self._too_big = self.bytes() > self.max_bytes
            if self._too_big:
                self._drop()
            self._loaded = True

    def follow(self, conn: apsw.Connection, name: str) -> None:
        """Stage the chunks ``conn`` inserts and deletes, applied when it commits: what the
        FTS5 triggers of schema.py follow (a chunk's text is never updated in place). The
        triggers are TEMP: this connection's own; the schema on disk knows nothing of them."""
        super().follow(conn, name)

        # An exception here would fail the writer's INSERT or DELETE: never let the copy
        # break indexing; a change it could not stage makes it reload after the commit.
        def put(*row: apsw.SQLiteValue) -> None:
            chunk_id, text, heading, source, day = row
            try:
                self.stage_put(
                    int(cast(int, chunk_id)), str(text), str(heading), str(source), str(day)
                )
            except Exception:
                self._stage_missed()

        def delete(*row: apsw.SQLiteValue) -> None:
            chunk_id, text, heading = row
            try:
                self.stage_delete(int(cast(int, chunk_id)), str(text), str(heading))
            except Exception:
                self._stage_missed()

        conn.create_scalar_function(f"{name}_put", put, 5)
        conn.create_scalar_function(f"{name}_del", delete, 3)
        put_new = f"SELECT {name}_put(new.id, new.text, new.heading, new.source, new.day);"
        del_old = f"SELECT {name}_del(old.id, old.text, old.heading);"
        conn.execute(
            f"""
            CREATE TEMP TRIGGER {name}_insert AFTER INSERT ON main.chunks BEGIN {put_new} END;
            CREATE TEMP TRIGGER {name}_delete AFTER DELETE ON main.chunks BEGIN {del_old} END;
            """
        )

    def suspend(self) -> None:
        """Stop following writes until the next ``load`` (FTS5 answers meanwhile). For a bulk
        sync: applying each file's commit to the postings costs more than one load after it
        (a cold index spent 40% of its time here). Writer thread, between transactions."""
        with self._lock:
            self._drop()
            self._loaded = False
            self._suspended = True

    @property
    def suspended(self) -> bool:
        return self._suspended

    def stage_put(self, chunk_id: int, text: str, heading: str, source: str, day: str) -> None:
        if self.max_bytes > 0 and not self._too_big and not self._suspended:
            length, freq = self.analyze(text, heading)
            self._stage([("put", chunk_id, length, freq, source, day)])

    def stage_delete(self, chunk_id: int, text: str, heading: str) -> None:
        if self.max_bytes > 0 and not self._too_big and not self._suspended:
            self._stage([("del", chunk_id, 0, self.analyze(text, heading)[1], "", "")])

    def _drop(self) -> None:
        self._post, self._docs = {}, _Docs.empty(0)
        self._norm_cache = None
        self._postings = self._posting_bytes = self._dead_postings = 0

    def _apply(self, ops: list[_Op]) -> None:
        if self._too_big or self._suspended:
            return
        self._norm_cache = None  # avgdl moves, the slots may move: not worth keeping
        pending: dict[str, tuple[list[int], list[int]]] = {}  # stem -> (slots, freq2)
        for op, chunk_id, length, freq, source, day in ops:
            if op == "del":
                self._flush(pending)  # df counts appended postings only
                self._delete(chunk_id, freq)
            else:
                self._put(chunk_id, length, freq, source, day, pending)
        self._flush(pending)
        if self._dead_postings > 1024 and self._dead_postings * 2 > self._postings:
            self._compact()
        if self.bytes() > self.max_bytes:
            self._too_big = True
            self._drop()

    def _put(
        self,
        chunk_id: int,
        length: int,
        freq: dict[str, int],
        source: str,
        day: str,
        pending: dict[str, tuple[list[int], list[int]]],
    ) -> None:
        docs = self._docs = self._add_doc(self._docs, chunk_id, length, source, day)
        slot = docs.used - 1
        for stem, f2 in freq.items():
            slots, f2s = pending.setdefault(stem, ([], []))
            slots.append(slot)
            f2s.append(min(f2, 0xFFFF))

    @staticmethod
    def _add_doc(docs: _Docs, chunk_id: int, length: int, source: str, day: str) -> _Docs:
        """Give the chunk the next slot; returns the _Docs now in use (new arrays when full:
        readers may hold the old ones)."""
        if chunk_id in docs.slot_of:  # the triggers delete first: the copy is off
            raise ValueError(f"chunk {chunk_id} is already in the keyword mirror")
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

    def _delete(self, chunk_id: int, freq: dict[str, int]) -> None:
        docs = self._docs
        slot = docs.slot_of.pop(chunk_id, None)
        if slot is None:
            return
        docs.alive[slot] = False
        docs.rows -= 1
        docs.tokens -= int(docs.length[slot])
        for stem in freq:
            p = self._post.get(stem)
            if p is not None:
                p.df -= 1
        self._dead_postings += len(freq)

    def _flush(self, pending: dict[str, tuple[list[int], list[int]]]) -> None:
        for stem, (slots, f2) in pending.items():
            self._append(stem, slots, f2)
        pending.clear()

    def _append(self, stem: str, slots: list[int], f2: list[int]) -> None:
        p = self._post.get(stem)
        k = len(slots)
        self._postings += k
        if p is not None and (dense := p.dense) is not None:
            if max(f2) > 0xFF:  # a frequency a byte cannot hold: back to a list
                nz = np.flatnonzero(dense).astype(np.uint32)
                self._posting_bytes -= p.nbytes
                p = self._post[stem] = _Postings(
                    nz, dense[nz].astype(np.uint16), len(nz), p.df, None, p.top_f2
                )
                self._posting_bytes += p.nbytes
            else:
                if slots[-1] >= len(dense):  # slots ascend; new array: readers hold the old
                    grown = np.zeros(max(slots[-1] + 1, len(self._docs.length)), np.uint8)
                    grown[: len(dense)] = dense
                    self._posting_bytes += len(grown) - len(dense)
                    dense = grown
                    p = self._post[stem] = _Postings(
                        _NO_SLOTS, _NO_FREQ, p.n, p.df, dense, p.top_f2
                    )
                dense[slots] = f2  # new slots only: past what any reader scores
                p.top_f2 = max(p.top_f2, max(f2))
                p.n += k
                p.df += k
                return
        if p is None:
            p = self._post[stem] = _Postings(
                np.empty(k, np.uint32), np.empty(k, np.uint16), top_f2=0
            )
            self._posting_bytes += p.nbytes
        elif p.n + k > len(p.slots):  # new arrays: readers may hold the old ones
            cap = max(p.n + k, p.n + p.n // 2, 4)
            slots_new = np.empty(cap, np.uint32)
            f2_new = np.empty(cap, np.uint16)
            slots_new[: p.n], f2_new[: p.n] = p.slots[: p.n], p.freq2[: p.n]
            self._posting_bytes += (cap - len(p.slots)) * POSTING_BYTES
            p = self._post[stem] = _Postings(slots_new, f2_new, p.n, p.df, None, p.top_f2)
        p.slots[p.n : p.n + k] = slots
        p.freq2[p.n : p.n + k] = f2
        p.top_f2 = max(p.top_f2, max(f2))
        p.n += k  # after the data: a reader that sees the count sees the entries
        p.df += k

    def _compact(self) -> None:
        """Drop the deleted chunks' postings and slots: new arrays throughout."""
        docs = self._docs
        live = np.flatnonzero(docs.alive[: docs.used])
        renumber = np.zeros(max(docs.used, 1), np.uint32)
        renumber[live] = np.arange(len(live), dtype=np.uint32)
        capacity = max(1024, len(live) + len(live) // 2)
        post: dict[str, _Postings] = {}
        for stem, p in self._post.items():
            if p.dense is not None:
                by_slot = np.zeros(docs.used, np.uint8)
                m = min(len(p.dense), docs.used)
                by_slot[:m] = p.dense[:m]
                kept = by_slot[live]
                n = int(np.count_nonzero(kept))
                if n:
                    dense = np.zeros(capacity, np.uint8)
                    dense[: len(live)] = kept
                    post[stem] = _Postings(_NO_SLOTS, _NO_FREQ, n, p.df, dense, p.top_f2)
                continue
            keep = docs.alive[p.slots[: p.n]]
            n = int(np.count_nonzero(keep))
            if n:
                post[stem] = _Postings(
                    renumber[p.slots[: p.n][keep]], p.freq2[: p.n][keep], n, p.df, None, p.top_f2
                )
        self._post = post
        self._count_postings()
        self._compactions += 1
        self._docs = docs.take(live, capacity)

    # -------------------------------------------------------------- reader side

    def bytes(self) -> int:
        return (
            self._posting_bytes + len(self._post) * STEM_BYTES + len(self._docs.length) * SLOT_BYTES
        )

    def stats(self) -> dict[str, int | bool]:
        with self._lock:
            return {
                "loaded": self._loaded,
                "over_budget": self._too_big,
                "chunks": self._docs.rows,
                "stems": len(self._post),
                "dead_postings": self._dead_postings,
                "compactions": self._compactions,
                "pruned_tops": self._pruned_tops,
                "bytes": self.bytes() if self.usable else 0,
            }

    @property
    def scan(self) -> str:
        """Where BM25 runs: "memory", "fts5", or "loading" (FTS5 until the copy is built)."""
        if self.usable:
            return "memory"
        return "loading" if self.max_bytes > 0 and not self._loaded else "fts5"

    def doc_freqs(self, stems: Sequence[str]) -> tuple[int, dict[str, int]] | None:
        """(live chunks, chunks containing each stem); None when the copy cannot answer."""
        with self._lock:
            if not self.usable:
                return None
            return self._docs.rows, {
                s: (p.df if (p := self._post.get(s)) is not None else 0) for s in stems
            }

    def _norm(self, docs: _Docs, used: int, avgdl: float) -> tuple[npt.NDArray[np.float64], float]:
        """Per slot, ``k1 * (1 - b + b * D / avgdl)``: BM25's length normalisation, the same
        for every term until a write changes avgdl, so kept between searches (with its
        minimum). Element by element the same doubles as computing it per posting."""
        cached = self._norm_cache
        if cached is not None and cached[0] is docs and cached[1] == used and cached[2] == avgdl:
            return cached[3], cached[4]
        norm = K1 * (1 - B + B * docs.length[:used] / avgdl)
        low = float(norm.min()) if used else 0.0
        self._norm_cache = (docs, used, avgdl, norm, low)
        return norm, low

    def top(
        self,
        term_stems: Sequence[str],
        limit: int,
        sources: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[tuple[int, float]] | None:
        """What ``SELECT rowid, -bm25(chunks_fts, 1.0, 0.5) ... MATCH '"t1" OR "t2" ...'
        ORDER BY 2 DESC LIMIT limit`` answers, one stem per query term (in query order,
        repeats kept: FTS5 scores each phrase); ties by id. None when the copy cannot answer.

        Most chunks an OR query of common words matches cannot reach its top: they hold
        only the common words, whose IDF is small. ``bm25.pruned`` finds a candidate set that
        holds the whole top from the rarer words' postings alone (MaxScore), so only those
        candidates are scored; otherwise every posting is."""
        with self._lock:
            if not self.usable:
                return None
            docs = self._docs
            used, rows, tokens = docs.used, docs.rows, docs.tokens
            lists = [
                Term(p.slots[: p.n], p.freq2[: p.n], p.dense, p.top_f2, idf(rows, p.df))
                for s in term_stems
                if (p := self._post.get(s)) is not None and p.n
            ]
        if rows == 0 or not lists or limit <= 0:
            return []
        avgdl = float(tokens) / float(rows)
        norm, norm_low = self._norm(docs, used, avgdl)
        day_range = (
            (day_number(since) if since else None, day_number(until) if until else None)
            if since or until
            else None
        )
        codes = None if sources is None else [SOURCE_CODES[s] for s in sources if s in SOURCE_CODES]

        def accepted(hit: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
            keep = docs.alive[hit]
            if codes is not None:
                keep &= np.isin(docs.source[hit], codes)
            if day_range is not None:
                days = docs.day[hit]
                keep &= days != NO_DAY
                if day_range[0] is not None:
                    keep &= days >= day_range[0]
                if day_range[1] is not None:
                    keep &= days <= day_range[1]
            return hit[keep]

        with SCRATCH.borrow() as sc:
            hit = None
            if used >= self.prune_from:
                hit = pruned(lists, norm, norm_low, used, limit, accepted, sc)
            if hit is not None:
                self._pruned_tops += 1
                score = scores_of(lists, norm, hit, used, sc)
            else:
                hit, score = scored_all(lists, norm, used, accepted, sc)
        if len(hit) > limit:  # all that tie with the last place, then ties go by id
            last = -np.partition(-score, limit - 1)[limit - 1]
            tied = score >= last
            hit, score = hit[tied], score[tied]
        ids = docs.chunk_id[hit]
        order = np.lexsort((ids, -score))[:limit]
        return list(zip(ids[order].tolist(), score[order].tolist(), strict=True))
