"""What a search keeps between searches until the index changes: the candidates' rows
and the parsed queries (their window vectors: vectors/window_sims.py).

Reading a search's ~24 candidate rows from SQLite was a tenth of a small workspace's search
(one statement, a row object per chunk); the same chunks come back in the next searches.
The rows are kept for one index generation (``WorkspaceIndex.generation``: every commit,
vector write and rebuild moves it), so a kept row is never older than the index it was read
from: the generation is read before the rows, and rows read under an older one are dropped.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

import apsw

from memoryd.index.search.focus import asks_when
from memoryd.index.search.query import query_days, query_terms

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why
else:
    from memoryd.named_tuple import NamedTuple

ROWS_KEPT = 2048  # ~1.5 KB of text each: a few MB at most, then the oldest go
QUERIES_KEPT = 256

V = TypeVar("V")


class Row(NamedTuple):
    path: str
    source: str
    day: str
    start_line: int
    end_line: int
    heading: str
    text: str
    embedded: bool


class Kept(Generic[V]):
    """Values by chunk id, valid for one generation of the index, the least recently used
    dropped past ``capacity`` (in the units of ``size``: one a value by default), down to
    seven eighths of it at once (a sort of the uses for every eighth read, not one a
    read); thread-safe. A use is a tick (an int per id, updated in one call for a
    search's ids), where moving each to an OrderedDict's end was a call an id."""

    def __init__(self, capacity: int, size: Callable[[V], int] = lambda _: 1) -> None:
        self.capacity = capacity
        self._size = size
        self._lock = threading.Lock()
        self._generation = -1
        self._items: dict[int, V] = {}
        self._used_at: dict[int, int] = {}  # each kept value's last use
        self._tick = 0
        self._used = 0

    def _current(self, generation: int) -> bool:
        """Whether values of ``generation`` can be kept and read (under the lock): a newer
        one empties what an older one kept; an older one (a search that started before
        the last change) reads and keeps nothing. New maps, not the old ones emptied: a
        search may still read the map ``lend`` gave it, which must hold its generation's
        values only (a chunk's id is reused by a file written again, with another text)."""
        if generation != self._generation:
            if generation < self._generation:
                return False
            self._items, self._used_at = {}, {}
            self._used = 0
            self._generation = generation
        return True

    def _use(self, ids: Iterable[int], n: int) -> None:
        self._used_at.update(zip(ids, itertools.count(self._tick)))
        self._tick += n

    def get_many(self, ids: Sequence[int], generation: int) -> dict[int, V]:
        """The kept values of ``ids`` read at ``generation`` (those of an older one are gone)."""
        with self._lock:
            if not self._current(generation):
                return {}
            get = self._items.get
            found = {i: value for i in ids if (value := get(i)) is not None}
            self._use(found, len(found))
            return found

    def lend(
        self, n: int, generation: int
    ) -> tuple[Mapping[int, V], tuple[dict[int, int], int]] | None:
        """The kept values' own map, and (the uses' map, the first of ``n`` ticks) for the
        caller to record each value of its ``n`` ids it reads there as used (``uses[id] =
        tick + the id's place``), all at once, running no Python meanwhile (the compiled
        keyword hits: a value can go with the next rows kept); None when ``generation`` is
        not the kept one (get_many's then)."""
        with self._lock:
            if not self._current(generation):
                return None
            tick = self._tick
            self._tick += n
            return self._items, (self._used_at, tick)

    def put_many(self, values: dict[int, V], generation: int) -> None:
        """Keep ``values``, read from the index at ``generation`` (or later)."""
        with self._lock:
            if generation != self._generation:
                return  # the index changed meanwhile (or get_many saw a newer one)
            items, size = self._items, self._size
            for i, value in values.items():
                old = items.get(i)
                if old is not None:
                    self._used -= size(old)
                items[i] = value
                self._used += size(value)
            self._use(values, len(values))
            if self._used > self.capacity:
                self._drop_oldest()

    def _drop_oldest(self) -> None:
        items, used_at, size = self._items, self._used_at, self._size
        room = self.capacity - self.capacity // 8
        for i in sorted(used_at, key=used_at.__getitem__):  # least recently used first
            if self._used <= room:
                break
            self._used -= size(items.pop(i))
            del used_at[i]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._used_at.clear()
            self._used = 0


class ChunkRows(Kept[Row]):
    """The candidates' rows (read_rows)."""

    def __init__(self, capacity: int = ROWS_KEPT) -> None:
        super().__init__(capacity)


def read_rows(
    conn: apsw.Connection, ids: Sequence[int], rows: ChunkRows | None, generation: int
) -> dict[int, Row]:
    """The rows of ``ids``: those ``rows`` keeps for ``generation``, the others read from
    ``conn`` (and kept)."""
    kept = rows.get_many(ids, generation) if rows is not None else {}
    if len(kept) == len(ids):  # all kept (the usual case: the same chunks come back)
        return kept
    missing = [i for i in ids if i not in kept]
    read: dict[int, Row] = {}
    for start in range(0, len(missing), 500):
        part = missing[start : start + 500]
        for r in conn.execute(
            "SELECT id, path, source, day, start_line, end_line, heading, text, embedded "
            f"FROM chunks WHERE id IN ({','.join('?' * len(part))})",
            list(part),
        ):
            # The source interned: the sources a search lets through are the config's
            # (literals, interned), so ``source in sources`` is an identity check.
            source = sys.intern(r[2])
            read[int(r[0])] = Row(r[1], source, r[3], int(r[4]), int(r[5]), r[6], r[7], bool(r[8]))
    if rows is not None and read:
        rows.put_many(read, generation)
    return kept | read


class ParsedQuery(NamedTuple):
    """Shared by every search of the same text: read only."""

    terms: tuple[str, ...]  # query.query_terms
    term_stems: dict[str, list[str]]  # each term's stems (the index's tokenizer)
    days: tuple[str, ...]  # query.query_days
    when: bool  # focus.asks_when: a question asking when (its lines naming a time count more)
    stems: tuple[str, ...]  # every term's stems, each once, in order
    # each term's one stem, in query order (repeats kept), or None when a term has more or
    # none (a phrase: only FTS5 answers it): what the keyword copy ranks (keyword_ranked)
    singles: tuple[str, ...] | None = None


class ParsedQueries:
    """The latest queries, parsed: the same question is often asked again (an agent's
    recall, a retry), and parsing it is words, regexes and a tokenizer call per word."""

    def __init__(self, capacity: int = QUERIES_KEPT) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[str, ParsedQuery] = OrderedDict()

    def get(self, query: str, stems_of: Callable[[str], list[str]]) -> ParsedQuery:
        """``stems_of``: a term's stems by the index's tokenizer (the same for every reader)."""
        with self._lock:
            found = self._items.get(query)
            if found is not None:
                self._items.move_to_end(query)
                return found
        terms = tuple(query_terms(query))
        stems = {t: stems_of(t) for t in terms}
        every = tuple(dict.fromkeys(s for ts in stems.values() for s in ts))
        single = all(len(stems[t]) == 1 for t in terms)
        singles = tuple(stems[t][0] for t in terms) if single else None
        days, when = tuple(query_days(query)), asks_when(query)
        found = ParsedQuery(terms, stems, days, when, every, singles)
        with self._lock:
            self._items[query] = found
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return found
