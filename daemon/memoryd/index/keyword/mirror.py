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

How the copy follows commits is in staged.py. Readers never block on the writer: postings
are only appended past the count a reader saw, and growing builds new arrays. A deleted
chunk's postings stay until compaction; its ``alive`` flag hides them. When the postings
would take more than ``max_bytes``, or while loading, ``top`` answers None and the caller
asks FTS5.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from math import log
from typing import TYPE_CHECKING, cast

import apsw

from memoryd.index.keyword.bm25 import (
    K1,
    MIN_IDF,
    B,
    pruned,
    ranked,
    scored_all,
    scored_top,
    scores_of,
    term_of,
)
from memoryd.index.keyword.build import (
    POSTING_BYTES,
    SLOT_BYTES,
    STEM_BYTES,
    Build,
    Docs,
    Postings,
    StemPostings,
    Stream,
    compacted,
    flat_postings,
    kept,
    no_freq,
    no_slots,
    sliced,
)
from memoryd.index.keyword.counts import (
    HEADING_WEIGHT,
    TEXT_WEIGHT,
    Counted,
    Stems,
    count_chunks,
    fts5_stems,
)
from memoryd.index.row_codes import SOURCE_CODES, day_number
from memoryd.index.scratch import SCRATCH
from memoryd.index.staged import StagedMirror
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    import numpy.typing as npt

_BUILD_CHUNKS = 512  # chunks counted at a time by a load
_CHECK_POSTINGS = 1 << 14  # a load checks its projected size every this many postings
# Below this many chunks scoring every posting takes ~0.1 ms: MaxScore's bookkeeping would
# cost more than it saves.
PRUNE_FROM = 16_384

# ("put", id, length, {stem: doubled frequency}, source, day) | ("del", id, 0, {...}, "", "")
_Op = tuple[str, int, int, dict[str, int], str, str]


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
        self._post: dict[str, StemPostings] = {}
        # None until the copy is loaded or followed: a start answers its first question
        # before numpy is imported (runtime/lazy_numpy.py), and an empty Docs is arrays.
        self._docs: Docs | None = None
        self._postings = 0  # entries in the arrays (live or dead)
        self._posting_bytes = 0  # the arrays' size, for the budget
        self._dead_postings = 0  # entries of deleted chunks still in the arrays
        self._compactions = 0
        self._pruned_tops = 0  # top answers scored from the rarer words' candidates only
        self._suspended = False  # a bulk sync: nothing followed until the next load
        self._stream: Stream | None = None  # a bulk sync's copy, built as it commits
        # (docs, used, avgdl, norm, its minimum): what _norm computed last; readers share it
        self._norm_cache: tuple[Docs, int, float, npt.NDArray[np.float64], float] | None = None

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
        is a slice of one array (``sliced``)."""
        self._begin_load()
        self._suspended, self._stream = False, None
        if self.max_bytes > 0:
            try:
                built = self._build(rows, expected)
            except Exception:
                with self._lock:
                    self._failed = self._loaded = True  # FTS5 answers: no "loading" for good
                raise
            with self._lock:
                self._install(built)
        with self._lock:
            self._loaded = True

    def _install(self, built: tuple[Docs, dict[str, StemPostings]] | None) -> None:
        """What a build gave (None: over budget); called with the lock held."""
        if built is None:
            self._too_big = True
        else:
            self._docs, self._post = built
            self._norm_cache = None
            self._count_postings()

    def _build(
        self, rows: Iterable[tuple[int, str, str, str, str]], expected: int
    ) -> tuple[Docs, dict[str, StemPostings]] | None:
        """What ``analyze`` and ``Docs.add`` gave chunk by chunk, counted ``_BUILD_CHUNKS``
        chunks at a time (counts.py) and merged (build.Build). The size is
        checked where chunk by chunk did (every ``_CHECK_POSTINGS`` postings), so the copy
        and the over-budget verdict are the same, in 0.6x the CPU (3.8 -> 2.3 s at 30k)."""
        build = Build(expected)
        pending = 0  # postings since the last check
        it = iter(rows)
        while batch := list(islice(it, _BUILD_CHUNKS)):
            counted = count_chunks([(r[1], r[2]) for r in batch], self._stems)
            first = build.docs.used
            stems = build.add(
                counted, [r[0] for r in batch], [r[3] for r in batch], [r[4] for r in batch]
            )
            # Size checks where chunk by chunk made them: after the chunk that brought the
            # postings since the last check to _CHECK_POSTINGS, and after the last chunk.
            doc_of = counted.chunk
            lo = 0  # this batch's chunks from lo on are not counted yet
            for k, n in enumerate(counted.per_chunk().tolist()):
                pending += n
                if pending < _CHECK_POSTINGS and first + k + 1 != expected:
                    continue
                pending = 0
                build.uncounted.append(stems[(doc_of >= lo) & (doc_of <= k)])
                lo = k + 1
                # A large index that will not fit says so early: no building it up to the
                # budget only to throw it away.
                used = first + k + 1
                if used >= 2048 and build.size(used) * max(expected, used) > self.max_bytes * used:
                    return None
            if lo < len(batch):
                build.uncounted.append(stems[doc_of >= lo])
        return build.finish(self.max_bytes)

    def _count_postings(self) -> None:
        self._postings = sum(p.n for p in self._post.values())
        self._posting_bytes = sum(p.nbytes for p in self._post.values())
        self._dead_postings = 0

    def export(self) -> Postings | None:
        """The live chunks and their postings as flat arrays (deleted ones dropped, slots
        renumbered), or None when the copy cannot answer. For sidecar.save."""
        with self._lock:
            docs = self._docs
            if docs is None or not self.usable:
                return None
            used, rows, tokens = docs.used, docs.rows, docs.tokens
            lists = [(s, p.slots[: p.n], p.freq2[: p.n], p.dense) for s, p in self._post.items()]
            alive = docs.alive[:used].copy()
        return flat_postings(docs, rows, tokens, lists, alive, used)

    def adopt(self, saved: Postings) -> None:
        """Load what ``export`` gave (read back by sidecar.load). Writer thread."""
        self._begin_load()
        self._suspended, self._stream = False, None
        n = len(saved.chunk_id)
        docs = Docs.empty(n + n // 8 + 64)
        for name in ("length", "source", "day", "chunk_id"):
            getattr(docs, name)[:n] = getattr(saved, name)
        docs.alive[:n] = True
        docs.used, docs.rows, docs.tokens = n, saved.rows, saved.tokens
        docs.slot_of = dict(zip(saved.chunk_id.tolist(), range(n), strict=True))
        post = sliced(saved.stems, saved.counts, saved.slots, saved.freq2, n, len(docs.length))
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
            self._suspended, self._stream = True, None

    @property
    def suspended(self) -> bool:
        return self._suspended

    def stream(self) -> None:
        """While suspended, on an empty index: build the copy as the writes commit
        (build.Stream), and ``finish_stream`` installs it. Writer thread."""
        if self._suspended and self.max_bytes > 0:
            self._stream = Stream(self._stems, self.max_bytes)

    def expect(self, chunks: list[tuple[str, str]], counted: Counted) -> None:
        """A streamed sync staged rows of these (text, heading) chunks, counted already."""
        if self._stream is not None:
            self._stream.expect(chunks, counted)

    def finish_stream(self) -> str | None:
        """Install what the stream built: None when done, else why not ("" when nothing
        streamed); the caller then loads the copy from the chunks. Writer thread, after the
        sync."""
        stream, self._stream = self._stream, None
        if stream is None or stream.broken is not None:
            return "" if stream is None else stream.broken
        built = stream.finish()
        self._begin_load()
        self._suspended = False
        with self._lock:
            self._install(built)
            self._loaded = True
        return None

    def stage_put(self, chunk_id: int, text: str, heading: str, source: str, day: str) -> None:
        if self._stream is not None:
            self._stream.stage((chunk_id, text, heading, source, day))
        elif self.max_bytes > 0 and not self._too_big and not self._suspended:
            length, freq = self.analyze(text, heading)
            self._stage([("put", chunk_id, length, freq, source, day)])

    def stage_delete(self, chunk_id: int, text: str, heading: str) -> None:
        if self._stream is not None:
            self._stream.fail("a chunk was deleted")
        elif self.max_bytes > 0 and not self._too_big and not self._suspended:
            self._stage([("del", chunk_id, 0, self.analyze(text, heading)[1], "", "")])

    def _stage_missed(self) -> None:
        if self._stream is not None:
            self._stream.fail("a change could not be followed")
        else:
            super()._stage_missed()

    def commit(self) -> bool:
        if self._stream is not None:
            self._stream.apply()
        return super().commit()

    def rollback(self) -> None:
        if self._stream is not None:
            self._stream.fail("a transaction rolled back")
        super().rollback()

    def _drop(self) -> None:
        self._post, self._docs = {}, None
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
        docs = self._docs = (self._docs or Docs.empty(0)).add(chunk_id, length, source, day)
        slot = docs.used - 1
        for stem, f2 in freq.items():
            slots, f2s = pending.setdefault(stem, ([], []))
            slots.append(slot)
            f2s.append(min(f2, 0xFFFF))

    def _delete(self, chunk_id: int, freq: dict[str, int]) -> None:
        docs = self._docs
        slot = None if docs is None else docs.slot_of.pop(chunk_id, None)
        if docs is None or slot is None:
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
                p = self._post[stem] = StemPostings(
                    nz, dense[nz].astype(np.uint16), len(nz), p.df, None, p.top_f2
                )
                self._posting_bytes += p.nbytes
            else:
                if slots[-1] >= len(dense):  # slots ascend; new array: readers hold the old
                    capacity = 0 if self._docs is None else len(self._docs.length)
                    grown = np.zeros(max(slots[-1] + 1, capacity), np.uint8)
                    grown[: len(dense)] = dense
                    self._posting_bytes += len(grown) - len(dense)
                    dense = grown
                    p = self._post[stem] = StemPostings(
                        no_slots(), no_freq(), p.n, p.df, dense, p.top_f2
                    )
                dense[slots] = f2  # new slots only: past what any reader scores
                p.top_f2 = max(p.top_f2, max(f2))
                p.n += k
                p.df += k
                return
        if p is None:
            p = self._post[stem] = StemPostings(
                np.empty(k, np.uint32), np.empty(k, np.uint16), top_f2=0
            )
            self._posting_bytes += p.nbytes
        elif p.n + k > len(p.slots):  # new arrays: readers may hold the old ones
            cap = max(p.n + k, p.n + p.n // 2, 4)
            slots_new = np.empty(cap, np.uint32)
            f2_new = np.empty(cap, np.uint16)
            slots_new[: p.n], f2_new[: p.n] = p.slots[: p.n], p.freq2[: p.n]
            self._posting_bytes += (cap - len(p.slots)) * POSTING_BYTES
            p = self._post[stem] = StemPostings(slots_new, f2_new, p.n, p.df, None, p.top_f2)
        p.slots[p.n : p.n + k] = slots
        p.freq2[p.n : p.n + k] = f2
        p.top_f2 = max(p.top_f2, max(f2))
        p.n += k  # after the data: a reader that sees the count sees the entries
        p.df += k

    def _compact(self) -> None:
        """Drop the deleted chunks' postings and slots: new arrays throughout."""
        docs = self._docs
        if docs is None:
            return
        self._post, docs = compacted(self._post, docs)
        self._count_postings()
        self._compactions += 1
        self._docs = docs

    # -------------------------------------------------------------- reader side

    def bytes(self) -> int:
        return (
            self._posting_bytes
            + len(self._post) * STEM_BYTES
            + (0 if self._docs is None else len(self._docs.length) * SLOT_BYTES)
        )

    def stats(self) -> dict[str, int | bool]:
        with self._lock:
            return {
                "loaded": self._loaded,
                "over_budget": self._too_big,
                "chunks": 0 if self._docs is None else self._docs.rows,
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

    def docs_now(self) -> Docs | None:
        """The chunks' columns as a reader takes them (see the top); None: cannot answer."""
        with self._lock:
            return self._docs if self.usable else None

    def doc_freqs(self, stems: Sequence[str]) -> tuple[int, dict[str, int]] | None:
        """(live chunks, chunks containing each stem); None when the copy cannot answer."""
        with self._lock:
            docs = self._docs
            if docs is None or not self.usable:
                return None
            return docs.rows, {
                s: (p.df if (p := self._post.get(s)) is not None else 0) for s in stems
            }

    def _norm(self, docs: Docs, used: int, avgdl: float) -> tuple[npt.NDArray[np.float64], float]:
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
            docs = self._docs
            if docs is None or not self.usable:
                return None
            used, rows, tokens = docs.used, docs.rows, docs.tokens
            # Each term's arrays and count as they are now (writers append past the count):
            # bm25.term_of slices them, the compiled top reads the count (no numpy slice).
            taken = []
            for s in term_stems:
                p = self._post.get(s)
                if p is not None and p.n:
                    w = log((rows - p.df + 0.5) / (p.df + 0.5))  # bm25.idf's, not a call a term
                    w = MIN_IDF if w <= 0.0 else w
                    taken.append((p.slots, p.freq2, p.dense, p.top_f2, w, p.n))
        if rows == 0 or not taken or limit <= 0:
            return []
        avgdl = float(tokens) / float(rows)
        norm, norm_low = self._norm(docs, used, avgdl)
        day_range = (
            (day_number(since) if since else None, day_number(until) if until else None)
            if since or until
            else None
        )
        codes = None if sources is None else [SOURCE_CODES[s] for s in sources if s in SOURCE_CODES]
        if used < self.prune_from:  # no short cut worth its bookkeeping: every posting scored
            keep = kept(lambda column: column[:used], docs, codes, day_range)
            return scored_top(taken, norm, keep, docs.chunk_id[:used], limit)
        lists = [term_of(t) for t in taken]

        def accepted(hit: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
            return hit[kept(lambda column: column[hit], docs, codes, day_range)]

        def accepted_below(n: int) -> npt.NDArray[np.bool_]:
            return kept(lambda column: column[:n], docs, codes, day_range)

        with SCRATCH.borrow() as sc:
            hit = pruned(lists, norm, norm_low, used, limit, accepted, sc)
            if hit is not None:
                self._pruned_tops += 1
                score = scores_of(lists, norm, hit, used, sc)
            else:
                hit, score = scored_all(lists, norm, used, accepted, sc, accepted_below)
        return ranked(hit, score, docs.chunk_id, limit)
