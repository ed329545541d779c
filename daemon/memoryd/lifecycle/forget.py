"""Forget: what to remove (a line range, a search's matches, a session), and the change that
removes it.

Selection reads the files as they are; the change is computed again from the bytes read
under the append locks of every file it touches (the same serialised writer as append), so
a line that moved or changed since it was shown is never removed blindly: the request fails
and says so. The change itself is the journal's (journal.py): whole or absent across a
kill -9, its pre-image kept for ``forget.keep_days`` unless ``purge``.

A session is forgotten whole: the lines the provenance ledger says it wrote (flush, append
with its session id), the sections flush and the fallback summary wrote for it (their
headings name it), and its transcript when it lies in the workspace's ``sessions/`` folder.
The ledger keeps a ``forget_session`` mark, so it is never flushed or summarised again.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.errors import ForbiddenPath, InvalidParams, NotFound
from memoryd.files.beneath import open_beneath
from memoryd.files.layout import (
    ARCHIVE_DIR,
    OPENCLAW_SESSIONS_DIR,
    SESSIONS_DIR,
    TRANSCRIPT_SUFFIX,
    Layout,
    transcripts_dir,
)
from memoryd.files.lines import line_key, normalize_line
from memoryd.files.openclaw_mirror import file_name
from memoryd.files.provenance import Ledger
from memoryd.files.session_headings import session_headings
from memoryd.files.transcripts import head_sessions
from memoryd.lifecycle.hits import words_of
from memoryd.lifecycle.journal import Change, FileChange
from memoryd.secrets import mask

__all__ = [
    "Removal",
    "Selection",
    "build_change",
    "by_hits",
    "by_range",
    "by_session",
    "with_copies",
]

MAX_LINES: Final = 10_000  # one forget; more is a file to delete by hand
_HEADING: Final = re.compile(r"^(#{1,6})\s")
_RANGE: Final = re.compile(r"^\s*([0-9]+)\s*(?:-\s*([0-9]+))?\s*$")


@dataclass
class Removal:
    """Lines of one file to remove (1-based), with the text each had when selected."""

    rel: str  # the file itself: a link inside the workspace is followed, never replaced
    lines: dict[int, str] = field(default_factory=dict)
    whole_file: bool = False  # a transcript: the file goes
    aliases: set[str] = field(default_factory=set)  # links to it the request named

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.rel}
        if self.aliases:
            out["via"] = sorted(self.aliases)
        if self.whole_file:
            out["whole_file"] = True
            return out
        out["lines"] = _ranges(sorted(self.lines))
        out["text"] = mask("\n".join(self.lines[n] for n in sorted(self.lines)))
        return out


@dataclass
class Selection:
    removals: list[Removal]
    session: str | None = None
    left: list[str] = field(default_factory=list)  # transcripts outside the workspace
    unmatched: list[dict[str, Any]] = field(default_factory=list)  # hits found by meaning

    @property
    def line_count(self) -> int:
        return sum(len(r.lines) for r in self.removals)

    def spans(self) -> list[tuple[str, int | None, int | None]]:
        """(path, first line, last line) of each file's removal; (path, None, None): the
        whole file (what index/forget_cache.py reads the chunks of)."""
        return [
            (r.rel, None, None) if r.whole_file else (r.rel, min(r.lines), max(r.lines))
            for r in self.removals
            if r.whole_file or r.lines
        ]


def _ranges(lines: list[int]) -> list[str]:
    out: list[str] = []
    start = prev = None
    for n in lines:
        if prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return out


def parse_range(text: str) -> tuple[int, int]:
    m = _RANGE.match(text)
    if m is None:
        raise InvalidParams("lines must be N or A-B (1-based, inclusive)", {"param": "lines"})
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if first < 1 or last < first:
        raise InvalidParams("lines must be A-B with 1 <= A <= B", {"param": "lines"})
    return first, last


def read_file(layout: Layout, rel: str) -> bytes:
    """A memory file's bytes, opened beneath the workspace by the reading rule."""
    return read_real(layout, rel)[1]


def read_real(layout: Layout, rel: str) -> tuple[str, bytes]:
    """(the file's own path, links inside the workspace followed; its bytes)."""
    opened = layout.open_memory(rel)
    with os.fdopen(opened.fd, "rb") as f:
        return opened.rel, f.read()


def _removal(found: dict[str, Removal], real: str, named: str) -> Removal:
    """The removal of file ``real``, named ``named`` by the request (a link to it, maybe)."""
    removal = found.setdefault(real, Removal(real))
    if named != real:
        removal.aliases.add(named)
    return removal


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "surrogateescape").splitlines(keepends=True)


def by_range(layout: Layout, rel: str, first: int, last: int) -> Selection:
    rel = layout.requested_rel(rel)
    if layout.classify(rel) != "memory":
        raise InvalidParams(f"{rel} is not a memory file", {"param": "path"})
    real, data = read_real(layout, rel)
    lines = _lines(data)
    if first > len(lines):
        raise InvalidParams(f"{rel} has {len(lines)} lines", {"param": "lines"})
    last = min(last, len(lines))
    if last - first + 1 > MAX_LINES:
        raise InvalidParams(f"at most {MAX_LINES} lines at once", {"param": "lines"})
    removal = _removal({}, real, rel)
    removal.lines = {n: lines[n - 1].rstrip("\r\n") for n in range(first, last + 1)}
    return Selection([removal])


def _stem(word: str) -> str:
    """A word without its plainest English endings: "protocols" matches "protocol"."""
    for end in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(end) and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


def _matches(words: set[str], text: str) -> int:
    """How many of the query's words (stemmed) line ``text`` holds."""
    return len(words & {_stem(w) for w in words_of(text)})


def by_hits(layout: Layout, hits: Iterable[dict[str, Any]], query: str) -> Selection:
    """The lines of a search's hits that match the query: of each hit's snippet, the lines
    holding the most of its words (the words hit counting matches by), never a neighbour
    that only stands beside one. A hit no line of which holds a word (found by meaning
    alone) selects nothing: it is listed in ``unmatched`` for the person to name lines."""
    words = {_stem(w) for w in words_of(query)}
    found: dict[str, Removal] = {}
    cache: dict[str, tuple[str, list[str]]] = {}
    unmatched: list[dict[str, Any]] = []
    for hit in hits:
        if hit.get("source", "memory") != "memory":
            continue
        rel = str(hit["path"])
        first = int(hit.get("snippet_start_line") or hit["start_line"])
        last = int(hit.get("snippet_end_line") or hit["end_line"])
        if rel not in cache:
            try:
                real, data = read_real(layout, rel)
            except (NotFound, ForbiddenPath, OSError):
                continue
            cache[rel] = (real, _lines(data))
        real, lines = cache[rel]
        shown = {
            n: text
            for n in range(first, min(last, len(lines)) + 1)
            if (text := lines[n - 1].rstrip("\r\n")).strip() and not _HEADING.match(text)
        }
        score = {n: _matches(words, text) for n, text in shown.items()}
        best = max(score.values(), default=0)
        if best == 0:
            unmatched.append({"path": rel, "lines": _ranges(sorted(shown))})
            continue
        _removal(found, real, rel).lines.update(
            {n: text for n, text in shown.items() if score[n] == best}
        )
    return Selection([r for r in found.values() if r.lines], unmatched=unmatched)


MAX_PROBES: Final = 32  # lines to look for beyond this: every file is keyed line by line


class _Probe:
    """Which files may hold a copy of some lines, before they are split and hashed line by
    line (at 100k chunks, keying every line of every file was most of a purge's CPU).

    A copy has the line's normalised text (``normalize_line``: case-folded, whitespace
    collapsed, a leading marker and trailing annotations dropped), so each of that text's
    words (split at whitespace, punctuation kept: "olivia:" passes over far more files than
    "olivia") is in the copy's own case-folding too; a file whose case-folded text lacks one
    of a line's words holds no copy of it. A word with a '<' is not looked for: dropping one
    of our annotations can join the text before it to a comment after it. Case-folding the
    file, not lowercasing its bytes, is what finds a copy that differs by more than ASCII
    case ("ﬁnance" for "finance", "STRASSE" for "Straße"); an ASCII file is lowercased as
    bytes (the same folding, no decoding), and holds no copy of a line with a non-ASCII
    word. Beyond MAX_PROBES lines every file is keyed: that many searches per file cost as
    much."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.lines: list[list[str]] | None = []
        for text in texts:
            norm = normalize_line(text)
            if not norm:
                continue  # a blank or heading line: no key, never a copy
            words = sorted({w for w in norm.split() if "<" not in w}, key=len, reverse=True)
            words = [w for w in words if len(w) >= 3] or words[:1]  # short ones pass anyway
            if not words or len(self.lines) >= MAX_PROBES:
                self.lines = None  # nothing to look for, or too much: every file is keyed
                break
            self.lines.append(words)  # the longest (rarest) first
        self._ascii = [
            [w.encode() for w in words]
            for words in self.lines or ()
            if all(w.isascii() for w in words)
        ]

    def may_hold(self, data: bytes) -> bool:
        if self.lines is None:
            return True
        if data.isascii():
            low = data.lower()
            return any(all(w in low for w in words) for words in self._ascii)
        folded = data.decode("utf-8", "surrogateescape").casefold()
        return any(all(w in folded for w in words) for words in self.lines)


def with_copies(layout: Layout, sel: Selection) -> Selection:
    """``sel`` and every other line of the memory files that is the same line (its
    ``line_key``): what a purge removes too (hippocampus promoted it into MEMORY.md, a
    person pasted it twice). Shown in the preview like the rest."""
    keys = {line_key(t) for r in sel.removals for t in r.lines.values()} - {""}
    if not keys:
        return sel
    probe = _Probe(t for r in sel.removals for t in r.lines.values())
    found = {r.rel: r for r in sel.removals}
    for rel in _memory_files(layout):
        try:
            real, data = read_real(layout, rel)
        except (NotFound, ForbiddenPath, OSError):
            continue
        if not probe.may_hold(data):
            continue
        for n, raw in enumerate(_lines(data), 1):
            text = raw.rstrip("\r\n")
            if line_key(text) in keys:
                removal = _removal(found, real, rel)
                if not removal.whole_file:
                    removal.lines.setdefault(n, text)
    return Selection(list(found.values()), sel.session, sel.left, sel.unmatched)


def _memory_files(layout: Layout) -> Iterator[str]:
    for f in layout.iter_files():
        if f.source == "memory":
            yield f.rel


def by_session(
    layout: Layout, ledger: Ledger, session: str, flushed: Iterable[str] = ()
) -> Selection:
    """Every line the session wrote, the sections written for it, its transcript(s).
    ``flushed``: the transcripts flush read for it (absolute paths, from the state)."""
    ledger.refresh()
    keys = {r.k for r in ledger.records_for_session(session)}
    headings = (
        *session_headings(session),  # flush's and an agent's own (the OpenClaw plugin's)
        f"Session summary ({session})",  # the fallback summary's
    )
    found: dict[str, Removal] = {}
    for rel in _memory_files(layout):
        try:
            real, data = read_real(layout, rel)
        except (NotFound, ForbiddenPath, OSError):
            continue
        chosen = _session_lines(_lines(data), keys, headings)
        if chosen:
            _removal(found, real, rel).lines.update(chosen)
    removals = list(found.values())
    left: list[str] = []
    for rel in _transcripts_of(layout, session, flushed, left):
        removals.append(Removal(rel, whole_file=True))
    return Selection(removals, session=session, left=left)


def _session_lines(lines: list[str], keys: set[str], headings: tuple[str, ...]) -> dict[int, str]:
    chosen: dict[int, str] = {}
    section_level = 0  # inside a section written for the session: its heading's level
    for n, raw in enumerate(lines, 1):
        text = raw.rstrip("\r\n")
        m = _HEADING.match(text)
        if m is not None:
            level = len(m.group(1))
            if section_level and level <= section_level:
                section_level = 0
            title = text[level:].strip()
            if not section_level and title.startswith(headings):
                section_level = level
        if section_level or (keys and text.strip() and line_key(text) in keys):
            chosen[n] = text
    return chosen


def _transcripts_of(
    layout: Layout, session: str, flushed: Iterable[str], left: list[str]
) -> list[str]:
    found: set[str] = set()
    folder = transcripts_dir(layout.root)
    if folder.is_dir():
        for entry in os.scandir(folder):
            if entry.name.endswith(TRANSCRIPT_SUFFIX) and entry.is_file(follow_symlinks=False):
                rel = f"{SESSIONS_DIR}/{entry.name}"
                if entry.name[: -len(TRANSCRIPT_SUFFIX)] == session or _names(layout, rel, session):
                    found.add(rel)
    # OpenClaw's sessions, copied from its store (files/openclaw_mirror.py): one per agent.
    copies = folder / OPENCLAW_SESSIONS_DIR
    if copies.is_dir():
        name = file_name(session) + TRANSCRIPT_SUFFIX
        for agent in os.scandir(copies):
            if agent.is_dir(follow_symlinks=False) and os.path.isfile(Path(agent.path) / name):
                found.add(f"{SESSIONS_DIR}/{OPENCLAW_SESSIONS_DIR}/{agent.name}/{name}")
    for path in flushed:
        inside = layout.rel(Path(path))
        if inside is None:
            left.append(path)
        elif inside.startswith(f"{SESSIONS_DIR}/"):
            found.add(inside)
    names = {f"{session}{TRANSCRIPT_SUFFIX}", f"{file_name(session)}{TRANSCRIPT_SUFFIX}"}
    found |= _archived(folder, names | {rel.rsplit("/", 1)[1] for rel in found})
    return sorted(found)


def _archived(folder: Path, names: set[str]) -> set[str]:
    """Retention's gzip archives of these transcripts (``sessions/archive/YYYY-MM/<name>.gz``,
    ``<name>.N.gz``; OpenClaw's copies under ``openclaw/<agent>/`` there)."""
    top = folder / ARCHIVE_DIR
    pattern = re.compile("(?:" + "|".join(re.escape(n) for n in names) + r")(?:\.\d+)?\.gz")
    out: set[str] = set()
    if not top.is_dir() or top.is_symlink():
        return out
    for month in [*top.glob("*"), *top.glob(f"*/{OPENCLAW_SESSIONS_DIR}/*")]:
        if month.is_symlink() or not month.is_dir():
            continue
        for entry in os.scandir(month):
            if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                out.add(Path(entry.path).relative_to(folder.parent).as_posix())
    return out


def _names(layout: Layout, rel: str, session: str) -> bool:
    """Whether transcript ``rel``'s head names ``session`` (opened beneath the root)."""
    try:
        opened = open_beneath(layout.root, rel, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    return session in head_sessions(opened.fd)


def _locate(lines: list[str], removal: Removal) -> dict[int, str]:
    """Where the removal's lines are now: each at its number when it still reads the same
    there, else at the one place in the file that reads so (an outside writer inserted or
    removed lines above it). InvalidParams when a line is gone or no longer unique."""
    found: dict[int, str] = {}
    where: dict[str, list[int]] | None = None
    for n, text in sorted(removal.lines.items()):
        if n <= len(lines) and lines[n - 1].rstrip("\r\n") == text and n not in found:
            found[n] = text
            continue
        if where is None:
            where = {}
            for i, line in enumerate(lines, 1):
                where.setdefault(line.rstrip("\r\n"), []).append(i)
        places = [i for i in where.get(text, []) if i not in found]
        if len(places) != 1:
            raise InvalidParams(
                f"{removal.rel} changed since its lines were selected (line {n}): "
                "nothing was forgotten there; run the forget again",
                {"path": removal.rel, "line": n},
            )
        found[places[0]] = text
    return found


def cut(data: bytes, removal: Removal) -> bytes:
    """``data`` without the removal's lines; a blank line left doubled by the cut is dropped.
    The removal's line numbers become where the lines were found (``_locate``);
    InvalidParams when a line no longer reads as it did when selected."""
    lines = _lines(data)
    removal.lines = _locate(lines, removal)
    kept: list[str] = []
    for n, line in enumerate(lines, 1):
        if n in removal.lines:
            continue
        if not line.strip() and kept and not kept[-1].strip() and n - 1 in removal.lines:
            continue  # the cut joined two blank lines
        kept.append(line)
    while kept and not kept[0].strip() and 1 in removal.lines:
        kept.pop(0)
    return "".join(kept).encode("utf-8", "surrogateescape")


def build_change(
    layout: Layout, sel: Selection, keep: bool, meta: dict[str, Any]
) -> tuple[Change, dict[str, str]]:
    """The journal change removing ``sel``, from the files as they are now (the caller holds
    their locks), and the files whose lines cannot be found any more (file -> why)."""
    files: list[FileChange] = []
    left: dict[str, str] = {}
    for r in sel.removals:
        if r.whole_file:
            with contextlib.suppress(FileNotFoundError):
                opened = open_beneath(layout.root, r.rel, os.O_RDONLY | os.O_CLOEXEC)
                with os.fdopen(opened.fd, "rb") as f:
                    files.append(FileChange(r.rel, f.read(), None))
            continue
        try:
            before = read_file(layout, r.rel)
            files.append(FileChange(r.rel, before, cut(before, r)))
        except (InvalidParams, NotFound) as exc:
            left[r.rel] = str(exc)
    return Change("forget", files, meta, keep, reindex=True), left
