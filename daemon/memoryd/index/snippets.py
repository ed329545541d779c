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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

TAIL_WEIGHT = 0.5  # share of the last line's score a window loses when more lines follow

# (utf-8 bytes) -> [(start byte, end byte, stem)]
TokenizeOffsets = Callable[[bytes], list[tuple[int, int, str]]]


@dataclass(frozen=True)
class Snippet:
    text: str
    start_line: int
    end_line: int


def line_scores(text: str, tokenize: TokenizeOffsets, weights: Mapping[str, float]) -> list[float]:
    """Per line of ``text``: the summed IDF of distinct query stems it contains."""
    n_lines = text.count("\n") + 1
    if not weights:
        return [0.0] * n_lines
    raw = text.encode("utf-8", "replace")
    starts = [0]
    pos = raw.find(b"\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = raw.find(b"\n", pos + 1)
    seen: list[set[str]] = [set() for _ in range(n_lines)]
    for start, _end, stem in tokenize(raw):
        if stem in weights:
            seen[bisect.bisect_right(starts, start) - 1].add(stem)
    return [sum(weights[s] for s in stems) for stems in seen]


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
    if not mapped:
        return Snippet(body, start_line, end_line)
    return Snippet(body, start_line + first, start_line + last)
