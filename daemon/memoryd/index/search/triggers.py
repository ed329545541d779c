"""Recall's first lane: curated lines whose trigger phrases the prompt matches strongly.

A line of MEMORY.md or USER.md annotated ``<!-- trigger: gateway setup, network safety -->``
is injected before the ranked hits when the prompt names one of its phrases, at most
MAX_TRIGGERED of them. No model call beyond the embeddings search already uses:

- lexically, the phrase occurs in the prompt as whole words (case and spacing aside): one
  precompiled alternation over all phrases, one pass over the prompt;
- or by meaning, the phrase's vector and the prompt's have a cosine of at least
  MIN_COSINE (the prompt's vector is the one search embedded; each phrase is embedded once
  and kept).

A tagged line (``<!-- project: KEY -->``) qualifies only while its project is active.
Untrusted and system lines never carry triggers (line_meta.py drops their annotations).
The lane's table is rebuilt only when the line meta changed; a match costs microseconds
at 10k lines (bench/recall_triggers.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.embeddings.base import Vectors
from memoryd.errors import EmbeddingError, MemorydError
from memoryd.files.annotations import strip_annotations
from memoryd.files.layout import CURATED_FILES, Layout
from memoryd.index.line_meta import LineMetaMap
from memoryd.records import Record
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from dataclasses import dataclass as frozen_record  # records.py says why

    import numpy.typing as npt
else:
    from memoryd.records import frozen_record

MAX_TRIGGERED = 3
# The bundled model, phrase against prompt: a restatement 0.65-0.71 ("gateway setup" ~ "I'm
# setting up the gateway on the new box"), a looser paraphrase 0.35-0.53 ("deploy" ~ "ship the
# release to production"), unrelated prompts under 0.06. 0.6 takes restatements only: the
# lane is for strong matches, the ranked hits take the rest.
MIN_COSINE = 0.6
_MAX_LINE_CHARS = 1000
_MAX_FILE_BYTES = 16 << 20


@frozen_record(frozen=True, eq=False, repr=False)
class Triggered(Record):
    """A line whose trigger phrase a query matched."""

    path: str
    line: int
    text: str  # the line without its annotations
    phrase: str  # the phrase that matched
    score: float  # 1.0 for a lexical match, else the cosine


@frozen_record(frozen=True, eq=False, repr=False)
class _Entry(Record):
    """A line with trigger phrases, as the triggers' table holds it."""

    path: str
    line: int
    text: str
    phrases: tuple[str, ...]
    project: str | None
    importance: int


class TriggerLane:
    def __init__(self, meta: LineMetaMap, root: Path) -> None:
        self.meta = meta
        self.root = root
        self._lock = threading.Lock()
        self._generation = -1
        self._entries: list[_Entry] = []
        self._by_phrase: dict[str, list[int]] = {}
        self._pattern: re.Pattern[str] | None = None
        self._vectors: dict[str, Vectors] = {}  # phrase -> its vector, kept
        self._matrix: npt.NDArray[np.float32] | None = None  # their unit rows, per table
        self._matrix_phrases: list[str] = []
        self._matrix_generation = -1

    def settled(self, with_vectors: bool) -> bool:
        """Whether :meth:`match` would neither read a file nor embed: the table is built for
        the index as it is, and it holds no line, or no vectors are compared."""
        with self._lock:
            current = self._generation == self.meta.generation
            return current and (not self._entries or not with_vectors)

    def _table(self) -> tuple[list[_Entry], dict[str, list[int]], re.Pattern[str] | None]:
        with self._lock:
            if self._generation != self.meta.generation:
                self._rebuild()
            return self._entries, self._by_phrase, self._pattern

    def _rebuild(self) -> None:
        self._generation = self.meta.generation
        wanted = [
            (path, n, m) for path, n, m in self.meta.items() if m.triggers and path in CURATED_FILES
        ]
        lines: dict[str, list[str]] = {}
        entries: list[_Entry] = []
        for path, n, m in wanted:
            if path not in lines:
                lines[path] = self._read(path)
            text = lines[path][n - 1] if n <= len(lines[path]) else ""
            text = strip_annotations(text).strip()[:_MAX_LINE_CHARS]
            if text:
                entries.append(_Entry(path, n, text, m.triggers, m.project, m.importance or 0))
        by_phrase: dict[str, list[int]] = {}
        for i, e in enumerate(entries):
            for p in e.phrases:
                by_phrase.setdefault(p, []).append(i)
        self._entries, self._by_phrase = entries, by_phrase
        words = sorted(by_phrase, key=len, reverse=True)
        self._pattern = (
            re.compile(r"(?<!\w)(" + "|".join(_phrase_rx(p) for p in words) + r")(?!\w)")
            if words
            else None
        )

    def _read(self, rel: str) -> list[str]:
        """A curated file's lines, opened beneath the workspace as ``get`` opens it."""
        try:
            opened = Layout(self.root).open_memory(rel)
        except MemorydError:
            return []
        try:
            with os.fdopen(opened.fd, "rb") as f:
                return f.read(_MAX_FILE_BYTES).decode("utf-8", "replace").split("\n")
        except OSError:
            return []

    def match(
        self,
        prompt: str,
        projects: frozenset[str],
        qvec: Vectors | None = None,
        embed: Callable[[str], Vectors] | None = None,
    ) -> list[Triggered]:
        """The lines the prompt triggers, best first, at most MAX_TRIGGERED. ``qvec``: the
        prompt's vector (None: lexical only); ``embed``: a phrase's vector, for those not
        kept yet."""
        entries, by_phrase, pattern = self._table()
        if not entries:
            return []
        scores: dict[int, tuple[float, str]] = {}
        if pattern is not None:
            for m in pattern.finditer(" ".join(prompt.split()).casefold()):
                phrase = " ".join(m.group(1).split())
                for i in by_phrase.get(phrase, ()):
                    scores[i] = (1.0, phrase)
        if qvec is not None and embed is not None and len(scores) < MAX_TRIGGERED:
            # The provider failing: the lexical matches stand.
            with contextlib.suppress(EmbeddingError):
                self._by_meaning(qvec, embed, by_phrase, scores)
        ranked = sorted(
            (i for i in scores if _active(entries[i], projects)),
            key=lambda i: (-scores[i][0], -entries[i].importance, i),
        )
        return [
            Triggered(entries[i].path, entries[i].line, entries[i].text, scores[i][1], scores[i][0])
            for i in ranked[:MAX_TRIGGERED]
        ]

    def _by_meaning(
        self,
        qvec: Vectors,
        embed: Callable[[str], Vectors],
        by_phrase: dict[str, list[int]],
        scores: dict[int, tuple[float, str]],
    ) -> None:
        phrases, matrix = self._phrase_matrix(embed, by_phrase)
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if matrix.shape[0] == 0 or matrix.shape[1] != q.shape[0]:
            return
        sims = matrix @ (q / (np.linalg.norm(q) or 1.0))
        for j in np.flatnonzero(sims >= MIN_COSINE).tolist():
            for i in by_phrase[phrases[j]]:
                if i not in scores or scores[i][0] < float(sims[j]):
                    scores[i] = (float(sims[j]), phrases[j])

    def _phrase_matrix(
        self, embed: Callable[[str], Vectors], by_phrase: dict[str, list[int]]
    ) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Every phrase's unit vector, one row each: built once per table (a phrase is
        embedded once and kept), so a match is one matrix-vector product."""
        with self._lock:
            if self._matrix is not None and self._matrix_generation == self._generation:
                return self._matrix_phrases, self._matrix
            phrases = list(by_phrase)
        for p in phrases:
            if p not in self._vectors:
                self._vectors[p] = np.asarray(embed(p), dtype=np.float32).reshape(-1)
        rows = np.stack([self._vectors[p] for p in phrases]) if phrases else np.zeros((0, 0))
        norms = np.linalg.norm(rows, axis=1, keepdims=True) if phrases else rows
        matrix = (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        with self._lock:
            self._matrix, self._matrix_phrases = matrix, phrases
            self._matrix_generation = self._generation
        return phrases, matrix


def _phrase_rx(phrase: str) -> str:
    return r"\s+".join(re.escape(w) for w in phrase.split())


def _active(e: _Entry, projects: frozenset[str]) -> bool:
    return e.project is None or e.project in projects
