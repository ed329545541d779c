"""Sessions OpenClaw archived: ``session_transcript_archives`` in its agent store.

When a session is deleted (``openclaw sessions delete``, the Control UI) or reset into a new
window, OpenClaw 2026.9 removes its rows from ``transcript_events`` and keeps the whole
transcript as one row here: ``archive_blob`` is the session's JSONL (its ``type: session``
header, then one event a line: the same lines its ``transcript_events`` rows held, in ``seq``
order), ``encoding`` ``identity`` or ``zstd`` (one zstd frame), ``archive_sha256`` the hash of
the stored bytes, ``reason`` ``deleted`` or ``reset``. Checked against a store the real
openclaw wrote (its own reader verifies the hash and the header the same way).

The blob is read through SQLite's incremental blob reads, a block at a time: once to check the
hash, once to hand out lines, so a long session is never held whole.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Final, cast

import apsw
import zstandard

from memoryd.files.openclaw_store import MAX_EVENT_BYTES, StoreError
from memoryd.records import Record

TABLE: Final = "session_transcript_archives"
BLOCK: Final = 1 << 16


@dataclass(frozen=True, eq=False, repr=False)
class Archive(Record):
    rowid: int
    session_id: str
    generation: str
    reason: str
    encoding: str
    sha256: str
    created_at: int


def has_archives(conn: apsw.Connection) -> bool:
    try:
        row = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)
        ).fetchone()
    except apsw.Error as exc:
        raise StoreError(f"cannot read OpenClaw's store: {exc}") from None
    return row is not None


def list_archives(conn: apsw.Connection, session_id: str | None = None) -> list[Archive]:
    """The archived sessions (all, or one session's generations), oldest first; no blob read."""
    if not has_archives(conn):
        return []
    sql = (
        f"SELECT rowid, session_id, generation, reason, encoding, archive_sha256, created_at "
        f"FROM {TABLE}"
    )
    args: tuple[str, ...] = ()
    if session_id is not None:
        sql += " WHERE session_id = ?"
        args = (session_id,)
    try:
        rows = conn.execute(sql + " ORDER BY created_at, rowid", args).fetchall()
    except apsw.Error as exc:
        raise StoreError(f"cannot read OpenClaw's {TABLE}: {exc}") from None
    return [
        Archive(
            int(cast(int, r[0])),
            str(r[1]),
            str(r[2]),
            str(r[3]),
            str(r[4]),
            str(r[5]),
            int(cast(int, r[6])),
        )
        for r in rows
    ]


class _BlobReader(io.RawIOBase):
    """One archive's stored bytes, read a block at a time (SQLite's incremental blob I/O)."""

    def __init__(self, blob: apsw.Blob) -> None:
        self._blob = blob

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._blob.read(len(b))
        b[: len(data)] = data
        return len(data)


def _open_blob(conn: apsw.Connection, archive: Archive) -> apsw.Blob:
    try:
        return conn.blob_open("main", TABLE, "archive_blob", archive.rowid, False)
    except apsw.Error as exc:
        raise StoreError(f"cannot read archived session {archive.session_id}: {exc}") from None


def _check_hash(conn: apsw.Connection, archive: Archive) -> None:
    digest = hashlib.sha256()
    with _open_blob(conn, archive) as blob:
        while chunk := blob.read(BLOCK):
            digest.update(chunk)
    if digest.hexdigest() != archive.sha256:
        raise StoreError(
            f"archived session {archive.session_id} ({archive.generation}): its bytes do not "
            "match their archive_sha256; not read"
        )


def archive_lines(conn: apsw.Connection, archive: Archive) -> Iterator[bytes]:
    """The archived session's JSONL lines (header first, no newline), after checking its hash
    and that the header names the session. StoreError when either does not hold, when the
    encoding is unknown, or when the zstd frame is damaged."""
    if archive.encoding not in ("identity", "zstd"):
        raise StoreError(f"archived session {archive.session_id}: unknown {archive.encoding!r}")
    _check_hash(conn, archive)
    with _open_blob(conn, archive) as blob:
        raw: io.RawIOBase = _BlobReader(blob)
        if archive.encoding == "zstd":
            reader = zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], raw))
            raw = cast(io.RawIOBase, reader)
        stream = io.BufferedReader(raw, BLOCK)
        first = True
        try:
            while line := stream.readline(MAX_EVENT_BYTES + 1):
                if not line.endswith(b"\n") and len(line) > MAX_EVENT_BYTES:
                    raise StoreError(f"archived session {archive.session_id}: an event too long")
                line = line.rstrip(b"\r\n")
                if first:
                    _check_header(archive, line)
                    first = False
                if line.strip():
                    yield line
        except zstandard.ZstdError as exc:
            raise StoreError(f"archived session {archive.session_id}: {exc}") from None
        if first:
            raise StoreError(f"archived session {archive.session_id} is empty")


def _check_header(archive: Archive, line: bytes) -> None:
    try:
        head = json.loads(line)
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("type") != "session":
        raise StoreError(f"archived session {archive.session_id}: no session header")
    if head.get("id") != archive.session_id:
        raise StoreError(
            f"archived session {archive.session_id}: its header names {head.get('id')!r}"
        )


class LinesReader(io.RawIOBase):
    """Lines (without newlines) as one JSONL stream from line ``skip`` on, what the transcript
    parser reads from a file."""

    def __init__(self, lines: Iterator[bytes], skip: int) -> None:
        self._lines, self._skip = lines, skip
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._buf:
            line = next(self._lines, None)
            if line is None:
                return 0
            if self._skip > 0:
                self._skip -= 1
                continue
            self._buf = line + b"\n"
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n
