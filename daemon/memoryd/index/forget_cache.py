"""What the index keeps of forgotten lines, removed (lifecycle/forget_run.py's index side).

After a forget the files are synced again: their chunks, FTS rows and vectors of the
removed lines go (the fleet publisher sends the changed files on its next pass, as for any
edit). The embedding cache is keyed by the hash of a chunk's text, so it would still hold
vectors of the forgotten text: they are deleted too, by the hashes of the chunks (and their
vector windows) that held a removed line, read before the change.

The search keeps text in memory between searches too (chunks' rows, lines, stems, snippets,
masked snippets, which lines name a time or a day), until it ages out. None of it would
serve a forgotten line, which is no longer a hit; but forgotten means no copy the daemon
keeps, its memory included: ``drop_kept_text`` empties them. Forgets are rare; the caches
fill again within a few searches.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import apsw

from memoryd import secrets
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.index.search import focus, line_days, snippets
from memoryd.index.store import text_hash
from memoryd.index.vectors.windows import vector_windows

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex

__all__ = ["cache_hashes", "drop_kept_text", "purge_cache"]


def cache_hashes(
    conn: apsw.Connection,
    spans: Iterable[tuple[str, int | None, int | None]],
    window_tokens: int | None,
) -> list[str]:
    """The embedding-cache keys of the chunks holding a line to forget (writer thread):
    ``spans`` are (path, first line, last line), (path, None, None) a whole file."""
    hashes: set[str] = set()
    tokenizer = load_tokenizer() if window_tokens else None
    for rel, first, last in spans:
        if first is None or last is None:
            rows = conn.execute(
                "SELECT heading, text, text_hash FROM chunks WHERE path = ?", (rel,)
            )
        else:
            rows = conn.execute(
                "SELECT heading, text, text_hash FROM chunks WHERE path = ? "
                "AND end_line >= ? AND start_line <= ?",
                (rel, first, last),
            )
        for heading, text, digest in rows:
            hashes.add(str(digest))
            if tokenizer is not None and window_tokens:
                hashes.update(
                    text_hash(w) for w in vector_windows(heading, text, tokenizer, window_tokens)
                )
    return sorted(hashes)


def purge_cache(conn: apsw.Connection, hashes: list[str]) -> int:
    """Delete the cached vectors of ``hashes`` (writer thread); how many went."""
    gone = 0
    for i in range(0, len(hashes), 500):
        part = hashes[i : i + 500]
        conn.execute(
            f"DELETE FROM embedding_cache WHERE text_hash IN ({','.join('?' * len(part))})",
            part,
        )
        gone += conn.changes()
    return gone


def drop_kept_text(index: WorkspaceIndex) -> None:
    """Empty what the search keeps of memory text in memory: ``index``'s candidates' rows and
    chunks' lines, and the caches every index shares (keyed by text)."""
    index.rows.clear()
    index.copies.line_stems.clear()
    for cached in (
        snippets.text_lines,
        snippets.whole_lines,
        snippets.shown_text,
        focus.timed_lines,
        line_days.named_days,
        secrets.masked_snippet,
    ):
        cached.cache_clear()
