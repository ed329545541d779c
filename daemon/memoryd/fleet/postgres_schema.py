"""The fleet's tables in Postgres (docs/fleet.md, Schema), created idempotently on connect.

Two daemons connecting at once would race on CREATE ... IF NOT EXISTS (a unique violation
in the catalog), so creation runs under a transaction-scoped advisory lock.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

SCHEMA_VERSION = 4
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
    sync_id text NOT NULL DEFAULT '',  -- a workspace git-synced across hosts: one copy searched
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
    windows bytea,                     -- the window vectors, float16, one after another
    PRIMARY KEY(workspace_id, chunk_id),
    FOREIGN KEY(workspace_id, path) REFERENCES {s}.files(workspace_id, path) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS chunks_by_path ON {s}.chunks(workspace_id, path);
CREATE INDEX IF NOT EXISTS chunks_by_day ON {s}.chunks(workspace_id, day) WHERE day <> '';
-- The chunk mean vectors (what KNN ranks) apart from the chunk rows, stored inline: the
-- exact scan reads only these (in the chunk row, TOASTed, 5k chunks took 70 ms, ~3 pages
-- a row).
CREATE TABLE IF NOT EXISTS {s}.vectors(
    workspace_id bigint NOT NULL,
    chunk_id bigint NOT NULL,
    source text NOT NULL,
    day text NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY(workspace_id, chunk_id)
);
ALTER TABLE {s}.vectors ALTER COLUMN embedding SET STORAGE PLAIN;
-- The keyword index: one row per (stem, chunk), with what BM25 needs (FTS5's porter stems,
-- doubled column-weighted frequency, the chunk's length) and the filters (source, day), so
-- scoring a query is an index scan over its stems' postings, no chunk row read.
CREATE TABLE IF NOT EXISTS {s}.postings(
    workspace_id bigint NOT NULL,
    stem text NOT NULL,
    chunk_id bigint NOT NULL,
    freq integer NOT NULL,
    tokens integer NOT NULL,
    source text NOT NULL,
    day text NOT NULL,
    PRIMARY KEY(workspace_id, stem, chunk_id) INCLUDE (freq, tokens, source, day)
);  -- no foreign key: checking one per posting halves COPY's rate; the publisher deletes
CREATE INDEX IF NOT EXISTS postings_by_chunk ON {s}.postings(workspace_id, chunk_id);
"""


class SchemaTooNew(Exception):
    """The fleet's schema is of a newer memoryd: this one must not touch it."""


def ensure_schema(conn: psycopg.Connection[Any], schema: str) -> None:
    """Create what is missing (a dropped schema comes back empty: every daemon republishes).
    A schema of an older version is dropped and made anew (derived data: its daemons
    publish again); a newer one raises SchemaTooNew."""
    s = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        found = conn.execute("SELECT to_regclass(%s)", (f"{schema}.meta",)).fetchone()
        if found and found[0] is not None:
            row = conn.execute(
                sql.SQL("SELECT value FROM {}.meta WHERE key = 'schema_version'").format(s)
            ).fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"the fleet's schema {schema} is version {version}, this "
                    f"memoryd knows {SCHEMA_VERSION}: upgrade it"
                )
            if version < SCHEMA_VERSION:
                conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(s))
        conn.execute(sql.SQL(DDL).format(s=s))
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.meta(key, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (key) DO NOTHING"
            ).format(s),
            (str(SCHEMA_VERSION),),
        )
