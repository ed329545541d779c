"""Chunks' keyword postings counted apart from any copy: what the in-memory BM25 is built from.

A run of chunks is tokenized as chunks_fts indexes it and counted per (stem, chunk) with
its stems numbered by first use *within the run*. That makes the count independent of
every other run, so it can be made anywhere, in a bulk sync's chunking processes
(prepare.py) as well as by a load on the writer, and merged into one copy afterwards by
renumbering the run's stems (keyword_mirror's build): the copy comes out the same as
counting every chunk in order would give.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import apsw

from memoryd.index.keyword.text import FTS_TOKENIZER, keyword_text
from memoryd.records import Record
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from dataclasses import dataclass as frozen_record  # records.py says why

    import numpy.typing as npt
else:
    from memoryd.records import frozen_record

TEXT_WEIGHT = 1.0  # bm25() column weights: text, heading
HEADING_WEIGHT = 0.5


@functools.cache
def _column_weights2() -> npt.NDArray[np.int64]:
    """Doubled column weights (text, heading): a token's share of its chunk's freq2. Made on
    first use (numpy is imported then: runtime/lazy_numpy.py)."""
    return np.array([int(2 * TEXT_WEIGHT), int(2 * HEADING_WEIGHT)], np.int64)


Stems = Callable[[str], list[str]]  # a text's tokens as FTS5 indexes them


def fts5_stems(conn: apsw.Connection) -> Stems:
    """The chunks_fts tokenizer (text.FTS_TOKENIZER) over keyword_text(text), as its
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


@frozen_record(frozen=True, eq=False, repr=False)
class Counted(Record):
    """The postings of a run of chunks, ordered by (stem, chunk). Picklable: a chunking
    process sends it back with the chunks."""

    # The run's stems, by first use: the numbers below index this list (``stem_list``).
    # Sent joined by spaces (a stem never holds one: unicode61 separates on it): 3.7M short
    # strings cost 2.8 s to pickle at 100k chunks, and made on arrival, in the pool's thread,
    # they pinned ~40 MB of the writer process's small-object arenas for good.
    stems: list[str] | str
    by_column: npt.NDArray[np.int32]  # tokens per chunk and column: text, heading, text, ...
    stem: npt.NDArray[np.int32]  # per posting: its stem's number in ``stems``
    chunk: npt.NDArray[np.uint32]  # per posting: its chunk's position in the run
    freq2: npt.NDArray[np.uint16]  # per posting: 2 x (weighted term frequency), capped

    @property
    def chunks(self) -> int:
        return len(self.by_column) // 2

    def stem_list(self) -> list[str]:
        """The stems as a list (split here, by their user, when sent joined)."""
        if isinstance(self.stems, str):
            return self.stems.split(" ") if self.stems else []
        return self.stems

    def __reduce__(self) -> tuple[type[Counted], tuple[object, ...]]:
        stems = self.stems if isinstance(self.stems, str) else " ".join(self.stems)
        return Counted, (stems, self.by_column, self.stem, self.chunk, self.freq2)

    def lengths(self) -> npt.NDArray[np.int64]:
        """Tokens per chunk, both columns: FTS5's document length."""
        by_column = self.by_column.astype(np.int64)
        return by_column[0::2] + by_column[1::2]

    def per_chunk(self) -> npt.NDArray[np.int64]:
        """Postings per chunk."""
        return np.bincount(self.chunk, minlength=self.chunks)


def count_chunks(chunks: Sequence[tuple[str, str]], stems: Stems) -> Counted:
    """The postings of (text, heading) chunks: their tokens in one list, numbered through
    a dict in C and counted per (stem, chunk) by one numpy sort (a dict and a Counter per
    chunk, and a Python loop per posting, cost 1.7x the CPU)."""
    lengths: list[int] = []  # tokens per column: text, heading, text, heading, ...
    tokens: list[str] = []
    heading_stems: dict[str, list[str]] = {}  # a section's chunks share a heading
    for text, heading in chunks:
        t = stems(text)
        h = heading_stems.get(heading)
        if h is None:
            h = heading_stems[heading] = stems(heading) if heading else []
        lengths += (len(t), len(h))
        tokens += t
        tokens += h
    first_use = dict.fromkeys(tokens)  # insertion-ordered: the stems by first use
    number = dict(zip(first_use, range(len(first_use)), strict=True))
    n = len(chunks)
    by_column = np.array(lengths, np.int64)
    # One sort of (stem, chunk, column) keys: a chunk's postings are its runs of equal
    # key // 2, and the low bit says which column (and so which weight) each token is.
    doc = np.repeat(np.arange(n, dtype=np.int64), by_column[0::2] + by_column[1::2])
    column = np.repeat(np.tile(np.array([0, 1], np.int64), n), by_column)
    key = (np.fromiter(map(number.__getitem__, tokens), np.int64, len(tokens)) * n + doc) * 2
    key += column
    if len(first_use) * n * 2 <= 1 << 32:  # sorted as 32-bit keys: ~1.5x faster
        key = np.sort(key.astype(np.uint32)).astype(np.int64)
    else:
        key.sort()
    weight = _column_weights2()[key & 1]
    key >>= 1
    starts = np.flatnonzero(np.diff(key, prepend=-1))
    f2 = np.minimum(np.add.reduceat(weight, starts), 0xFFFF) if len(key) else weight
    key = key[starts]
    return Counted(
        list(first_use),
        by_column.astype(np.int32),
        (key // max(n, 1)).astype(np.int32),
        (key % max(n, 1)).astype(np.uint32),
        f2.astype(np.uint16),
    )
