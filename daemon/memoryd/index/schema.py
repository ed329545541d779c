"""Per-workspace index schema as named, recorded, idempotent migrations.

The vector table is not a migration: its width is the provider's dims, so it is created
(and dropped on a fingerprint change) by the store when the dims are known.
"""

from __future__ import annotations

from pathlib import Path

import apsw

from memoryd import sqlite
from memoryd.index.keyword import text as keyword_text

SCHEMA_VERSION = 1


def connect(path: Path | str, *, readonly: bool = False, vectors: bool = True) -> apsw.Connection:
    """A connection to an index file: the one factory (memoryd/sqlite.py), with the SQL
    function that chunks_fts's triggers call."""
    return sqlite.connect(path, readonly=readonly, vectors=vectors, setup=keyword_text.register)


MIGRATIONS: list[sqlite.Migration] = [
    (
        "0001_core",
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE files(
            path TEXT PRIMARY KEY,          -- workspace-relative, POSIX separators
            source TEXT NOT NULL,           -- memory | sessions
            hash TEXT NOT NULL,             -- sha256 of the bytes indexed ('' = re-chunk)
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            day TEXT NOT NULL DEFAULT '',   -- YYYY-MM-DD of a daily file or session
            ingested INTEGER NOT NULL DEFAULT 0,   -- JSONL: bytes already ingested
            lines INTEGER NOT NULL DEFAULT 0,      -- JSONL: physical lines ingested
            tail_offset INTEGER NOT NULL DEFAULT 0,-- JSONL: byte offset where the last chunk starts
            tail_line INTEGER NOT NULL DEFAULT 1,  -- JSONL: its first physical line
            malformed INTEGER NOT NULL DEFAULT 0,  -- JSONL lines skipped as malformed
            skipped_reason TEXT,            -- not indexed, and why (binary, too large)
            indexed_at REAL NOT NULL
        );
        CREATE TABLE chunks(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
            source TEXT NOT NULL,
            day TEXT NOT NULL DEFAULT '',
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            heading TEXT NOT NULL DEFAULT '',
            text_hash TEXT NOT NULL,        -- sha256 of the embedding input (heading + text)
            text TEXT NOT NULL,
            embedded INTEGER NOT NULL DEFAULT 0,
            windows INTEGER NOT NULL DEFAULT 0, -- vector windows stored for it
            updated_at REAL NOT NULL
        );
        -- Window vectors (float16) of each chunk, keyed chunk_id * WINDOW_SLOTS + n: a
        -- candidate's windows are one B-tree range read. The vec0 table holds their mean.
        CREATE TABLE window_vectors(id INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
        CREATE INDEX chunks_by_path ON chunks(path, start_line);
        CREATE INDEX chunks_unembedded ON chunks(id) WHERE embedded = 0;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, heading, content='chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, text, heading)
                VALUES ('delete', old.id, old.text, old.heading);
        END;
        CREATE TABLE embedding_cache(
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            provider_key TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            dims INTEGER NOT NULL,
            embedding BLOB NOT NULL,
            last_used INTEGER NOT NULL,
            PRIMARY KEY(provider, model, provider_key, text_hash)
        ) WITHOUT ROWID;
        CREATE INDEX embedding_cache_lru ON embedding_cache(last_used);
    """,
    ),
    (
        "0002_chunks_by_day",
        # Date filters (since/until) and dated queries select chunks by day.
        "CREATE INDEX IF NOT EXISTS chunks_by_day ON chunks(day) WHERE day != '';",
    ),
    (
        "0003_fts_automerge",
        # FTS5 merges a level's segments once it holds this many (default 4, at most 16):
        # each posting is rewritten fewer times. A first index of 100k chunks took 12%
        # less time; FTS5's own queries over the result were as fast (16 ms p50 either way).
        "INSERT INTO chunks_fts(chunks_fts, rank) VALUES('automerge', 16);",
    ),
    (
        "0004_line_meta",
        # What memory knows about single lines (docs/provenance.md): annotations, provenance
        # from the ledger, supersession. Sparse: rows only for lines that have any, so a
        # workspace written by hand without annotations has none and searches as before.
        """
        CREATE TABLE line_meta(
            path TEXT NOT NULL, line INTEGER NOT NULL,
            importance INTEGER, triggers TEXT, project TEXT, key TEXT,
            origin TEXT, session_id TEXT, session_kind TEXT,
            superseded_by TEXT,            -- 'path#Lnn' of the line that stands (26)
            PRIMARY KEY(path, line)) WITHOUT ROWID;
        """,
    ),
]


def migrate(conn: apsw.Connection) -> list[str]:
    """Apply the index migrations not yet recorded; returns the names applied."""
    return sqlite.migrate(conn, MIGRATIONS)


def get_meta(conn: apsw.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def set_meta(conn: apsw.Connection, values: dict[str, str]) -> None:
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        list(values.items()),
    )


# chunks_fts indexes keyword_text(text) (CJK runs as bigrams), not the raw text that
# 0001_core's triggers gave it. A 'delete' must pass the values indexed, so the triggers and
# the rows already indexed change together, in upgrade_keyword_text's one transaction.
_KEYWORD_TRIGGERS = f"""
    DROP TRIGGER IF EXISTS chunks_fts_insert;
    DROP TRIGGER IF EXISTS chunks_fts_delete;
    CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, text, heading)
            VALUES (new.id, {keyword_text.SQL_FUNCTION}(new.text),
                    {keyword_text.SQL_FUNCTION}(new.heading));
    END;
    CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, text, heading)
            VALUES ('delete', old.id, {keyword_text.SQL_FUNCTION}(old.text),
                    {keyword_text.SQL_FUNCTION}(old.heading));
    END;
"""


def upgrade_keyword_text(conn: apsw.Connection) -> int | None:
    """Make chunks_fts index keyword_text(): the chunks whose text it changes (those with
    CJK) are indexed again; None when already done, else how many. One transaction, so
    readers (WAL) search the old rows until it commits; ``conn`` needs connect's
    keyword_text function. The writer runs it after the in-memory copies load (workspace),
    and they already tokenize the new way, so CJK is found meanwhile too."""
    fn = keyword_text.SQL_FUNCTION
    with conn:
        if get_meta(conn).get("keyword_text") == keyword_text.VERSION:
            return None
        conn.execute(_KEYWORD_TRIGGERS)
        # Rows indexed raw (no meta key: 0001_core's triggers) are indexed again where the
        # rewrite changes them: the others' tokens are the same either way.
        changed = f"{fn}(text) != text OR {fn}(heading) != heading"
        ids = [int(i) for (i,) in conn.execute(f"SELECT id FROM chunks WHERE {changed}")]
        conn.executemany(
            "INSERT INTO chunks_fts(chunks_fts, rowid, text, heading) "
            "SELECT 'delete', id, text, heading FROM chunks WHERE id = ?",
            [(i,) for i in ids],
        )
        conn.executemany(
            f"INSERT INTO chunks_fts(rowid, text, heading) "
            f"SELECT id, {fn}(text), {fn}(heading) FROM chunks WHERE id = ?",
            [(i,) for i in ids],
        )
        set_meta(conn, {"keyword_text": keyword_text.VERSION})
    return len(ids)
