"""Split memory text into overlapping chunks of at most ``chunk_tokens`` tokens.

Markdown is split recursively: whole sections (by heading level, outermost first), then
paragraphs, then lines, then words; the resulting units are packed greedily, so small
neighbouring sections share a chunk. A chunk that continues the previous chunk's section
starts with the previous chunk's last lines (``overlap_tokens`` worth, whole lines only).
Transcripts reuse the same packing through ``chunk_lines``.

Token cost is the bundled WordPiece tokenizer's count, with one correction: WordPiece turns
any word longer than 100 characters into a single [UNK], so such a token is costed as one
token per 4 characters (roughly what subword tokenizers spend) and can be split.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from memoryd.embeddings.tokenizer import on_release

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

_MAX_WORD_CHARS = 100  # WordPiece's max_input_chars_per_word: longer words become one [UNK]
_CHARS_PER_PIECE = 4
_SPACE = re.compile(r"\s")
# Chinese and Japanese sentences end without a space after them: a line of them is cut
# after one of these, as between words, rather than mid-word.
_CJK_STOPS = frozenset("。！？；…")
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*\r?$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")

# Word -> cost, per tokenizer (kept alive so its id is never reused). The tokenizer costs
# ~1 µs per token; words repeat, so counting through this cache is many times faster. It is
# exact: BERT normalization is per character and a space always separates pre-tokens, so
# a text's count is the sum of its space-separated words' counts (tests pin this).
_CACHE_ENTRIES = 100_000
_CACHE_MAX_CHARS = 64
_WORDS_PER_ENCODE = 2_000
_caches: dict[int, tuple[Tokenizer, dict[str, int]]] = {}
on_release(_caches.clear)  # ~100 bytes a word: it goes with the tokenizer


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive, physical lines of the input
    end_line: int
    text: str
    heading_path: tuple[str, ...]


def chunk_markdown(
    text: str, tokenizer: Tokenizer, chunk_tokens: int = 400, overlap_tokens: int = 80
) -> list[Chunk]:
    _check_budget(chunk_tokens, overlap_tokens)
    lines = text.split("\n")
    doc = _Doc(lines, range(1, len(lines) + 1), tokenizer, chunk_tokens)
    doc.parse_markdown()
    units: list[tuple[int, int, bool]] = []
    doc.split(0, len(lines), chunk_tokens, units)
    return doc.pack(units, chunk_tokens, overlap_tokens)


def chunk_lines(
    lines: Sequence[tuple[int, str]],
    tokenizer: Tokenizer,
    chunk_tokens: int = 400,
    overlap_tokens: int = 80,
) -> list[Chunk]:
    """Pack (physical line number, text) items, e.g. transcript messages, without structure."""
    _check_budget(chunk_tokens, overlap_tokens)
    doc = _Doc([t for _, t in lines], [n for n, _ in lines], tokenizer, chunk_tokens)
    return doc.pack([(i, i + 1, False) for i in range(len(lines))], chunk_tokens, overlap_tokens)


def count_tokens(texts: Sequence[str], tokenizer: Tokenizer) -> list[int]:
    """The token cost the chunker budgets with: the tokenizer's count, an over-long word's
    [UNK] costed per 4 characters. One encode call for the words not seen before."""
    return _costs(texts, tokenizer)[0]


def _costs(
    texts: Sequence[str], tokenizer: Tokenizer, keep_over: int | None = None
) -> tuple[list[int], dict[int, list[tuple[int, int]]]]:
    """Costs, and the token pieces of the texts costing more than keep_over (to split them)."""
    cache = _caches.setdefault(id(tokenizer), (tokenizer, {}))[1]
    words = [t.split(" ") for t in texts]
    counts: dict[str, int] = {}
    new: list[str] = []
    for w in {w for ws in words for w in ws}:
        c = cache.get(w)
        if c is None:
            new.append(w)
        else:
            counts[w] = c
    if new:
        if len(cache) > _CACHE_ENTRIES:
            cache.clear()
        for w, c in zip(new, _word_costs(new, tokenizer), strict=True):
            counts[w] = c
            if len(w) <= _CACHE_MAX_CHARS:
                cache[w] = c
    get = counts.__getitem__
    out = [sum(map(get, ws)) for ws in words]
    kept: dict[int, list[tuple[int, int]]] = {}
    over = [] if keep_over is None else [i for i, c in enumerate(out) if c > keep_over]
    if over:
        encs = tokenizer.encode_batch([texts[i] for i in over], add_special_tokens=False)
        for i, enc in zip(over, encs, strict=True):
            kept[i] = _pieces(enc)
            out[i] = len(kept[i])
    return out, kept


def _word_costs(words: Sequence[str], tokenizer: Tokenizer) -> list[int]:
    """Costs of words, encoded joined by spaces in a few large batch items: a batch of
    many tiny inputs costs several times more per token."""
    parts = [words[i : i + _WORDS_PER_ENCODE] for i in range(0, len(words), _WORDS_PER_ENCODE)]
    encs = tokenizer.encode_batch([" ".join(p) for p in parts], add_special_tokens=False)
    out: list[int] = []
    for part, enc in zip(parts, encs, strict=True):
        starts = np.cumsum([0, *(len(w) + 1 for w in part[:-1])])
        offsets = np.array(enc.offsets, dtype=np.int64).reshape(-1, 2)
        span = offsets[:, 1] - offsets[:, 0]
        cost = np.where(span > _MAX_WORD_CHARS, -(-span // _CHARS_PER_PIECE), 1)  # as _pieces
        owner = np.searchsorted(starts, offsets[:, 0], side="right") - 1
        out.extend(int(c) for c in np.bincount(owner, weights=cost, minlength=len(part)))
    return out


def _check_budget(chunk_tokens: int, overlap_tokens: int) -> None:
    if chunk_tokens < 1 or overlap_tokens < 0:
        raise ValueError(
            f"bad chunk budget: chunk_tokens={chunk_tokens}, overlap_tokens={overlap_tokens}"
        )


class _Doc:
    """Lines (by index) with their token costs and, for markdown, their structure."""

    def __init__(
        self, texts: Sequence[str], numbers: Sequence[int], tokenizer: Tokenizer, budget: int
    ):
        self.texts = texts
        self.numbers = numbers
        self.tokenizer = tokenizer
        n = len(texts)
        self.blank = [not t or t.isspace() for t in texts]
        costs, self.long_pieces = _costs(texts, tokenizer, keep_over=budget)
        self.prefix = [0]
        for c in costs:
            self.prefix.append(self.prefix[-1] + c)
        self.paths: list[tuple[str, ...]] = [()] * n
        self.section = [0] * n  # index of the heading that opens each line's section
        self.level = [0] * n  # heading level, 0 for other lines
        self.headings: list[int] = []  # indices of heading lines, ascending
        self.in_fence = [False] * n
        self.break_next = False  # split(): the next unit must start a new chunk

    def cost(self, lo: int, hi: int) -> int:
        return self.prefix[hi] - self.prefix[lo]

    def parse_markdown(self) -> None:
        fence: tuple[str, int] | None = None  # (char, length) of the open fence
        stack: list[tuple[int, str]] = []
        path: tuple[str, ...] = ()
        section = 0
        for i, line in enumerate(self.texts):
            m = _FENCE.match(line)
            if fence is not None:
                self.in_fence[i] = True
                if m and m[1][0] == fence[0] and len(m[1]) >= fence[1] and not m[2].strip():
                    fence = None
            elif m and not (m[1][0] == "`" and "`" in m[2]):  # CommonMark: no ` in info
                fence = (m[1][0], len(m[1]))
                self.in_fence[i] = True
            elif (h := _HEADING.match(line)) and h[2].strip():
                level = len(h[1])
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, h[2].strip()))
                path = tuple(title for _, title in stack)
                section = i
                self.level[i] = level
                self.headings.append(i)
            self.paths[i] = path
            self.section[i] = section

    def split(self, lo: int, hi: int, budget: int, out: list[tuple[int, int, bool]]) -> None:
        """Append units covering [lo, hi): the largest structural pieces that fit.

        A unit is (lo, hi, fresh); fresh units start a new chunk. The unit after a section
        that had to be split is fresh, so a chunk never runs from the tail of a long section
        into the next one (its heading would then sit mid-chunk, under a stale path).
        """
        if self.cost(lo, hi) <= budget or hi - lo == 1:
            out.append((lo, hi, self.break_next))
            self.break_next = False
            return
        inner = self.headings[
            bisect.bisect_right(self.headings, lo) : bisect.bisect_left(self.headings, hi)
        ]
        if inner:
            top = min(self.level[h] for h in inner)
            cuts = [h for h in inner if self.level[h] == top]
        else:
            # Paragraph starts; blank lines inside a code fence do not end a paragraph.
            sep = [self.blank[i] and not self.in_fence[i] for i in range(lo, hi)]
            cuts = [lo + k for k in range(1, hi - lo) if sep[k - 1] and not sep[k]]
            if not cuts:
                cuts = list(range(lo + 1, hi))
        for a, b in pairwise([lo, *cuts, hi]):
            self.split(a, b, budget, out)
            if inner and b - a > 1 and self.cost(a, b) > budget:
                self.break_next = True

    def pack(
        self, units: Sequence[tuple[int, int, bool]], budget: int, overlap: int
    ) -> list[Chunk]:
        out: list[Chunk] = []
        cur: tuple[int, int] | None = None  # [lo, hi) of the chunk being filled
        prev_lo = -1  # start of the previous chunk: overlap never swallows it whole
        for a, b, fresh in units:
            c = self.cost(a, b)
            if cur is not None and not fresh and self.cost(*cur) + c <= budget:
                cur = (cur[0], b)
                continue
            if cur is not None:
                self._emit(out, *cur)
                prev_lo = cur[0]
                cur = None
            if c > budget:  # a single line: only split() hands out multi-line units that fit
                out.extend(
                    Chunk(self.numbers[a], self.numbers[a], f, self.paths[a])
                    for f in _fragments(
                        self.texts[a], self.tokenizer, budget, self.long_pieces.get(a)
                    )
                )
                prev_lo = a
                continue
            cur = (
                self._overlap_start(a, max(prev_lo + 1, self.section[a]), min(overlap, budget - c)),
                b,
            )
        if cur is not None:
            self._emit(out, *cur)
        return out

    def _overlap_start(self, a: int, floor: int, allowance: int) -> int:
        """Walk back from line a over whole lines worth at most `allowance` tokens."""
        if allowance <= 0:
            return a
        j = a
        while j > floor and self.cost(j - 1, a) <= allowance:
            j -= 1
        return j

    def _emit(self, out: list[Chunk], lo: int, hi: int) -> None:
        while lo < hi and self.blank[lo]:
            lo += 1
        while hi > lo and self.blank[hi - 1]:
            hi -= 1
        if lo < hi:
            text = "\n".join(self.texts[lo:hi])
            out.append(Chunk(self.numbers[lo], self.numbers[hi - 1], text, self.paths[lo]))


def _pieces(enc: Encoding) -> list[tuple[int, int]]:
    """Character spans of the tokens, an over-long word's [UNK] cut into 4-character pieces."""
    out: list[tuple[int, int]] = []
    for s, e in enc.offsets:
        if e - s > _MAX_WORD_CHARS:
            starts = range(s, e, _CHARS_PER_PIECE)
            out.extend(zip(starts, [*starts[1:], e], strict=True))
        else:
            out.append((s, e))
    return out


def _fragments(
    text: str, tokenizer: Tokenizer, budget: int, pieces: list[tuple[int, int]] | None = None
) -> list[str]:
    """Split one over-budget line at whitespace (at token boundaries inside a huge word)."""
    if pieces is None:
        pieces = _pieces(tokenizer.encode(text, add_special_tokens=False))
    cuts, torn = [0], [False]  # torn: the cut splits a word
    i = 0
    while len(pieces) - i > budget:
        i, spaced = _cut(text, pieces, i, budget)
        cuts.append(pieces[i][0])
        torn.append(not spaced)
    cuts.append(len(text))
    torn.append(False)
    out: list[str] = []
    for k, (a, b) in enumerate(pairwise(cuts)):
        f = text[a:b].strip()
        # Cut between words, a fragment re-tokenizes to exactly its pieces; a word cut
        # mid-way does not (no "##" continuation), so recheck those.
        if (
            (torn[k] or torn[k + 1])
            and len(f) < len(text)
            and count_tokens([f], tokenizer)[0] > budget
        ):
            out.extend(_fragments(f, tokenizer, budget))
        elif f:
            out.append(f)
    return out


def _cut(text: str, pieces: Sequence[tuple[int, int]], i: int, budget: int) -> tuple[int, bool]:
    """The piece starting the next fragment after one starting at piece i; at whitespace?"""
    half = budget // 2
    multiline = "\n" in text[pieces[i][1] : pieces[i + budget][0]]
    spaced = 0
    for j in range(i + budget, i, -1):
        gap = text[pieces[j - 1][1] : pieces[j][0]]
        if multiline and j - i >= half and "\n" in gap:
            return j, True  # multi-line texts (transcript messages) prefer a line break
        if not spaced and (_SPACE.search(gap) or text[pieces[j - 1][1] - 1] in _CJK_STOPS):
            spaced = j
        if spaced and (not multiline or j - i < half):
            break
    return (spaced, True) if spaced else (i + budget, False)
