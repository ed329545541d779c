"""Vector windows: the pieces of a chunk that are embedded, each within the model's reach.

A 400-token chunk is more than a small model reads (all-MiniLM-L6-v2 stops at 256), and
one vector for a dozen dialogue lines blurs them. Each chunk is embedded as windows of
about ``budget`` tokens (whole lines, one line of overlap, the heading path in front), and
scored by its best window; the chunk's KNN vector is the normalised mean of its windows.
On LoCoMo this lifts vector MRR from 0.47 to 0.57 (bench/retrieval.py). The best window
also tells the snippet where a chunk matched when no query word occurs in it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from memoryd.embeddings.base import Vectors
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.index.token_costs import count_tokens
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

WINDOW_SLOTS = 64  # window ids are chunk_id * WINDOW_SLOTS + n
SPANS_KEPT = 1024  # chunks whose window spans a snippet asked for (~1.5 KB of text each)


def window_spans(text: str, tokenizer: Tokenizer, budget: int) -> list[tuple[int, int]]:
    """Inclusive (first, last) indexes into ``text.split("\\n")`` of each window."""
    all_lines = text.split("\n")
    idx = [i for i, ln in enumerate(all_lines) if ln.strip()] or [0]
    costs = count_tokens([all_lines[i] for i in idx], tokenizer)
    total = sum(costs)
    if total > budget * WINDOW_SLOTS:  # keep within the id space: widen the windows
        budget = total // WINDOW_SLOTS + 1
    spans: list[tuple[int, int]] = []
    start, size = 0, 0
    for i, cost in enumerate(costs):
        if i > start and size + cost > budget:
            spans.append((start, i - 1))
            start = i - 1 if i - 1 > start else i  # one line of overlap keeps pairs together
            size = sum(costs[start:i])
        size += cost
    spans.append((start, len(costs) - 1))
    return [(idx[a], idx[b]) for a, b in spans[:WINDOW_SLOTS]]


@functools.lru_cache(maxsize=SPANS_KEPT)
def kept_window_spans(text: str, budget: int) -> tuple[tuple[int, int], ...]:
    """window_spans by the bundled tokenizer, kept for the chunks snippets ask again: a
    semantic match's snippet shows its best window's lines, and counting a chunk's tokens
    is ~0.4 ms (the tokenizer itself is let go when idle: ~15 ms to load again)."""
    return tuple(window_spans(text, load_tokenizer(), budget))


def vector_windows(heading: str, text: str, tokenizer: Tokenizer, budget: int) -> list[str]:
    """The texts to embed for one chunk, in window order."""
    lines = text.split("\n")
    prefix = f"{heading}\n" if heading else ""
    return [
        prefix + "\n".join(ln for ln in lines[a : b + 1] if ln.strip())
        for a, b in window_spans(text, tokenizer, budget)
    ]


def centroid(vectors: Vectors) -> Vectors:
    mean = vectors.astype(np.float32).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    out: Vectors = (mean / norm if norm > 0 else mean).astype(np.float32)
    return out
