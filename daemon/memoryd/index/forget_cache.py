"""What the index keeps of forgotten lines, removed (lifecycle/forget_run.py's index side).

After a forget the files are synced again: their chunks, FTS rows and vectors of the
removed lines go (the fleet publisher sends the changed files on its next pass, as for any
edit). The embedding cache is keyed by the hash of a chunk's text, so it would still hold
vectors of the forgotten text: they are deleted too, by the hashes of the chunks (and their
vector windows) that held a removed line, read before the change.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.index.store import text_hash
from memoryd.index.vectors.windows import vector_windows

__all__ = ["cache_hashes", "purge_cache"]


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
