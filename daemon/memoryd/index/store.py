"""SQL for the index's rows: files, chunks (+FTS by trigger), vectors, the embedding cache.

Every function here runs on the writer connection inside the caller's transaction, except
the ``read_*`` helpers, which any connection may use.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import apsw

from memoryd import sqlite
from memoryd.embeddings.base import Vectors
from memoryd.index.chunker import Chunk
from memoryd.index.vectors.mirror import VectorMirror
from memoryd.index.vectors.windows import WINDOW_SLOTS, centroid
from memoryd.records import Record
from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

VEC_TABLE = "chunks_vec"


@frozen_record(frozen=True, eq=False, repr=False)
class FileRow(Record):
    """A file as the index holds it (the files table's row)."""

    path: str
    source: str
    hash: str
    mtime_ns: int
    size: int
    day: str
    ingested: int
    lines: int
    tail_offset: int
    tail_line: int
    malformed: int
    skipped_reason: str | None


FILE_COLS = (
    "path, source, hash, mtime_ns, size, day, ingested, lines, tail_offset, tail_line, "
    "malformed, skipped_reason"
)


def read_files(conn: apsw.Connection, path: str | None = None) -> dict[str, FileRow]:
    """Every file row, or the one of ``path``."""
    where, args = ("WHERE path = ?", (path,)) if path is not None else ("", ())
    return {
        r[0]: FileRow(*r) for r in sqlite.rows(conn, f"SELECT {FILE_COLS} FROM files {where}", args)
    }


def upsert_file(conn: apsw.Connection, row: FileRow) -> None:
    conn.execute(
        f"INSERT INTO files({FILE_COLS}, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT(path) DO UPDATE SET source=excluded.source, hash=excluded.hash, "
        "mtime_ns=excluded.mtime_ns, size=excluded.size, day=excluded.day, "
        "ingested=excluded.ingested, lines=excluded.lines, tail_offset=excluded.tail_offset, "
        "tail_line=excluded.tail_line, malformed=excluded.malformed, "
        "skipped_reason=excluded.skipped_reason, indexed_at=excluded.indexed_at",
        (
            row.path,
            row.source,
            row.hash,
            row.mtime_ns,
            row.size,
            row.day,
            row.ingested,
            row.lines,
            row.tail_offset,
            row.tail_line,
            row.malformed,
            row.skipped_reason,
            time.time(),
        ),
    )


def embed_input(chunk: Chunk) -> str:
    """What the embedding model sees: the heading path gives a chunk its context (dates!)."""
    if chunk.heading_path:
        return chunk.heading + "\n" + chunk.text
    return chunk.text


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def has_vec_table(conn: apsw.Connection) -> bool:
    return bool(
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VEC_TABLE,)
        ).fetchall()
    )


def vec_table_writable(conn: apsw.Connection) -> bool:
    """A vector table exists and this process has sqlite-vec: without the vec0 module every
    statement on the table fails, DROP included."""
    return sqlite.probe_vec().ok and has_vec_table(conn)


def vec_table_dims(conn: apsw.Connection) -> int | None:
    """The width of the vector table, or None when there is none."""
    sql = sqlite.scalar(
        conn, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (VEC_TABLE,)
    )
    if not sql:
        return None
    m = re.search(r"float\[(\d+)\]", str(sql))
    return int(m.group(1)) if m else None


def create_vec_table(conn: apsw.Connection, dims: int) -> None:
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {VEC_TABLE} USING vec0("
        # L2 on unit vectors ranks exactly as cosine does, and sqlite-vec scans it a third
        # faster; search/fusion.py turns the distance back into a cosine where it needs one.
        f"chunk_id INTEGER PRIMARY KEY, embedding float[{int(dims)}], "
        "source TEXT, day TEXT)"
    )


def drop_vectors(conn: apsw.Connection, mirror: VectorMirror | None = None) -> None:
    """Forget every vector (fingerprint change): chunks wait to be re-embedded.

    Without sqlite-vec the vec0 table cannot be dropped; it is left for the first open that
    has sqlite-vec again, which finds the fingerprint "vectors off" and drops it then."""
    if sqlite.probe_vec().ok:
        conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
    if mirror is not None:
        mirror.stage_clear()
    conn.execute("DELETE FROM window_vectors")
    conn.execute("UPDATE chunks SET embedded = 0, windows = 0 WHERE embedded != 0")


def drop_other_width(conn: apsw.Connection, dims: int, mirror: VectorMirror | None) -> int | None:
    """When the vector table holds vectors of another width than ``dims`` (the endpoint now
    answers with another): forget them all (drop_vectors) and return the old width."""
    table = vec_table_dims(conn)
    if table is None or table == dims:
        return None
    drop_vectors(conn, mirror)
    return table


def delete_chunks(
    conn: apsw.Connection,
    path: str,
    from_line: int | None = None,
    mirror: VectorMirror | None = None,
) -> int:
    """Remove a file's chunks (those starting at or after ``from_line`` when given)."""
    where = "path = ?"
    args: list[str | int] = [path]
    if from_line is not None:
        where += " AND start_line >= ?"
        args.append(from_line)
    if conn.execute(f"SELECT 1 FROM {_STAGED} WHERE path = ? LIMIT 1", (path,)).fetchall():
        move_staged(conn)  # the file's staged rows are its chunks too
    ids = [r[0] for r in conn.execute(f"SELECT id FROM chunks WHERE {where}", args)]
    return delete_ids(conn, ids, mirror)


def delete_ids(
    conn: apsw.Connection, ids: Sequence[int], mirror: VectorMirror | None = None
) -> int:
    """Remove these chunks, with their vectors."""
    if not ids:
        return 0
    # Staged rows go in first, as they would have: deleting the last ids before them
    # would hand those ids out again.
    move_staged(conn)
    if vec_table_writable(conn):
        conn.executemany(f"DELETE FROM {VEC_TABLE} WHERE chunk_id = ?", [(i,) for i in ids])
        if mirror is not None:
            mirror.stage_delete(ids)
    conn.executemany(
        "DELETE FROM window_vectors WHERE id BETWEEN ? AND ?",
        [(i * WINDOW_SLOTS, i * WINDOW_SLOTS + WINDOW_SLOTS - 1) for i in ids],
    )
    conn.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in ids])
    return len(ids)


def delete_file(conn: apsw.Connection, path: str, mirror: VectorMirror | None = None) -> int:
    removed = delete_chunks(conn, path, mirror=mirror)
    conn.execute("DELETE FROM files WHERE path = ?", (path,))
    return removed


# Chunk rows go through this TEMP table (the writer connection's own) into chunks in one
# INSERT ... SELECT. Each INSERT statement on chunks opens a statement journal (its triggers
# write chunks_fts), and FTS5 writes out what it holds at every one: a row at a time, each
# chunk became an FTS5 segment of its own, merged again and again (two thirds of the FTS5
# cost of a first index). One statement for a file, or for a bulk batch of files, is one.
_STAGED = "temp.chunks_staged"
_CHUNK_COLS = "path, source, day, start_line, end_line, heading, text_hash, text, updated_at"


def create_staging(conn: apsw.Connection) -> None:
    conn.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS chunks_staged({_CHUNK_COLS}); "
        "CREATE INDEX IF NOT EXISTS temp.chunks_staged_path ON chunks_staged(path)"
    )


# (start_line, end_line, heading, text_hash, text): a chunk as its row holds it
ChunkRow = tuple[int, int, str, str, str]


def chunk_rows(chunks: Iterable[Chunk]) -> list[ChunkRow]:
    return [
        (c.start_line, c.end_line, c.heading, text_hash(embed_input(c)), c.text) for c in chunks
    ]


def insert_chunks(
    conn: apsw.Connection,
    path: str,
    source: str,
    day: str,
    chunks: Sequence[Chunk],
    defer: bool = False,
) -> int:
    return insert_rows(conn, path, source, day, chunk_rows(chunks), defer)


def insert_rows(
    conn: apsw.Connection,
    path: str,
    source: str,
    day: str,
    rows: Sequence[ChunkRow],
    defer: bool = False,
) -> int:
    """Add a file's chunks (ids in order). ``defer``: leave them staged for
    ``move_staged`` (a bulk batch's commit); a later write of chunks moves them first, so
    ids come out as they would have one file at a time."""
    now = time.time()
    conn.executemany(
        f"INSERT INTO {_STAGED}({_CHUNK_COLS}) VALUES (?,?,?,?,?,?,?,?,?)",
        [(path, source, day, *row, now) for row in rows],
    )
    if not defer:
        move_staged(conn)
    return len(rows)


def move_staged(conn: apsw.Connection) -> None:
    """Insert the staged chunk rows into chunks, in the order they were staged."""
    if not conn.execute(f"SELECT 1 FROM {_STAGED} LIMIT 1").fetchall():
        return
    conn.execute(
        f"INSERT INTO chunks({_CHUNK_COLS}, embedded) "
        f"SELECT {_CHUNK_COLS}, 0 FROM {_STAGED} ORDER BY rowid; DELETE FROM {_STAGED}"
    )


@frozen_record(frozen=True, eq=False, repr=False)
class PendingChunk(Record):
    """A chunk whose vector is still to be made."""

    id: int
    text_hash: str
    heading: str
    text: str
    source: str
    day: str

    @property
    def embed_input(self) -> str:
        return f"{self.heading}\n{self.text}" if self.heading else self.text


def read_pending(conn: apsw.Connection, limit: int, after_id: int = 0) -> list[PendingChunk]:
    return [
        PendingChunk(*r)
        for r in conn.execute(
            "SELECT id, text_hash, heading, text, source, day FROM chunks "
            "WHERE embedded = 0 AND id > ? ORDER BY id LIMIT ?",
            (after_id, limit),
        )
    ]


def count_pending(conn: apsw.Connection) -> int:
    return int(sqlite.scalar(conn, "SELECT count(*) FROM chunks WHERE embedded = 0"))


@frozen_record(frozen=True, eq=False, repr=False)
class CacheKey(Record):
    """Which provider and model made a cached vector."""

    provider: str
    model: str
    provider_key: str


def read_cached(
    conn: apsw.Connection, key: CacheKey, hashes: Iterable[str], dims: int
) -> dict[str, Vectors]:
    out: dict[str, Vectors] = {}
    for h in set(hashes):
        blob = sqlite.scalar(
            conn,
            "SELECT embedding FROM embedding_cache WHERE provider = ? AND model = ? "
            "AND provider_key = ? AND text_hash = ? AND dims = ?",
            (key.provider, key.model, key.provider_key, h, dims),
        )
        if blob is not None:
            out[h] = np.frombuffer(blob, dtype=np.float32)
    return out


def write_vectors(
    conn: apsw.Connection,
    key: CacheKey,
    items: Sequence[tuple[PendingChunk, Sequence[tuple[str, Vectors]]]],
    cache_max_entries: int,
    mirror: VectorMirror | None = None,
) -> int:
    """Store each chunk's window vectors and their mean, for chunks still present with the
    same text (a file may change while its chunks are being embedded); refresh the cache."""
    stamp = time.time_ns()
    written = 0
    for chunk, windows in items:
        if cache_max_entries > 0:
            conn.executemany(
                "INSERT INTO embedding_cache(provider, model, provider_key, text_hash, dims, "
                "embedding, last_used) VALUES (?,?,?,?,?,?,?) ON CONFLICT DO UPDATE SET "
                "last_used = excluded.last_used, embedding = excluded.embedding, "
                "dims = excluded.dims",
                [
                    (
                        key.provider,
                        key.model,
                        key.provider_key,
                        h,
                        int(v.shape[0]),
                        np.asarray(v, dtype=np.float32).tobytes(),
                        stamp,
                    )
                    for h, v in windows
                ],
            )
        still = conn.execute(
            "SELECT 1 FROM chunks WHERE id = ? AND text_hash = ? AND embedded = 0",
            (chunk.id, chunk.text_hash),
        ).fetchall()
        if not still or not windows:
            continue
        base = chunk.id * WINDOW_SLOTS
        conn.executemany(
            "INSERT OR REPLACE INTO window_vectors(id, embedding) VALUES (?, ?)",
            [
                (base + n, np.asarray(v, dtype=np.float16).tobytes())
                for n, (_, v) in enumerate(windows)
            ],
        )
        mean = centroid(np.stack([v for _, v in windows]))
        conn.execute(
            f"INSERT OR REPLACE INTO {VEC_TABLE}(chunk_id, embedding, source, day) "
            "VALUES (?,?,?,?)",
            (chunk.id, mean.tobytes(), chunk.source, chunk.day),
        )
        if mirror is not None:
            mirror.stage_put(chunk.id, mean, chunk.source, chunk.day)
        conn.execute(
            "UPDATE chunks SET embedded = 1, windows = ? WHERE id = ?", (len(windows), chunk.id)
        )
        written += 1
    if cache_max_entries > 0:
        evict_cache(conn, cache_max_entries)
    return written


def write_batch(
    conn: apsw.Connection,
    key: CacheKey,
    items: Sequence[tuple[PendingChunk, Sequence[tuple[str, Vectors]]]],
    cache_max_entries: int,
    mirror: VectorMirror | None,
) -> int | None:
    """One embedder batch in one transaction, the vector table made first (dropped and made
    again when the provider's width changed: the width dropped is returned, else None)."""
    dims = int(items[0][1][0][1].shape[0])
    with conn:
        old = drop_other_width(conn, dims, mirror)
        if vec_table_dims(conn) is None:
            create_vec_table(conn, dims)
        write_vectors(conn, key, items, cache_max_entries, mirror)
    return old


def evict_cache(conn: apsw.Connection, max_entries: int) -> int:
    count = int(sqlite.scalar(conn, "SELECT count(*) FROM embedding_cache"))
    excess = count - max_entries
    if excess <= 0:
        return 0
    conn.execute(
        "DELETE FROM embedding_cache WHERE (provider, model, provider_key, text_hash) IN "
        "(SELECT provider, model, provider_key, text_hash FROM embedding_cache "
        "ORDER BY last_used LIMIT ?)",
        (excess,),
    )
    return excess
