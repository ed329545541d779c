"""The token cost the chunker budgets with: the bundled WordPiece tokenizer's count, with one
correction: WordPiece turns any word longer than 100 characters into a single [UNK], so such
a token is costed as one token per 4 characters (roughly what subword tokenizers spend) and
can be split (``pieces``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, compress, repeat
from operator import is_
from typing import TYPE_CHECKING, cast

from memoryd.embeddings.tokenizer import on_release
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

_MAX_WORD_CHARS = 100  # WordPiece's max_input_chars_per_word: longer words become one [UNK]
_CHARS_PER_PIECE = 4

# Word -> cost, per tokenizer (kept alive so its id is never reused). The tokenizer costs
# ~1 µs per token; words repeat, so counting through this cache is many times faster. It is
# exact: BERT normalization is per character and a space always separates pre-tokens, so
# a text's count is the sum of its space-separated words' counts (tests pin this).
_CACHE_ENTRIES = 100_000
_CACHE_MAX_CHARS = 64
_UNSEEN = -(1 << 40)  # a word's cost until it is known: makes its text's sum negative
_WORDS_PER_ENCODE = 2_000
_caches: dict[int, tuple[Tokenizer, dict[str, int]]] = {}
on_release(_caches.clear)  # ~100 bytes a word: it goes with the tokenizer


def count_tokens(texts: Sequence[str], tokenizer: Tokenizer) -> list[int]:
    """The token cost the chunker budgets with: the tokenizer's count, an over-long word's
    [UNK] costed per 4 characters. One encode call for the words not seen before."""
    return costs(texts, tokenizer)[0]


def costs(
    texts: Sequence[str], tokenizer: Tokenizer, keep_over: int | None = None
) -> tuple[list[int], dict[int, list[tuple[int, int]]]]:
    """Costs, and the token pieces of the texts costing more than keep_over (to split them).
    Each word's cost is looked up in a cache kept across calls, in C (map, sum): per-word
    Python loops were most of a first index's chunking time."""
    if not texts:
        return [], {}
    entry = _caches.get(id(tokenizer))
    if entry is None or len(entry[1]) > _CACHE_ENTRIES:
        # A new dict, never one cleared in place: another thread may be reading the old one.
        entry = _caches[id(tokenizer)] = (tokenizer, {})
    cache = entry[1]
    # Each text's costs summed in C, a word not seen before counting _UNSEEN: the texts
    # with one (a few, once a few files are chunked) are costed again, learning them.
    get, unseen = cache.get, repeat(_UNSEEN)
    out = [sum(map(get, t.split(" "), unseen)) for t in texts]
    again = [i for i, c in enumerate(out) if c < 0]
    if again:
        learnt = _costs_learning([texts[i] for i in again], tokenizer, cache)
        for i, c in zip(again, learnt, strict=True):
            out[i] = c
    kept: dict[int, list[tuple[int, int]]] = {}
    over = [] if keep_over is None else [i for i, c in enumerate(out) if c > keep_over]
    if over:
        encs = tokenizer.encode_batch([texts[i] for i in over], add_special_tokens=False)
        for i, enc in zip(over, encs, strict=True):
            kept[i] = pieces(enc)
            out[i] = len(kept[i])
    return out, kept


def _costs_learning(texts: Sequence[str], tokenizer: Tokenizer, cache: dict[str, int]) -> list[int]:
    """The texts' costs, the words not seen before costed (and cached) on the way: all the
    texts' words in one list (" ".join then split(" ") gives each text's split(" ") in
    turn), so that the new ones go to the tokenizer in one call."""
    words = " ".join(texts).split(" ")
    costs = list(map(cache.get, words))
    if None in costs:  # words not seen before
        long: dict[str, int] = {}  # too long to cache: this call's only
        new = list(set(compress(words, map(is_, costs, repeat(None)))))
        for w, c in zip(new, _word_costs(new, tokenizer), strict=True):
            if len(w) <= _CACHE_MAX_CHARS:
                cache[w] = c
            else:
                long[w] = c
        costs = list(map(cache.get, words))
        if long:
            costs = [long[w] if c is None else c for w, c in zip(words, costs, strict=True)]
    prefix = [0, *accumulate(cast("list[int]", costs))]
    ends = list(accumulate(t.count(" ") + 1 for t in texts))
    return [prefix[e] - prefix[s] for s, e in zip([0, *ends[:-1]], ends, strict=True)]


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
        cost = np.where(span > _MAX_WORD_CHARS, -(-span // _CHARS_PER_PIECE), 1)  # as pieces
        owner = np.searchsorted(starts, offsets[:, 0], side="right") - 1
        out.extend(int(c) for c in np.bincount(owner, weights=cost, minlength=len(part)))
    return out


def pieces(enc: Encoding) -> list[tuple[int, int]]:
    """Character spans of the tokens, an over-long word's [UNK] cut into 4-character pieces."""
    out: list[tuple[int, int]] = []
    for s, e in enc.offsets:
        if e - s > _MAX_WORD_CHARS:
            starts = range(s, e, _CHARS_PER_PIECE)
            out.extend(zip(starts, [*starts[1:], e], strict=True))
        else:
            out.append((s, e))
    return out
