"""Publishing one workspace's index to the fleet (docs/fleet.md, Publish protocol).

The cursor is the per-file versions Postgres holds: read once per connection, compared with
the local index's, and only the files that differ are sent, each in one transaction that
also renews the lease and keeps the BM25 statistics. A reconnect catches up with what
changed meanwhile; a dropped schema has no versions, so everything is sent again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from memoryd.fleet import lease
from memoryd.fleet.local_reader import FilePayload, LocalIndexReader, Version

BATCH_CHUNKS = 2000  # chunks per transaction: big enough for throughput, short for readers


# The COPY columns of each published table, as (name, Postgres type): fleet/postgres_schema.py.
CHUNK_COLUMNS = (
    ("workspace_id", "int8"),
    ("chunk_id", "int8"),
    ("path", "text"),
    ("source", "text"),
    ("day", "text"),
    ("start_line", "int4"),
    ("end_line", "int4"),
    ("heading", "text"),
    ("text", "text"),
    ("tokens", "int4"),
    ("windows", "bytea"),
)
VECTOR_COLUMNS = (
    ("workspace_id", "int8"),
    ("chunk_id", "int8"),
    ("source", "text"),
    ("day", "text"),
    ("embedding", "vector"),
)
POSTING_COLUMNS = (
    ("workspace_id", "int8"),
    ("stem", "text"),
    ("chunk_id", "int8"),
    ("freq", "int4"),
    ("tokens", "int4"),
    ("source", "text"),
    ("day", "text"),
)


@dataclass
class PublishReport:
    files: int = 0
    chunks: int = 0
    removed: int = 0
    seconds: float = 0.0


@dataclass
class Fingerprint:
    provider: str = ""
    model: str = ""
    dims: int = 0


@dataclass
class WorkspacePublisher:
    """Per connection: forget() after a reconnect, so the versions are read again."""

    schema: str
    host: str
    name: str
    holder: str
    lease_seconds: float
    ws_id: int | None = None
    published: dict[str, Version] | None = None  # the fleet's versions of our files
    generation: int = -1  # the local generation last published in full
    renewed_at: float = 0.0
    last: PublishReport = field(default_factory=PublishReport)
    published_at: float | None = None  # time.time() of the last publish that caught up

    def forget(self) -> None:
        self.ws_id, self.published, self.generation = None, None, -1

    def due(self, generation: int) -> bool:
        return (
            generation != self.generation
            or self.published is None
            or time.monotonic() - self.renewed_at > self.lease_seconds / 3
        )

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=sql.Identifier(self.schema))

    def publish(
        self,
        conn: psycopg.Connection[Any],
        reader: LocalIndexReader,
        generation: int,
        fp: Fingerprint,
        sync_id: str = "",
    ) -> PublishReport:
        """Bring the fleet's copy up to the local index (LeaseRefused when not ours)."""
        started = time.perf_counter()
        report = PublishReport()
        with conn.transaction():
            self.ws_id, new = lease.claim(
                conn, self.schema, self.host, self.name, self.holder, self.lease_seconds
            )
            if self.published is None or new:
                self.published = {
                    str(p): (str(h), int(v))
                    for p, h, v in conn.execute(
                        self._q(
                            "SELECT path, hash, vectors FROM {s}.files WHERE workspace_id = %s"
                        ),
                        (self.ws_id,),
                    )
                }
        self.renewed_at = time.monotonic()
        local = reader.versions()
        gone = [p for p in self.published if p not in local]
        changed = [p for p, (_, v) in local.items() if self.published.get(p) != v]
        if gone:
            with conn.transaction():
                self._renew(conn)
                removed = self._delete_chunks(conn, gone, [])
                conn.execute(
                    self._q("DELETE FROM {s}.files WHERE workspace_id = %s AND path = ANY(%s)"),
                    (self.ws_id, gone),
                )
                self._stats(conn, -len(removed), -sum(int(r[0]) for r in removed))
            for p in gone:
                del self.published[p]
            report.removed = len(gone)
        batch: list[FilePayload] = []
        size = 0
        for payload in reader.payloads(changed):
            if payload is None:
                continue
            batch.append(payload)
            size += len(payload.chunks)
            if size >= BATCH_CHUNKS:
                self._write(conn, batch, reader, report)
                batch, size = [], 0
        if batch:
            self._write(conn, batch, reader, report)
        with conn.transaction():
            self._renew(conn)
            conn.execute(
                self._q(
                    "UPDATE {s}.workspaces SET provider = %s, model = %s, dims = %s, "
                    "generation = %s, published_at = now(), sync_id = %s WHERE id = %s"
                ),
                (fp.provider, fp.model, fp.dims, generation, sync_id, self.ws_id),
            )
        self.generation = generation
        self.published_at = time.time()
        report.seconds = time.perf_counter() - started
        self.last = report
        return report

    def _renew(self, conn: psycopg.Connection[Any]) -> None:
        """Inside a publishing transaction: still ours, for lease_seconds more."""
        ws_id, new = lease.claim(
            conn, self.schema, self.host, self.name, self.holder, self.lease_seconds
        )
        if new or ws_id != self.ws_id:  # the schema was dropped under us: start over
            raise psycopg.errors.UndefinedTable("the fleet's workspace row is gone")
        self.renewed_at = time.monotonic()

    def _delete_chunks(
        self, conn: psycopg.Connection[Any], paths: list[str], ids: list[int]
    ) -> list[tuple[Any, ...]]:
        """Delete the chunks of these files and with these ids (a local id another file
        reuses), and their postings; their tokens, for the statistics."""
        for table in ("postings", "vectors"):
            conn.execute(
                self._q(
                    "DELETE FROM {s}." + table + " p USING {s}.chunks c WHERE p.workspace_id = %s "
                    "AND c.workspace_id = p.workspace_id AND c.chunk_id = p.chunk_id "
                    "AND (c.path = ANY(%s) OR c.chunk_id = ANY(%s))"
                ),
                (self.ws_id, paths, ids),
            )
        return conn.execute(
            self._q(
                "DELETE FROM {s}.chunks WHERE workspace_id = %s "
                "AND (path = ANY(%s) OR chunk_id = ANY(%s)) RETURNING tokens"
            ),
            (self.ws_id, paths, ids),
        ).fetchall()

    def _stats(self, conn: psycopg.Connection[Any], chunks: int, tokens: int) -> None:
        conn.execute(
            self._q(
                "UPDATE {s}.workspaces SET n_chunks = n_chunks + %s, "
                "n_tokens = n_tokens + %s WHERE id = %s"
            ),
            (chunks, tokens, self.ws_id),
        )

    def _copy(
        self,
        conn: psycopg.Connection[Any],
        table: str,
        columns: tuple[tuple[str, str], ...],
        rows: Iterable[tuple[Any, ...]],
    ) -> None:
        """COPY ``rows`` into ``table`` in binary: ``columns`` is (name, Postgres type)."""
        names = ", ".join(name for name, _ in columns)
        with conn.cursor().copy(
            self._q("COPY {s}." + table + f" ({names}) FROM STDIN (FORMAT BINARY)")
        ) as copy:
            copy.set_types([kind for _, kind in columns])
            for row in rows:
                copy.write_row(row)

    def _upsert_files(
        self, conn: psycopg.Connection[Any], files: list[FilePayload], reader: LocalIndexReader
    ) -> None:
        """The files' rows: version, text (what a remote get reads) and line count."""
        with conn.cursor() as cur:
            cur.executemany(
                self._q(
                    "INSERT INTO {s}.files AS f (workspace_id, path, source, hash, "
                    "vectors, body, total_lines, published_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, now()) "
                    "ON CONFLICT (workspace_id, path) DO UPDATE SET "
                    "source = excluded.source, hash = excluded.hash, "
                    "vectors = excluded.vectors, body = excluded.body, "
                    "total_lines = excluded.total_lines, published_at = now()"
                ),
                [
                    (
                        self.ws_id,
                        f.path,
                        f.source,
                        f.version[0],
                        f.version[1],
                        *reader.body(f.path, f.source),
                    )
                    for f in files
                ],
            )

    def _write(
        self,
        conn: psycopg.Connection[Any],
        files: list[FilePayload],
        reader: LocalIndexReader,
        report: PublishReport,
    ) -> None:
        assert self.published is not None and self.ws_id is not None
        ws_id = self.ws_id
        paths = [f.path for f in files]
        ids = [c.id for f in files for c in f.chunks]
        with conn.transaction():
            self._renew(conn)
            # By path (the files' old chunks) and by id (a local id reused by another file).
            removed = self._delete_chunks(conn, paths, ids)
            self._upsert_files(conn, files, reader)
            added = [c for f in files for c in f.chunks]
            self._copy(conn, "chunks", CHUNK_COLUMNS, _chunk_rows(ws_id, files))
            self._copy(
                conn,
                "vectors",
                VECTOR_COLUMNS,
                (
                    (ws_id, c.id, c.source, c.day, c.embedding)
                    for c in added
                    if c.embedding is not None
                ),
            )
            self._copy(
                conn,
                "postings",
                POSTING_COLUMNS,
                (
                    (ws_id, stem, c.id, freq, c.tokens, c.source, c.day)
                    for c in added
                    for stem, freq in zip(c.stems, c.freqs, strict=True)
                ),
            )
            self._stats(
                conn,
                len(added) - len(removed),
                sum(c.tokens for c in added) - sum(int(r[0]) for r in removed),
            )
        for f in files:
            self.published[f.path] = f.version
        report.files += len(files)
        report.chunks += len(ids)


def _chunk_rows(ws_id: int, files: list[FilePayload]) -> Iterable[tuple[Any, ...]]:
    """The files' chunks as rows of CHUNK_COLUMNS."""
    for f in files:
        for c in f.chunks:
            yield (
                ws_id,
                c.id,
                f.path,
                c.source,
                c.day,
                c.start_line,
                c.end_line,
                c.heading,
                c.text,
                c.tokens,
                c.windows,
            )
