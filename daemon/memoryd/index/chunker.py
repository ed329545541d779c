"""Split memory text into overlapping chunks of at most ``chunk_tokens`` tokens.

Markdown is split recursively: whole sections (by heading level, outermost first), then
paragraphs, then lines, then words; the resulting units are packed greedily, so small
neighbouring sections share a chunk. A chunk that continues the previous chunk's section
starts with the previous chunk's last lines (``overlap_tokens`` worth, whole lines only).
Transcripts reuse the same packing through ``chunk_lines``.

An append re-chunks only the tail (``chunk_appended``), with exactly the chunks a whole
re-chunk would give: parsing runs left to right, the top-level split cuts the document
into segments that a later line cannot change (all but the last), and packing is a left
to right scan. So the state before each top-level segment (``MarkdownState``) is enough
to resume at the last segment that an append leaves intact; an append that changes the
top-level rule (a heading above every heading so far, a first paragraph break) does not
resume.

Token cost is the bundled WordPiece tokenizer's count (token_costs.py).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, overload

from memoryd.index import token_costs
from memoryd.index.token_costs import count_tokens
from memoryd.records import Fields, Record

if TYPE_CHECKING:
    from dataclasses import dataclass as fields_record
    from dataclasses import dataclass as frozen_record  # records.py says why

    from tokenizers import Tokenizer
else:
    from memoryd.records import fields_record, frozen_record

_SPACE = re.compile(r"\s")
# Chinese and Japanese sentences end without a space after them: a line of them is cut
# after one of these, as between words, rather than mid-word.
_CJK_STOPS = frozenset("。！？；…")
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*\r?$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_LEADS = frozenset(" #`~")  # what a line that _FENCE or _HEADING can match starts with


@frozen_record(frozen=True, eq=False, repr=False)
class Chunk(Record):
    """A chunk of a file: its lines, its text and the headings above it."""

    start_line: int  # 1-based, inclusive, physical lines of the input
    end_line: int
    text: str
    heading_path: tuple[str, ...]

    @property
    def heading(self) -> str:
        """The heading path as the chunks table's heading column holds it."""
        return " > ".join(self.heading_path)


Unit = tuple[int, int, bool]  # [lo, hi) lines, and whether it must start a new chunk
Packing = tuple["tuple[int, int] | None", int]  # the chunk being filled, the last one's start


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class _Parse(Fields):
    """The markdown parser between two lines."""

    fence: tuple[str, int] | None = None  # (char, length) of the open fence
    stack: tuple[tuple[int, str], ...] = ()  # (level, title) of the open headings
    path: tuple[str, ...] = ()
    section: int = 0


@frozen_record(frozen=True, eq=False, repr=False)
class _Mark(Record):
    """Everything before top-level segment ``line``: the units split before it (and whether
    the next must start a new chunk), the chunks packed before it and the packing state."""

    line: int
    units: int
    fresh: bool
    chunks: int = 0
    packing: Packing = (None, -1)


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class MarkdownState(Fields):
    """What ``chunk_appended`` resumes from: the last chunking of a document, without its
    text (about 100 bytes a line)."""

    doc: _Doc
    parse: _Parse  # before the last line (an append may extend that line)
    rule: int  # the top-level split: a heading level, _PARAGRAPHS, _LINES, or _WHOLE
    marks: list[_Mark]  # one per top-level segment
    chunks: int  # how many chunks the document gave
    overlap: int
    top: int  # the lowest level of the headings after the first line and before the last

    @property
    def lines(self) -> int:
        return len(self.doc.prefix) - 1

    def needs_from(self) -> int:
        """The first line (index) an append needs the text of: the chunker resumes at the
        last top-level segment the append leaves intact, and the chunk being filled there,
        or its overlap, may reach back to the line after the previous chunk's start."""
        k = _resume_mark(self)
        if k < 0:
            return 0
        mark = self.marks[k]
        return min(mark.line, max(0, mark.packing[1] + 1))


_WHOLE, _LINES, _PARAGRAPHS = -2, -1, 0  # top-level rules that are not a heading level
_DEEPEST, _NO_HEADING = 6, 7


def chunk_markdown(
    text: str, tokenizer: Tokenizer, chunk_tokens: int = 400, overlap_tokens: int = 80
) -> list[Chunk]:
    return chunk_markdown_state(text, tokenizer, chunk_tokens, overlap_tokens)[0]


def chunk_markdown_state(
    text: str, tokenizer: Tokenizer, chunk_tokens: int = 400, overlap_tokens: int = 80
) -> tuple[list[Chunk], MarkdownState]:
    """The chunks, and the state ``chunk_appended`` resumes from after an append."""
    _check_budget(chunk_tokens, overlap_tokens)
    lines = text.split("\n")
    doc = _Doc(lines, range(1, len(lines) + 1), tokenizer, chunk_tokens)
    parse = doc.parse_markdown(0, _Parse())
    rule = doc.rule(0, len(lines))
    top = min([_NO_HEADING, *(doc.level[h] for h in doc.headings if 0 < h < len(lines) - 1)])
    state = MarkdownState(doc, parse, rule, [], 0, overlap_tokens, top)
    chunks = _chunk_from(state, _Mark(0, 0, False))
    return chunks, state


def chunk_appended(
    state: MarkdownState, text: str, tokenizer: Tokenizer, first: int = 0
) -> tuple[int, list[Chunk]] | None:
    """Chunks of the document ``state`` was made from with lines added at its end (the
    last line may have grown), given as ``text``: the new document from line index
    ``first`` on, which must be at most ``state.needs_from()``. Returns (how many of the
    old chunks stay as they are, the chunks after them): exactly what ``chunk_markdown``
    of the whole new document gives. None when an append cannot resume (the top-level
    split changed): chunk it whole. ``state`` is updated."""
    doc = state.doc
    old = state.lines
    if state.rule == _WHOLE or first > state.needs_from():
        return None
    lines = _Lines(text.split("\n"), first)
    if len(lines) < old:
        return None
    doc.extend(lines, old - 1, tokenizer)  # the old last line may have grown
    state.parse = doc.parse_markdown(old - 1, state.parse)
    n = len(lines)
    # The top-level rule as doc.rule(0, n) gives it, without going over every heading.
    new = doc.headings[bisect.bisect_left(doc.headings, max(1, old - 1)) :]
    top = min([state.top, *(doc.level[h] for h in new)])
    if doc.cost(0, n) <= doc.budget or n == 1:
        rule = _WHOLE
    elif top <= _DEEPEST:
        rule = top
    else:
        rule = doc.rule(0, n)  # no heading: paragraphs or lines
    state.top = min([state.top, *(doc.level[h] for h in new if h < n - 1)])
    if rule != state.rule:  # (doc is consistent again: the caller chunks it whole)
        return None
    k = _resume_mark(state)
    if k < 0:
        return None
    mark = state.marks[k]
    del state.marks[k:]
    kept = mark.chunks
    tail = _chunk_from(state, mark)
    state.chunks = kept + len(tail)
    return kept, tail


def _resume_mark(state: MarkdownState) -> int:
    """The last top-level segment that starts before the document's last line: an append
    leaves it unchanged up to that line, and it still starts a segment (-1: none)."""
    return bisect.bisect_right(state.marks, state.lines - 2, key=lambda m: m.line) - 1


class _Lines(Sequence[str]):
    """A document's lines from index ``first`` on, indexed as in the whole document (an
    append needs only the lines from its resumption on: the head is never split again)."""

    def __init__(self, lines: list[str], first: int) -> None:
        self.lines = lines
        self.first = first

    def __len__(self) -> int:
        return self.first + len(self.lines)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1 or start < self.first:
                raise IndexError(f"lines {start}:{stop} reach before line {self.first}")
            return self.lines[start - self.first : stop - self.first]
        if i < 0:
            i += len(self)
        if i < self.first:
            raise IndexError(f"line {i} is before line {self.first}")
        return self.lines[i - self.first]


def _chunk_from(state: MarkdownState, mark: _Mark) -> list[Chunk]:
    """Split and pack the document from top-level segment ``mark`` on, recording marks."""
    doc = state.doc
    n = len(doc.texts)
    units: list[Unit] = []
    starts: list[tuple[int, int, bool]] = []  # (line, unit index, fresh) per segment
    doc.break_next = mark.fresh
    if state.rule == _WHOLE:
        doc.split(0, n, doc.budget, units)
    else:
        cuts = doc.cuts(state.rule, mark.line, n)
        for a, b in pairwise([mark.line, *cuts, n]):
            starts.append((a, mark.units + len(units), doc.break_next))
            doc.split(a, b, doc.budget, units)
            if state.rule > 0 and b - a > 1 and doc.cost(a, b) > doc.budget:
                doc.break_next = True
    record = {u: (line, fresh) for line, u, fresh in starts}
    chunks = doc.pack(
        units, doc.budget, state.overlap, mark.packing, mark.units, mark.chunks, record, state.marks
    )
    state.chunks = mark.chunks + len(chunks)
    doc.texts = ()  # the caller holds the text; the state keeps only what it derived
    return chunks


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
        self.budget = budget
        n = len(texts)
        self.blank = [not t or t.isspace() for t in texts]
        costs, self.long_pieces = token_costs.costs(texts, tokenizer, keep_over=budget)
        self.prefix = [0]
        for c in costs:
            self.prefix.append(self.prefix[-1] + c)
        self.paths: list[tuple[str, ...]] = [()] * n
        self.section = [0] * n  # index of the heading that opens each line's section
        self.level = [0] * n  # heading level, 0 for other lines
        self.headings: list[int] = []  # indices of heading lines, ascending
        self.in_fence = [False] * n
        self.break_next = False  # split(): the next unit must start a new chunk

    def extend(self, texts: Sequence[str], start: int, tokenizer: Tokenizer) -> None:
        """The markdown lines from index ``start`` on are now ``texts[start:]`` (those
        before it unchanged): their costs, to be parsed from ``start``."""
        self.texts = texts
        self.numbers = range(1, len(texts) + 1)
        self.tokenizer = tokenizer
        new = texts[start:]
        del self.blank[start:]
        self.blank += [not t or t.isspace() for t in new]
        costs, pieces = token_costs.costs(new, tokenizer, keep_over=self.budget)
        self.long_pieces = {i: p for i, p in self.long_pieces.items() if i < start}
        self.long_pieces.update((start + i, p) for i, p in pieces.items())
        del self.prefix[start + 1 :]
        total = self.prefix[-1]
        for c in costs:
            total += c
            self.prefix.append(total)
        for column in (self.paths, self.section, self.level, self.in_fence):
            del column[start:]
        self.paths += [()] * len(new)
        self.section += [0] * len(new)
        self.level += [0] * len(new)
        self.in_fence += [False] * len(new)
        del self.headings[bisect.bisect_left(self.headings, start) :]

    def cost(self, lo: int, hi: int) -> int:
        return self.prefix[hi] - self.prefix[lo]

    def parse_markdown(self, start: int, state: _Parse) -> _Parse:
        """Parse the lines from ``start`` on, the parser as ``state`` says; the parser
        before the last line. Only lines that can open, close or be a fence or heading are
        matched (at most 3 spaces, then ` ~ or #): the others take the state in force,
        filled in by slices."""
        texts, n = self.texts, len(self.texts)
        fence = state.fence
        fence_at = start  # the first line of the open fence not yet marked
        stack = list(state.stack)
        path = state.path
        section = state.section
        last = n - 1
        before_last = state
        since = start  # lines [since, i) hold path and section
        for i in [i for i in range(start, n) if texts[i][:1] in _LEADS]:
            if i == last:
                before_last = _Parse(fence, tuple(stack), path, section)
            line = texts[i]
            m = _FENCE.match(line)
            if fence is not None:
                if m and m[1][0] == fence[0] and len(m[1]) >= fence[1] and not m[2].strip():
                    self.in_fence[fence_at : i + 1] = [True] * (i + 1 - fence_at)
                    fence = None
            elif m and not (m[1][0] == "`" and "`" in m[2]):  # CommonMark: no ` in info
                fence = (m[1][0], len(m[1]))
                fence_at = i
            elif (h := _HEADING.match(line)) and h[2].strip():
                self.paths[since:i] = [path] * (i - since)
                self.section[since:i] = [section] * (i - since)
                since = i
                level = len(h[1])
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, h[2].strip()))
                path = tuple(title for _, title in stack)
                section = i
                self.level[i] = level
                self.headings.append(i)
        if start <= last and texts[last][:1] not in _LEADS:
            before_last = _Parse(fence, tuple(stack), path, section)
        if fence is not None:  # still open: to the end
            self.in_fence[fence_at:] = [True] * (n - fence_at)
        self.paths[since:] = [path] * (n - since)
        self.section[since:] = [section] * (n - since)
        return before_last

    def rule(self, lo: int, hi: int) -> int:
        """How split() cuts [lo, hi): _WHOLE when it fits, else at its top-level headings
        (their level), else at paragraph starts, else at every line."""
        if self.cost(lo, hi) <= self.budget or hi - lo == 1:
            return _WHOLE
        inner = self.headings[
            bisect.bisect_right(self.headings, lo) : bisect.bisect_left(self.headings, hi)
        ]
        if inner:
            return min(self.level[h] for h in inner)
        return _PARAGRAPHS if next(self._paragraphs(lo, hi), None) is not None else _LINES

    def cuts(self, rule: int, lo: int, hi: int) -> list[int]:
        """Where ``rule`` cuts [lo, hi)."""
        if rule > 0:
            inner = self.headings[
                bisect.bisect_right(self.headings, lo) : bisect.bisect_left(self.headings, hi)
            ]
            return [h for h in inner if self.level[h] == rule]
        if rule == _PARAGRAPHS:
            return list(self._paragraphs(lo, hi))
        return list(range(lo + 1, hi))

    def _paragraphs(self, lo: int, hi: int) -> Iterator[int]:
        """Paragraph starts in (lo, hi); blank lines inside a code fence do not end one."""
        blank, fenced = self.blank, self.in_fence
        for k in range(lo + 1, hi):
            if blank[k - 1] and not fenced[k - 1] and not (blank[k] and not fenced[k]):
                yield k

    def split(self, lo: int, hi: int, budget: int, out: list[Unit]) -> None:
        """Append units covering [lo, hi): the largest structural pieces that fit.

        A unit is (lo, hi, fresh); fresh units start a new chunk. The unit after a section
        that had to be split is fresh, so a chunk never runs from the tail of a long section
        into the next one (its heading would then sit mid-chunk, under a stale path).
        """
        rule = self.rule(lo, hi)
        if rule == _WHOLE:
            out.append((lo, hi, self.break_next))
            self.break_next = False
            return
        for a, b in pairwise([lo, *self.cuts(rule, lo, hi), hi]):
            self.split(a, b, budget, out)
            if rule > 0 and b - a > 1 and self.cost(a, b) > budget:
                self.break_next = True

    def pack(
        self,
        units: Sequence[Unit],
        budget: int,
        overlap: int,
        packing: Packing = (None, -1),
        first: int = 0,
        before: int = 0,
        record: dict[int, tuple[int, bool]] | None = None,
        marks: list[_Mark] | None = None,
    ) -> list[Chunk]:
        """Pack units into chunks, from ``packing`` (after unit ``first`` - 1 and ``before``
        chunks); at the unit numbers in ``record``, a top-level segment starts: its _Mark
        goes to ``marks``."""
        out: list[Chunk] = []
        cur, prev_lo = packing  # [lo, hi) of the chunk being filled; the previous one's lo:
        # overlap never swallows the previous chunk whole
        for u, (a, b, fresh) in enumerate(units, first):
            if record is not None and marks is not None and u in record:
                line, was_fresh = record[u]
                marks.append(_Mark(line, u, was_fresh, before + len(out), (cur, prev_lo)))
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


def _fragments(
    text: str, tokenizer: Tokenizer, budget: int, pieces: list[tuple[int, int]] | None = None
) -> list[str]:
    """Split one over-budget line at whitespace (at token boundaries inside a huge word)."""
    if pieces is None:
        pieces = token_costs.pieces(tokenizer.encode(text, add_special_tokens=False))
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
