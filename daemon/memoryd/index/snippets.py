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
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

TAIL_WEIGHT = 0.5  # share of the last line's score a window loses when more lines follow
# Budget left over after the window's whole lines shows the head of the line that follows
# (cut at a space, ending in "…") when at least this many characters of it fit: the answer
# after a matched question, the details after a heading. Fewer would show little but a label.
MIN_PARTIAL = 60

# (utf-8 bytes) -> [(start byte, end byte, stem)]
TokenizeOffsets = Callable[[bytes], list[tuple[int, int, str]]]


@dataclass(frozen=True)
class Snippet:
    text: str
    start_line: int
    end_line: int


Stems = tuple[str, ...]  # a line's distinct stems: small tuples of interned strings keep the
# cache at ~2 KB a chunk (frozensets of fresh strings took ~18 KB)


def tokenize_lines(text: str, tokenize: TokenizeOffsets) -> list[Stems]:
    """The distinct stems of each line of ``text``: one tokenizer call, offsets to lines."""
    n_lines = text.count("\n") + 1
    raw = text.encode("utf-8", "replace")
    starts = [0]
    pos = raw.find(b"\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = raw.find(b"\n", pos + 1)
    seen: list[set[str]] = [set() for _ in range(n_lines)]
    for start, _end, stem in tokenize(raw):
        seen[bisect.bisect_right(starts, start) - 1].add(sys.intern(stem))
    return [tuple(s) for s in seen]


class LineStems:
    """An LRU of chunks' per-line stems. Tokenizing is most of a search's Python time, and
    the same chunks come back across searches; a chunk's text never changes under its key."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[int, int], list[Stems]] = OrderedDict()

    def get(self, chunk_id: int, text: str, tokenize: TokenizeOffsets) -> list[Stems]:
        key = (chunk_id, hash(text))  # ids can be reused after a delete; texts tell apart
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        stems = tokenize_lines(text, tokenize)
        with self._lock:
            self._items[key] = stems
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return stems


def line_scores(stems: Sequence[Stems], weights: Mapping[str, float]) -> list[float]:
    """Per line: the summed IDF of the distinct query stems it contains."""
    out = [0.0] * len(stems)
    if not weights:
        return out
    query = frozenset(weights)
    for i, line in enumerate(stems):
        if not query.isdisjoint(line):  # most lines: one C call, no allocation
            out[i] = sum(weights[s] for s in query.intersection(line))
    return out


def best_window(lines: Sequence[str], scores: Sequence[float], budget: int) -> tuple[int, int]:
    """Inclusive (first, last) line indexes of the best-scoring run of lines within budget."""
    best = (0, 0)
    best_key = (-1.0, 0.0)
    j, size, total = 0, 0, 0.0  # window [i, j): its size in characters and its score
    for i in range(len(lines)):
        if j <= i:
            j, size, total = i, 0, 0.0
        while j < len(lines) and (j == i or size + len(lines[j]) + 1 <= budget):
            size += len(lines[j]) + 1
            total += scores[j]
            j += 1
        # A match on the window's last line shows none of what follows it (the answer after
        # a question, the details under a heading): count it at half weight when the chunk
        # goes on, so the window slides to show the lines after a match.
        tail = TAIL_WEIGHT * scores[j - 1] if j < len(lines) else 0.0
        key = (total - tail, -float(i))  # ties: the window starting nearer the top
        if key > best_key:
            best_key, best = key, (i, j - 1)
        size -= len(lines[i]) + 1
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


def make_snippet(
    text: str,
    start_line: int,
    end_line: int,
    scores: Sequence[float],
    terms: Sequence[str],
    budget: int,
) -> Snippet:
    lines = text.split("\n")
    mapped = len(lines) == end_line - start_line + 1  # else a fragment or a transcript chunk
    first, last = best_window(lines, scores, budget)
    body = "\n".join(lines[first : last + 1])
    if len(body) > budget:  # a single line longer than the budget
        low = body.lower()
        hits = [p for p in (low.find(t) for t in terms) if p >= 0]
        body = cut_line(body, min(hits) if hits else 0, budget)
    else:
        body, last = fill_after(lines, last, body, budget)
    if not mapped:
        return Snippet(body, start_line, end_line)
    return Snippet(body, start_line + first, start_line + last)
