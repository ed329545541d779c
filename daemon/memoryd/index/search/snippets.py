"""Line-level matching: which lines of a chunk match the query, and the snippet around them.

Lines are scored by the IDF of the query's stems they contain, stemmed by the same FTS5
porter tokenizer as the index (apsw exposes it); one tokenizer call per chunk, with byte
offsets mapped to lines. The scores serve twice: the best line's share of the query's IDF
is a ranking signal (evidence in a log is usually one line), and the best-scoring window of
whole lines within the budget is the snippet. A chunk's head would hide the matching line
in most chunks of a daily log.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memoryd.files.annotations import strip_annotations
from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why
else:
    from memoryd.named_tuple import NamedTuple

try:  # _compiled_lines.c: the same results for a fraction of the instructions; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - installs without a compiler
    compiled = None  # type: ignore[assignment]

TAIL_WEIGHT = 0.5  # share of the last line's score a window loses when more lines follow
# Budget left over after the window's whole lines shows the head of the line that follows
# (cut at a space, ending in "…") when at least this many characters of it fit: the answer
# after a matched question, the details after a heading. Fewer would show little but a label.
MIN_PARTIAL = 60
# The window shows the chunk's best line (or one within this share of it): evidence in a log
# is usually one line, and a run of weaker matches must not hide it. Without this, 9 of
# LoCoMo dev's snippet misses were windows that left out their chunk's best line; held out
# by conversation (fit on four, test on the fifth: 1.0 / .9 / .75 / .5) snip@5 .859 -> .863.
BEST_SHARE = 0.9
SPLITS_KEPT = 1024  # chunks whose lines are kept for their snippets (~3 KB each)

Cand = TypeVar("Cand")  # a search's candidate: its id, text and lines are read and set


class Snippet(NamedTuple):
    """A hit's snippet (a tuple: one per hit, cheaper to make than a frozen dataclass)."""

    text: str
    start_line: int
    end_line: int


# tuple's __new__ makes a Snippet without the Python __new__ a NamedTuple has (ten a search)
_new_snippet: Callable[[type[Snippet], tuple[str, int, int]], Snippet] = tuple.__new__


class ChunkLines(NamedTuple):
    """A chunk's distinct (stem, line) pairs, as numbers: two flat int32 runs (~2 KB a
    chunk), by stem, then line. A query's few stems are then a few runs of entries (found
    by binary search: the compiled line scores read only those), and each line still meets
    its stems in ascending order, as a line-by-line layout would give them."""

    # Views ('i', native int32) of ``entries``: plain buffers, so that a first search makes
    # them without numpy (runtime/lazy_numpy.py); py_line_scores reads them as arrays.
    stems: memoryview  # the stem number of each entry, ascending
    line: memoryview  # the 0-based line of each entry (ascending within a stem)
    n_lines: int
    vocab: dict[str, int]  # the numbering: stem -> number (LineStems renews it when full)
    # ``stems`` then ``line`` (native int32), the bytes those two views read: what the
    # compiled line scores read (a bytes object is read for a fraction of an array's cost)
    entries: bytes


class LineStems:
    """An LRU of chunks' per-line stems. Tokenizing is most of a search's Python time, and
    the same chunks come back across searches; a chunk's text never changes under its key.

    Stems are numbered as chunks are tokenized. A daemon that runs for months meets new
    words forever, so past ``max_stems`` (~100 bytes each; the cached chunks of a large
    English workspace hold a few tens of thousands) a new numbering starts with an empty
    cache; chunks still in use keep the numbering they were made with (ChunkLines.vocab)."""

    def __init__(self, capacity: int = 4096, max_stems: int = 1 << 16) -> None:
        self.capacity = capacity
        self.max_stems = max_stems
        self._lock = threading.Lock()
        # chunk id -> (hash of its text, its lines): ids can be reused after a delete, and
        # the text's hash tells the new chunk apart (an int key: cheaper than (id, hash))
        self._items: dict[int, tuple[int, ChunkLines]] = {}
        # Each chunk's last use (a tick): the least recently used eighth goes at once past
        # capacity. The compiled peek sets a tick where an OrderedDict's move_to_end was a
        # method call (a third of a peek, ~40 a keyword search).
        self._used_at: dict[int, int] = {}
        self._tick = 0
        self._vocab: dict[str, int] = {}

    def peek(self, chunk_id: int, text: str) -> ChunkLines | None:
        """The cached lines of this chunk (this text), or None."""
        return self.peek_many([(chunk_id, text)])[0]

    def peek_many(self, chunks: Sequence[tuple[int, str]]) -> list[ChunkLines | None]:
        """peek() for each (chunk id, text), under one lock."""
        out: list[ChunkLines | None] = []
        with self._lock:
            items, used_at = self._items, self._used_at
            for chunk_id, text in chunks:
                found = items.get(chunk_id)
                if found is not None and found[0] == hash(text):
                    used_at[chunk_id] = self._tick
                    self._tick += 1
                    out.append(found[1])
                else:
                    out.append(None)
        return out

    def score_cached(
        self,
        cands: list[Cand],
        weights: Mapping[str, float],
        timed: tuple[Callable[[str], Sequence[bool]], float] | None = None,
    ) -> list[Cand] | None:
        """line_scores of the candidates whose lines are cached (peek_many of each one's id
        and text), set as their ``lines``, in one compiled pass; the candidates so scored.
        ``timed``: (focus.timed_lines, 1 + focus.WHEN_BOOST) for a question asking when, the
        scores then refocused as focus.refocus does. None, having set nothing, without the
        compiled part or when a chunk's numbering is not the current one (peek_many and
        line_scores then do it)."""
        if compiled is None:
            return None
        with self._lock:
            vocab = self._vocab
            numbers, ws = _numbered(weights, vocab)
            lru = self._lent(len(cands))
            return compiled.cached_line_scores(lru, cands, numbers, ws, vocab, *timed or ())

    def keyword_hits(
        self,
        ids: list[int],
        rows: Mapping[int, tuple[Any, ...]],
        uses: tuple[dict[int, int], int] | None,
        bm25: dict[int, float] | list[tuple[int, float]],
        sources: tuple[str, ...],
        weights: Mapping[str, float],
        timed: tuple[Callable[[str], Sequence[bool]], float] | None,
        fusing: tuple[float, float, float, float, float, float],
        keep: int,
        show: tuple[Any, ...],
        dating: tuple[Any, ...] | None = None,
    ) -> list[Any] | None:
        """A keyword search's hits in one compiled pass (_compiled_top.c: the candidates of
        ``ids`` whose row is found and whose source is among ``sources``, score_cached's
        lines, fuse's weighted top, shown as shown.shown_hits shows it, _compiled_hits.c):
        the hits themselves (no line meta), no candidate made. ``fusing``: (the query's IDF
        total, and fuse's weights). ``show``: (hit type, min score, snippet budget,
        text_lines, whole_lines, shown_text, make_snippet of (text, start, end, scores),
        (the sessions source, the curated files, the three tiers)). ``uses``: None, or
        Kept.lend's (``rows`` its map: each row read there used). None, having made
        nothing, without the compiled part, when a chunk whose lines are not cached could
        reach the top or its lines are in another numbering, or a row is not in a lent map
        (the caller then goes the long way). ``dating``: None, or fuse's date signal and a
        range-only adjust (fusion.dating_of)."""
        if compiled is None:
            return None
        with self._lock:
            vocab = self._vocab
            numbers, ws = _numbered(weights, vocab)
            lines = (self._lent(len(ids)), numbers, ws, vocab, *(timed or (None, 1.0)))
            hits = compiled.keyword_hits
            return hits(ids, rows, uses, bm25, sources, lines, fusing, keep, show, dating)

    def clear(self) -> None:
        """No chunk's lines and a new numbering (a forget: none of its lines' stems stays
        here). A ChunkLines in use keeps the numbering it was made with, as past max_stems."""
        with self._lock:
            self._vocab = {}
            self._items.clear()
            self._used_at.clear()

    def _lent(self, n: int) -> tuple[dict[int, tuple[int, ChunkLines]], dict[int, int], int]:
        """(the chunks, their uses, the first of ``n`` ticks) for the compiled peeks, each
        found chunk's use a tick of the run, in order (the lock held)."""
        tick = self._tick
        self._tick += n
        return self._items, self._used_at, tick

    def get(self, chunk_id: int, text: str, tokenize: TokenizeOffsets) -> ChunkLines:
        found = self.peek(chunk_id, text)
        if found is not None:
            return found
        found = self._tokenize_lines(text, tokenize)
        with self._lock:
            items, used_at = self._items, self._used_at
            items[chunk_id] = (hash(text), found)  # a reused id's new text too
            used_at[chunk_id] = self._tick
            self._tick += 1
            if len(items) > self.capacity:  # the least recently used eighth
                room = self.capacity - self.capacity // 8
                for old in sorted(used_at, key=used_at.__getitem__)[: len(items) - room]:
                    del items[old], used_at[old]
        return found

    def _tokenize_lines(self, text: str, tokenize: TokenizeOffsets) -> ChunkLines:
        """One tokenizer call for the whole chunk; byte offsets mapped to lines."""
        n_lines = text.count("\n") + 1
        raw = text.encode("utf-8", "replace")
        starts = [0]
        pos = raw.find(b"\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = raw.find(b"\n", pos + 1)
        found = tokenize(raw)
        shift = n_lines.bit_length()
        mask = (1 << shift) - 1
        with self._lock:
            if len(self._vocab) > self.max_stems:
                self._vocab = {}
                self._items.clear()
                self._used_at.clear()
            vocab = self._vocab
            # Each distinct (stem, line) as one int, stem << shift | line (line < 2**shift):
            # ints sort as those pairs do, several times faster than the tuples (a first
            # search tokenizes its ~40 candidates: issue 38).
            number, line_of = vocab.setdefault, bisect.bisect_right
            keys = sorted(
                {
                    number(stem, len(vocab)) << shift | (line_of(starts, start) - 1)
                    for start, _end, stem in found
                }
            )
        n = len(keys)
        # native int32s, as array("i") lays them out (~4x faster than one from a list)
        entries = struct.pack(f"{2 * n}i", *[k >> shift for k in keys], *[k & mask for k in keys])
        view = memoryview(entries).cast("i")
        return ChunkLines(view[:n], view[n:], n_lines, vocab, entries)


def _numbered(weights: Mapping[str, float], vocab: dict[str, int]) -> tuple[list[int], list[float]]:
    """The query's stems numbered (those ``vocab`` has), ascending, and their weights."""
    query = sorted((n, w) for s, w in weights.items() if (n := vocab.get(s)) is not None)
    return [n for n, _ in query], [w for _, w in query]


def line_scores(chunks: Sequence[ChunkLines], weights: Mapping[str, float]) -> list[list[float]]:
    """Per chunk, per line: the summed weight of the distinct query stems the line holds.
    One numpy pass over all the chunks (a Python loop over every line cost ~6 µs a chunk).

    Only the entries of a query stem are summed (a few in a hundred): each line's weights
    are added in the order of its entries, from 0.0, as a bincount over every entry (the
    others adding 0.0) would, so the same doubles."""
    if not chunks:
        return []
    vocab = chunks[0].vocab
    query = sorted((n, w) for s, w in weights.items() if (n := vocab.get(s)) is not None)
    if compiled is not None and query:  # None: another numbering among them (below)
        numbers, ws = [n for n, _ in query], [w for _, w in query]
        if (found := compiled.line_scores(chunks, numbers, ws, vocab)) is not None:
            return found
    if any(c.vocab is not vocab for c in chunks):  # a numbering renewed mid-search
        return [line_scores([c], weights)[0] for c in chunks]
    sizes = [c.n_lines for c in chunks]
    if not query:
        return [[0.0] * size for size in sizes]
    return py_line_scores(chunks, query, sizes)


def py_line_scores(
    chunks: Sequence[ChunkLines], query: Sequence[tuple[int, float]], sizes: Sequence[int]
) -> list[list[float]]:
    """line_scores in numpy, for ``query`` (stem number, weight) ascending."""
    stems = np.concatenate([c.stems for c in chunks])
    numbers = np.array([n for n, _ in query], np.int32)
    mask = stems == numbers[0]  # a few SIMD passes: cheaper than np.isin's table
    for number in numbers[1:]:
        mask |= stems == number
    hit = np.flatnonzero(mask)
    line_starts = np.cumsum([0, *sizes])
    if len(hit):
        entry_ends = np.cumsum([len(c.stems) for c in chunks])
        chunk = np.searchsorted(entry_ends, hit, side="right")
        line = np.concatenate([c.line for c in chunks])[hit] + line_starts[chunk]
        weight = np.array([w for _, w in query])[np.searchsorted(numbers, stems[hit])]
        flat = np.bincount(line, weights=weight, minlength=int(line_starts[-1])).tolist()
    else:
        flat = [0.0] * int(line_starts[-1])
    bounds = line_starts.tolist()
    return [flat[a:b] for a, b in itertools.pairwise(bounds)]


def best_window(lines: Sequence[str], scores: Sequence[float], budget: int) -> tuple[int, int]:
    """Inclusive (first, last) line indexes of the best-scoring run of lines within budget
    that holds a line scoring at least BEST_SHARE of the best line's score."""
    if compiled is not None:
        return compiled.best_window(lines, scores, budget)
    return py_best_window(lines, scores, budget)


def py_best_window(lines: Sequence[str], scores: Sequence[float], budget: int) -> tuple[int, int]:
    """best_window in Python (_compiled_lines.c follows it statement for statement)."""
    n = len(lines)
    sizes = [len(line) + 1 for line in lines]
    floor = BEST_SHARE * max(scores, default=0.0)
    strong_from = [n] * (n + 1)  # the first line from i on that is strong enough
    for k in range(n - 1, -1, -1):
        strong_from[k] = k if scores[k] >= floor else strong_from[k + 1]
    best = (0, 0)
    best_score = -1.0  # ties: the window starting nearer the top (only a higher score wins)
    j, size, total = 0, 0, 0.0  # window [i, j): its size in characters and its score
    for i in range(n):
        if j <= i:
            j, size, total = i, 0, 0.0
        while j < n and (j == i or size + sizes[j] <= budget):
            size += sizes[j]
            total += scores[j]
            j += 1
        # A match on the window's last line shows none of what follows it (the answer after
        # a question, the details under a heading): count it at half weight when the chunk
        # goes on, so the window slides to show the lines after a match.
        score = total - TAIL_WEIGHT * scores[j - 1] if j < n else total
        if score > best_score and strong_from[i] < j:
            best_score, best = score, (i, j - 1)
        size -= sizes[i]
        total -= scores[i]
    return best


def cut_line(line: str, anchor: int, budget: int) -> str:
    """About ``budget`` characters of one long line around ``anchor``, cut at spaces."""
    if len(line) <= budget:
        return line
    start = max(0, min(anchor - budget // 3, len(line) - budget))
    end = start + budget
    if start > 0:
        space = line.find(" ", start, start + 40)
        start = space + 1 if space >= 0 else start
    if end < len(line):
        space = line.rfind(" ", end - 40, end)
        end = space if space > start else end
    return ("…" if start > 0 else "") + line[start:end] + ("…" if end < len(line) else "")


def fill_after(lines: Sequence[str], last: int, body: str, budget: int) -> tuple[str, int]:
    """``body`` (lines up to ``last``) plus as much of the next non-blank line as the rest of
    the budget holds, and the new last line; unchanged when too little of it would fit."""
    k = last + 1
    while k < len(lines) and not lines[k].strip():
        k += 1
    if k >= len(lines):
        return body, last
    gap = "\n" * (k - last)  # the blank lines skipped, then the line itself
    room = budget - len(body) - len(gap)
    nxt = lines[k]
    if len(nxt) <= room:
        return body + gap + nxt, k
    room -= 1  # the ellipsis
    if room < MIN_PARTIAL:
        return body, last
    space = nxt.rfind(" ", 0, room + 1)
    part = nxt[: space if space > room // 2 else room].rstrip()
    return body + gap + part + "…", k


@functools.lru_cache(maxsize=SPLITS_KEPT)
def text_lines(text: str) -> tuple[str, ...]:
    """A chunk's lines. Kept: the same chunks come back in the next searches' snippets, and
    splitting one was a seventh of its snippet's cost."""
    return tuple(text.split("\n"))


@functools.lru_cache(maxsize=SPLITS_KEPT)
def whole_lines(text: str, first: int, last: int, budget: int) -> tuple[str, int] | None:
    """A window's lines of ``text`` and as much of the next line as the budget holds
    (fill_after), with the new last line; None when the window is a single line longer than
    the budget (cut around the query's words instead). Kept: the same chunks come back with
    the same windows, and the same string is then masked, packed and sent again (its hash
    known: the masking memo's key)."""
    lines = text_lines(text)
    body = "\n".join(lines[first : last + 1])
    if len(body) > budget:
        return None
    return fill_after(lines, last, body, budget)


def make_snippet(
    text: str,
    start_line: int,
    end_line: int,
    scores: Sequence[float],
    terms: Sequence[str],
    budget: int,
) -> Snippet:
    lines = text_lines(text)
    mapped = len(lines) == end_line - start_line + 1  # else a fragment or a transcript chunk
    if compiled is not None:  # best_window's own call spelled out (ten a search)
        first, last = compiled.best_window(lines, scores, budget)
    else:
        first, last = py_best_window(lines, scores, budget)
    filled = whole_lines(text, first, last, budget)
    if filled is not None:
        body, last = filled
    else:  # a single line longer than the budget
        body = "\n".join(lines[first : last + 1])
        low = body.lower()
        hits = [p for p in (low.find(t) for t in terms) if p >= 0]
        body = cut_line(body, min(hits) if hits else 0, budget)
    if not mapped:
        return _new_snippet(Snippet, (body, start_line, end_line))
    return _new_snippet(Snippet, (body, start_line + first, start_line + last))


@functools.lru_cache(maxsize=SPLITS_KEPT)
def shown_text(snippet: str) -> str:
    """A snippet without its annotation comments. Kept: the same windows come back (the
    same strings: snippets.whole_lines), and looking for "<!--" in 700 characters cost
    ~5x this lookup."""
    return snippet if "<!--" not in snippet else strip_annotations(snippet)
