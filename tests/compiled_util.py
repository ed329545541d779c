"""Helpers for the tests that hold the compiled keyword search (shown.keyword_hits, the
short way) against the path it short-cuts (candidates_of ... fuse ... shown_hits, the long
way): two line caches filled alike, one for each way, their LRU order, the focus.timed_lines
calls each way makes, and the long way's fill_lines."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search import snippets
from memoryd.index.search.candidates import Candidate
from memoryd.index.search.focus import refocus, timed_lines
from memoryd.index.search.snippets import LineStems


def twin_caches(
    tokenize: TokenizeOffsets, texts: Mapping[int, str], cached: Collection[int] | None = None
) -> list[LineStems]:
    """Two line caches holding the lines of the chunks ``cached`` (every one of ``texts``
    when None), in that order: one for each way."""
    twin = [LineStems(), LineStems()]
    for cache in twin:
        for i in texts if cached is None else cached:
            cache.get(i, texts[i], tokenize)
    return twin


def lru(cache: LineStems) -> list[int]:
    """The cached chunks, least recently used first (each one's last use: a tick)."""
    return sorted(cache._used_at, key=cache._used_at.__getitem__)


def counted_timed_lines(calls: list[str]) -> Callable[[str], tuple[bool, ...]]:
    """focus.timed_lines, each text it is asked appended to ``calls`` (set in place of
    shown's for the short way, of fusion's for the long way)."""

    def timed(text: str) -> tuple[bool, ...]:
        calls.append(text)
        return timed_lines(text)

    return timed


def fill_lines_of(
    cache: LineStems,
    weights: dict[str, float],
    when: bool,
    tokenize: TokenizeOffsets,
    filled: list[int],
) -> Callable[[Candidate], None]:
    """The long way's fill_lines, as run_search gives fuse and shown_hits: a candidate's
    lines scored from its chunk's stems (tokenized into ``cache`` when not there), each
    chunk it fills appended to ``filled``."""

    def fill_lines(c: Candidate) -> None:
        if c.lines is None:
            filled.append(c.id)
            scores = snippets.line_scores([cache.get(c.id, c.text, tokenize)], weights)[0]
            c.lines = refocus(c.text, scores, when)

    return fill_lines
