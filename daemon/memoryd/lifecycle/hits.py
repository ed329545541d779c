"""How often search and recall returned each memory line, and to how many different queries:
a signal only the daemon has, which hippocampus ranks its candidates by (docs/lifecycle.md).

Counted per workspace and ``line_key`` (lines.py) in the state database, so a line keeps its
count when it moves and across restarts. Recording costs a search one ``deque.append``: a
background thread keys the snippets' lines and writes the counts in batches, off the hot path.
A batch gathers for up to COALESCE_S: on two cores a transaction per search (and the thread's
wake-ups competing for the GIL) doubled the daemon's CPU per search; one a second is noise.

That thread shares the GIL with the event loop, so it must stay small and let go often: a
batch that held the interpreter for tens of milliseconds made every search arriving
meanwhile wait for it, 5 ms (the switch interval) per hand-over (issue 38's p99). Each
snippet's keyed lines and its word index are remembered (the same snippets come back search
after search), a search's matched lines are a few dict lookups, and the thread works in
slices of ~0.1 ms (a snippet, a few dozen rows written), stepping aside while a search is
being answered and giving the lock up between slices (runtime/foreground.Share): a batch of
new queries is ~0.2 ms of CPU per search, and a search arriving while it ran waited for the
lock a switch interval at a time (issue 38's tail, session 4). A queued search is a tuple of
strings, which the garbage collector stops tracking at once: a second's queue of lists had
been promoted to the oldest generation, which then ran full collections (25-40 ms of CPU
with the GIL held) every few hundred searches. And a batch waits for searches to pause
(``lull``: none begun for LULL_S), at most DEFER_MAX_S: slices still cost each search
arriving meanwhile a hand-over of the lock, a wake-up on another core (session 5).
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from memoryd.files.lines import line_key, normalize_line
from memoryd.runtime.foreground import FOREGROUND, Foreground, Share
from memoryd.runtime.logs import get_logger
from memoryd.runtime.state import StateDB

__all__ = ["HitCounter", "lull", "words_of"]

log = get_logger("memoryd.lifecycle.hits")

MAX_QUEUED: Final = 10_000  # searches waiting to be counted; past it the oldest are dropped
SAMPLE_CHARS: Final = 200
SNIPPETS_KEPT: Final = 1024  # snippets whose keyed lines are remembered (~0.5 MB)
LINES_KEPT: Final = 4096  # snippet lines whose key and words are remembered (~2.5 MB)
PAIRS_KEPT: Final = 100_000  # (line, query) pairs known to be written (~15 MB at most)
COALESCE_S: Final = 1.0  # how long a batch gathers searches before it is written
# Then it waits for a lull: no quick request begun for a LULL_S look (each look takes the
# interpreter lock for a moment), at most DEFER_MAX_S more or until half the queue is full.
LULL_S: Final = 0.2
DEFER_MAX_S: Final = 4.0
ROWS_PER_SLICE: Final = 32  # rows written between two of the thread's pauses


_WORD: Final = re.compile(r"\w{3,}")
_COMMON: Final = frozenset(
    {
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "how",
        "did",
        "does",
        "you",
        "your",
        "with",
        "that",
        "this",
        "from",
        "have",
        "has",
        "had",
        "not",
        "but",
        "all",
        "any",
        "can",
        "our",
        "out",
        "they",
        "them",
        "their",
        "there",
    }
)


def words_of(text: str) -> set[str]:
    """The words a query and a line are matched by (3+ characters, common words aside)."""
    return {w for w in _WORD.findall(text.casefold()) if w not in _COMMON}


# A snippet's keyed lines (key, sample, words) in order, and for each word the lines holding
# it, as a bit mask of their indexes (a query's lines are one OR per word, in line order).
_SnippetLines = tuple[tuple[tuple[str, str, tuple[str, ...]], ...], dict[str, int]]


@functools.lru_cache(maxsize=LINES_KEPT)
def _line_facts(line: str) -> tuple[str, str, tuple[str, ...]]:
    """A snippet line's key, sample and words (interned: ~0.6 KB a line kept): a line comes
    back in many snippets (they overlap), and hashing and splitting it was most of what
    counting cost."""
    words = tuple(sorted(sys.intern(w) for w in words_of(line)))
    return line_key(line), line.strip()[:SAMPLE_CHARS], words


@functools.lru_cache(maxsize=SNIPPETS_KEPT)
def _snippet_lines(snippet: str) -> _SnippetLines:
    """A snippet's keyed lines and their words, by word: the same snippets come back search
    after search."""
    keyed: list[tuple[str, str, tuple[str, ...]]] = []
    by_word: dict[str, int] = {}
    for line in snippet.splitlines():
        facts = _line_facts(line)
        if not facts[0]:
            continue
        bit = 1 << len(keyed)
        for w in facts[2]:
            by_word[w] = by_word.get(w, 0) | bit
        keyed.append(facts)
    return tuple(keyed), by_word


@functools.lru_cache(maxsize=SNIPPETS_KEPT)
def _query_facts(query: str) -> tuple[str, frozenset[str]]:
    """A query's hash (its normalised text's) and words: agents ask the same ones again."""
    qhash = hashlib.sha256(normalize_line(query).encode()).hexdigest()[:16]
    return qhash, frozenset(words_of(query))


def _matched(
    snippets: tuple[str, ...], words: frozenset[str], share: Share
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """key -> (sample, the line's words) of the snippet lines the query matched (a snippet
    shows its neighbours too); none of them (a vector hit): the snippet's first keyed line,
    matched by no word. The first line of a key wins."""
    seen: dict[str, tuple[str, tuple[str, ...]]] = {}
    for snippet in snippets:
        share.tick()  # a new snippet's lines are keyed here: ~50 us
        keyed, by_word = _snippet_lines(snippet)
        if not keyed:
            continue
        lines = 0
        for w in words:
            lines |= by_word.get(w, 0)
        if not lines:
            lines = 1
        i = 0
        while lines:
            if lines & 1:
                k, sample, its = keyed[i]
                if k not in seen:
                    seen[k] = (sample, its)
            lines >>= 1
            i += 1
    return seen


def lull(begun_before: int, begun_after: int, *, busy: bool) -> bool:
    """Whether the searches paused over one look: none begun during it, none in flight."""
    return begun_after == begun_before and not busy


class HitCounter:
    def __init__(self, state: StateDB, foreground: Foreground = FOREGROUND) -> None:
        self.state = state
        self._fg = foreground
        # (root, query, snippets, when): strings only, so the collector stops tracking it
        self._queue: deque[tuple[str, str, tuple[str, ...], float]] = deque(maxlen=MAX_QUEUED)
        self._wake = threading.Event()
        self._flush = threading.Event()  # write what is queued now (wait_idle, close)
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._thread: threading.Thread | None = None
        # (root, query hash) -> the keys already in line_hit_queries with it: a query asked
        # again (an agent repeats itself) inserts nothing, and the table's index is not
        # probed for it. At most PAIRS_KEPT pairs in all.
        self._written: dict[tuple[str, str], set[str]] = {}
        self._pairs = 0

    def record(self, root: Path, query: str, hits: Iterable[dict[str, Any]]) -> None:
        """Count a search's hits (memory lines only); returns at once. On the event loop, once
        per search: the events are cleared and set once per batch, not per search (each is a
        Condition's lock twice)."""
        self.record_snippets(
            root,
            query,
            tuple(
                [str(h.get("snippet") or "") for h in hits if h.get("source", "memory") == "memory"]
            ),
        )

    def record_snippets(self, root: Path, query: str, snippets: tuple[str, ...]) -> None:
        """``record``, given the snippets of the hits of memory (not of transcripts)."""
        if not snippets or self._closed:
            return
        self._queue.append((str(root), query, snippets, time.time()))
        if self._idle.is_set():
            self._idle.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memoryd-hits", daemon=True)
            self._thread.start()
        if not self._wake.is_set():  # the thread clears it, then looks at the queue
            self._wake.set()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Until what was recorded is counted (tests, and a job that reads the counts)."""
        if self._queue:
            self._flush.set()
            self._wake.set()
        return self._idle.wait(timeout)

    def close(self) -> None:
        self._closed = True
        self._flush.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait()  # no timeout: an idle thread never wakes (close sets it too)
            self._wake.clear()
            if self._queue and not self._flush.is_set():
                self._flush.wait(COALESCE_S)  # the searches of the next moment join this batch
                self._wait_for_a_lull()
            self._flush.clear()
            batch = []
            while self._queue:
                batch.append(self._queue.popleft())
            if batch:
                try:
                    self._write(batch)
                except Exception:  # counting must never take the daemon down
                    if not self._closed:  # at shutdown the state may be closed first
                        log.exception("hit_count_failed", searches=len(batch))
            if not self._queue:
                self._idle.set()

    def _wait_for_a_lull(self) -> None:
        """Until searches pause (``lull``), so that the batch's work, sliced as it is, does
        not compete with them for the interpreter lock: each search arriving during a batch
        waited for a slice and a thread's wake-up on another core (issue 38's tail). Bounded:
        DEFER_MAX_S, half the queue, a flush (wait_idle, close) ends the wait at once."""
        fg = self._fg
        deadline = time.monotonic() + DEFER_MAX_S
        while not self._flush.is_set() and len(self._queue) < MAX_QUEUED // 2:
            begun = fg.begun
            if self._flush.wait(LULL_S) or lull(begun, fg.begun, busy=fg.busy):
                return
            if time.monotonic() > deadline:
                return

    def _write(self, batch: list[tuple[str, str, tuple[str, ...], float]]) -> None:
        # root -> key -> [sample, hits, last at]; the new (root, key, query hash, words)
        rows: dict[str, dict[str, list[Any]]] = {}
        queries: list[tuple[str, str, str, str]] = []
        # The same search again within the batch (a retry, a recall each turn) is matched
        # once and counted as often as it was asked.
        asked: dict[tuple[str, str, tuple[str, ...]], list[float]] = {}
        for root, query, snippets, at in batch:
            asked.setdefault((root, query, snippets), []).append(at)
        # (root, query hash) -> the keys this batch inserts with it: each pair once, with the
        # words of its first search. No pass over all the pairs after the loop (a sort of
        # thousands of tuples holds the GIL for milliseconds, out of reach of the ticks).
        fresh: dict[tuple[str, str], set[str]] = {}
        share = Share(self._fg)  # a search being answered goes first (foreground.py)
        for (root, query, snippets), ats in asked.items():
            share.tick()
            qhash, words = _query_facts(query)
            last, times = max(ats), len(ats)
            per = rows.setdefault(root, {})
            written = self._written.get((root, qhash), ())
            new = fresh.setdefault((root, qhash), set())
            for k, (text, its) in _matched(snippets, words, share).items():
                row = per.get(k)
                if row is None:
                    per[k] = [text, times, last]
                else:
                    row[1] += times
                    if last > row[2]:
                        row[2] = last
                if k not in written and k not in new:
                    new.add(k)
                    tied = " ".join(sorted(words.intersection(its)))[:SAMPLE_CHARS]
                    queries.append((root, k, qhash, tied))
        counts = [(root, k, *row) for root, per in rows.items() for k, row in per.items()]
        # One transaction, written a slice at a time: a statement per row, each taking the
        # lock back from whoever holds it (state.lock keeps the state's other writers out).
        with self.state.lock, self.state.conn:
            for i in range(0, len(counts), ROWS_PER_SLICE):
                share.tick()
                self.state.conn.executemany(
                    "INSERT INTO line_hits(workspace_path, key, sample, hits, last_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(workspace_path, key) DO UPDATE SET "
                    "hits = hits + excluded.hits, last_at = excluded.last_at",
                    counts[i : i + ROWS_PER_SLICE],
                )
            for i in range(0, len(queries), ROWS_PER_SLICE):
                share.tick()
                self.state.conn.executemany(
                    "INSERT OR IGNORE INTO line_hit_queries(workspace_path, key, query, words) "
                    "VALUES (?, ?, ?, ?)",
                    queries[i : i + ROWS_PER_SLICE],
                )
        if self._pairs + len(queries) > PAIRS_KEPT:
            self._written.clear()
            self._pairs = 0
        for pair, keys in fresh.items():
            if keys:
                self._written.setdefault(pair, set()).update(keys)
        self._pairs += len(queries)

    # -- reading -----------------------------------------------------------------------
    def counts(self, root: Path, keys: Iterable[str]) -> dict[str, tuple[int, int]]:
        """(hits, distinct queries) of each of ``keys`` that was ever returned."""
        wanted = sorted(set(keys))
        out: dict[str, tuple[int, int]] = {}
        with self.state.lock:
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                marks = ",".join("?" * len(part))
                for k, hits, queries in self.state.conn.execute(
                    f"SELECT h.key, h.hits, (SELECT count(*) FROM line_hit_queries q "
                    f"WHERE q.workspace_path = h.workspace_path AND q.key = h.key) "
                    f"FROM line_hits h WHERE h.workspace_path = ? AND h.key IN ({marks})",
                    (str(root), *part),
                ):
                    out[str(k)] = (int(hits), int(queries))
        return out

    def query_words(self, root: Path, keys: Iterable[str]) -> dict[str, list[str]]:
        """For each of ``keys``, the words that tied each distinct query to it ('' for a
        query matched by meaning only, or counted before words were kept)."""
        wanted = sorted(set(keys))
        out: dict[str, list[str]] = {}
        with self.state.lock:
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                marks = ",".join("?" * len(part))
                for k, words in self.state.conn.execute(
                    f"SELECT key, words FROM line_hit_queries "
                    f"WHERE workspace_path = ? AND key IN ({marks})",
                    (str(root), *part),
                ):
                    out.setdefault(str(k), []).append(str(words))
        return out

    def summary(self, root: Path, top: int = 3) -> dict[str, Any] | None:
        """What status shows: lines counted, searches' hits, the most returned lines."""
        with self.state.lock:
            row = self.state.conn.execute(
                "SELECT count(*), coalesce(sum(hits), 0) FROM line_hits WHERE workspace_path = ?",
                (str(root),),
            ).fetchone()
            if not row or not row[0]:
                return None
            best = self.state.conn.execute(
                "SELECT h.sample, h.hits, (SELECT count(*) FROM line_hit_queries q "
                "WHERE q.workspace_path = h.workspace_path AND q.key = h.key) "
                "FROM line_hits h WHERE h.workspace_path = ? ORDER BY h.hits DESC LIMIT ?",
                (str(root), top),
            ).fetchall()
        return {
            "lines": int(str(row[0])),
            "hits": int(str(row[1])),
            "top": [
                {"line": str(s), "hits": int(str(h)), "queries": int(str(q))} for s, h, q in best
            ],
        }
