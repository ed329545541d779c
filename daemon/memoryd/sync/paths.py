"""What is synced, and what kind of file each synced path is (which merge rule it takes).

Synced: ``MEMORY.md`` (or ``memory.md``), ``USER.md``, ``memory/**/*.md`` outside hidden
folders, and the provenance ledger ``memory/.provenance.jsonl``; transcripts
(``sessions/*.jsonl``) only when ``sync.transcripts`` is on, each up to
``sync.transcript_max_bytes``. Never: the index and the state database (outside the
workspace anyway), ``memory/.history`` (pre-images, reports, exports), anything else in the
workspace (a repository, a build tree), links (a link is not memory's own bytes).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from memoryd.files.layout import (
    CURATED_FILES,
    DAY_RE,
    MEMORY_DIR,
    NOTE_SUFFIX,
    SESSIONS_DIR,
    TRANSCRIPT_SUFFIX,
)
from memoryd.files.provenance import LEDGER_REL

__all__ = ["CURATED", "DAILY", "LEDGER", "NOTE", "TRANSCRIPT", "Scope", "kind_of"]

CURATED: Final = "curated"  # MEMORY.md, USER.md: three-way, keys decide, conflict notes
NOTE: Final = "note"  # other memory/**/*.md: as curated
DAILY: Final = "daily"  # memory/**/YYYY-MM-DD.md: a line union in time order
LEDGER: Final = "ledger"  # memory/.provenance.jsonl: records merged by identity
TRANSCRIPT: Final = "transcript"  # sessions/*.jsonl (opt-in): a line union


def kind_of(rel: str) -> str:
    """The merge rule of a synced path (call ``Scope.synced`` first)."""
    if rel == LEDGER_REL:
        return LEDGER
    if rel in CURATED_FILES:
        return CURATED
    if rel.endswith(TRANSCRIPT_SUFFIX):
        return TRANSCRIPT
    if DAY_RE.match(PurePosixPath(rel).name):
        return DAILY
    return NOTE


@dataclass(frozen=True)
class Scope:
    """The synced paths of one workspace."""

    transcripts: bool = False
    transcript_max_bytes: int = 0

    def synced(self, rel: str) -> bool:
        """Whether ``rel`` (workspace-relative, POSIX) is synced by its name."""
        if rel == LEDGER_REL:
            return True
        parts = PurePosixPath(rel).parts
        if not parts or ".." in parts or any(p.startswith(".") for p in parts):
            return False
        if rel in CURATED_FILES:
            return True
        if parts[0] == MEMORY_DIR and len(parts) > 1:
            return rel.endswith(NOTE_SUFFIX)
        return (
            self.transcripts
            and parts[0] == SESSIONS_DIR
            and len(parts) == 2
            and rel.endswith(TRANSCRIPT_SUFFIX)
        )

    def too_large(self, rel: str, size: int) -> bool:
        return kind_of(rel) == TRANSCRIPT and size > self.transcript_max_bytes

    def walk(self, root: Path) -> Iterator[tuple[str, int]]:
        """Every synced regular file now in the workspace: (rel, size). Links are not
        followed, folders named with a dot are skipped, transcripts over the cap left out."""
        for rel, st in self.stats(root):
            yield rel, st.st_size

    def stats(self, root: Path) -> Iterator[tuple[str, os.stat_result]]:
        """``walk`` with each file's stat (what tells a commit step nothing changed)."""
        for rel in (*CURATED_FILES, LEDGER_REL):
            st = _regular(root / rel)
            if st is not None:
                yield rel, st
        yield from self._tree(root, MEMORY_DIR, NOTE_SUFFIX)
        if self.transcripts:
            for rel, st in self._tree(root, SESSIONS_DIR, TRANSCRIPT_SUFFIX, depth=1):
                if not self.too_large(rel, st.st_size):
                    yield rel, st

    def _tree(
        self, root: Path, top: str, suffix: str, depth: int = 64
    ) -> Iterator[tuple[str, os.stat_result]]:
        stack = [(top, 0)]
        while stack:
            rel_dir, level = stack.pop()
            try:
                entries = sorted(os.scandir(root / rel_dir), key=lambda e: e.name)
            except OSError:  # missing, a file, or a link (scandir of a link to a folder
                continue  # would follow it: the top is checked below)
            if level == 0 and os.path.islink(root / rel_dir):
                continue
            for e in entries:
                if e.name.startswith("."):
                    continue
                rel = f"{rel_dir}/{e.name}"
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode) and level + 1 < depth:
                    stack.append((rel, level + 1))
                elif stat.S_ISREG(st.st_mode) and e.name.endswith(suffix):
                    yield rel, st


def _regular(path: Path) -> os.stat_result | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None
