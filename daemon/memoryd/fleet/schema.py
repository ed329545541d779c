"""The fleet's tables in Postgres (docs/fleet.md, Schema), created idempotently on connect.

Two daemons connecting at once would race on CREATE ... IF NOT EXISTS (a unique violation
in the catalog), so creation runs under a transaction-scoped advisory lock.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

SCHEMA_VERSION = "1"
LOCK_KEY = 0x6D656D6F7279  # "memory": the advisory lock that serialises schema creation

DDL = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.workspaces(
    id bigserial PRIMARY KEY,
    host text NOT NULL,
    name text NOT NULL,
    holder text,                       -- the publishing daemon's id (its state folder's)
    holder_info jsonb NOT NULL DEFAULT '{{}}',  -- pid, machine: for the refusal message
    lease_expires timestamptz,         -- Postgres' clock: hosts' clocks do not matter
    provider text NOT NULL DEFAULT '',
    model text NOT NULL DEFAULT '',
    dims integer NOT NULL DEFAULT 0,
    n_chunks bigint NOT NULL DEFAULT 0,  -- BM25: document count and total length
    n_tokens bigint NOT NULL DEFAULT 0,
    generation bigint NOT NULL DEFAULT 0,  -- the local index generation published
    published_at timestamptz,
    UNIQUE(host, name)
);
CREATE TABLE IF NOT EXISTS {s}.files(
    workspace_id bigint NOT NULL REFERENCES {s}.workspaces(id) ON DELETE CASCADE,
    path text NOT NULL,
    source text NOT NULL,
    hash text NOT NULL,                -- with vectors: the version, the publish cursor
    vectors integer NOT NULL,          -- chunks that had vectors when published
    body text,                         -- the file's text (markdown only): remote get
    total_lines integer NOT NULL DEFAULT 0,
    published_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY(workspace_id, path)
);
CREATE TABLE IF NOT EXISTS {s}.chunks(
    workspace_id bigint NOT NULL,
    chunk_id bigint NOT NULL,          -- the publishing index's chunk id
    path text NOT NULL,
    source text NOT NULL,
    day text NOT NULL DEFAULT '',
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    heading text NOT NULL DEFAULT '',
    text text NOT NULL,
    tokens integer NOT NULL,           -- BM25 document length (text + heading tokens)
    stems text[] NOT NULL,             -- distinct FTS5 porter stems ...
    freqs integer[] NOT NULL,          -- ... and their doubled column-weighted frequencies
    lexemes tsvector GENERATED ALWAYS AS (array_to_tsvector(stems)) STORED,
    embedding vector,                  -- the mean of the windows: what KNN ranks
    windows bytea,                     -- the window vectors, float16, one after another
    PRIMARY KEY(workspace_id, chunk_id),
    FOREIGN KEY(workspace_id, path) REFERENCES {s}.files(workspace_id, path) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS chunks_lexemes ON {s}.chunks USING gin(lexemes);
CREATE INDEX IF NOT EXISTS chunks_by_path ON {s}.chunks(workspace_id, path);
CREATE INDEX IF NOT EXISTS chunks_by_day ON {s}.chunks(workspace_id, day) WHERE day <> '';
"""


def ensure_schema(conn: psycopg.Connection[object], schema: str) -> None:
    """Create what is missing (a dropped schema comes back empty: every daemon republishes)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        conn.execute(sql.SQL(DDL).format(s=sql.Identifier(schema)))
        conn.execute(
            sql.SQL("INSERT INTO {}.meta(key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO NOTHING").format(sql.Identifier(schema)),
            (SCHEMA_VERSION,))
