"""OpenClaw's own transcript store (2026.9 and later), read without ever writing to it.

One SQLite file per agent, ``~/.openclaw/agents/<agent>/agent/openclaw-agent.sqlite``.
Table ``transcript_events`` holds a session's events in order: ``session_id``, ``seq``,
``created_at`` (ms), and the event as ``event_json`` or, for large ones, zstd-compressed in
``event_zstd``. An event is one line of OpenClaw's JSONL format (``type: message`` with
``message.role``), so the rows are handed to the transcript parser as lines.

The file is opened read-only (``mode=ro``): OpenClaw keeps writing in WAL mode meanwhile and
each read sees one consistent snapshot. Rows are read in ``seq`` order from where the last
read stopped, a batch at a time, so a long session is never loaded whole.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Final, cast

import apsw
import zstandard

STORE_NAME: Final = "openclaw-agent.sqlite"
BATCH_ROWS: Final = 500
BUSY_TIMEOUT_MS: Final = 2000
# OpenClaw's own bound on an event (a CHECK on event_utf8_bytes): nothing larger is inflated.
MAX_EVENT_BYTES: Final = 4 * 1024 * 1024


class StoreError(Exception):
    """The store cannot be read (missing, not OpenClaw's, damaged)."""


def is_store(path: Path) -> bool:
    return path.name == STORE_NAME


def agent_of(path: Path) -> str:
    """The agent a store belongs to: ``agents/<agent>/agent/openclaw-agent.sqlite``."""
    return path.parent.parent.name


@contextlib.contextmanager
def open_store(path: Path) -> Iterator[apsw.Connection]:
    """A read-only connection (no journal or WAL file of ours; OpenClaw's writes go on)."""
    try:
        conn = apsw.Connection(
            f"file:{path}?mode=ro",
            flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI,
        )
    except apsw.Error as exc:
        raise StoreError(f"cannot open OpenClaw's store {path}: {exc}") from None
    try:
        conn.setbusytimeout(BUSY_TIMEOUT_MS)
        yield conn
    finally:
        conn.close()


def event_lines(
    conn: apsw.Connection, session_id: str, skip: int, limit: int = BATCH_ROWS
) -> list[bytes]:
    """Up to ``limit`` events of a session after its first ``skip``, as JSONL lines."""
    decompressor = zstandard.ZstdDecompressor()
    try:
        rows = conn.execute(
            "SELECT event_json, event_zstd FROM transcript_events WHERE session_id = ? "
            "ORDER BY seq LIMIT ? OFFSET ?",
            (session_id, limit, skip),
        ).fetchall()
    except apsw.Error as exc:
        raise StoreError(f"cannot read OpenClaw's transcript_events: {exc}") from None
    return [event_line(j, z, decompressor) for j, z in rows]


def events_after(
    conn: apsw.Connection, session_id: str, after_seq: int, limit: int = BATCH_ROWS
) -> list[tuple[int, bytes]]:
    """Up to ``limit`` events of a session with ``seq`` past ``after_seq``, in order, as
    (seq, JSONL line): one seek on the table's primary key, then only those rows."""
    decompressor = zstandard.ZstdDecompressor()
    try:
        rows = conn.execute(
            "SELECT seq, event_json, event_zstd FROM transcript_events "
            "WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, after_seq, limit),
        ).fetchall()
    except apsw.Error as exc:
        raise StoreError(f"cannot read OpenClaw's transcript_events: {exc}") from None
    return [(int(cast(int, seq)), event_line(j, z, decompressor)) for seq, j, z in rows]


def last_seqs(conn: apsw.Connection) -> dict[str, int]:
    """Every session in the store with its last ``seq``: one seek per session on the primary
    key (session_id, seq), no event row read."""
    out: dict[str, int] = {}
    after = ""
    try:
        while True:
            row = conn.execute(
                "SELECT session_id FROM transcript_events WHERE session_id > ? "
                "ORDER BY session_id LIMIT 1",
                (after,),
            ).fetchone()
            if row is None:
                return out
            after = str(row[0])
            last = conn.execute(
                "SELECT max(seq) FROM transcript_events WHERE session_id = ?", (after,)
            ).fetchone()
            out[after] = int(last[0]) if last and isinstance(last[0], int) else -1
    except apsw.Error as exc:
        raise StoreError(f"cannot read OpenClaw's transcript_events: {exc}") from None


def event_line(
    event_json: object, event_zstd: object, decompressor: zstandard.ZstdDecompressor
) -> bytes:
    """One row's event as one JSONL line (JSON or inflated zstd)."""
    if isinstance(event_json, str):
        line = event_json.encode("utf-8")
    elif isinstance(event_zstd, bytes):
        try:
            line = decompressor.decompress(event_zstd, max_output_size=MAX_EVENT_BYTES)
        except zstandard.ZstdError:
            line = b"{}"  # an unreadable event counts as a line without text
    else:
        line = b"{}"
    return line.replace(b"\n", b" ")  # one event, one line (JSON needs no newline)


def session_rows(conn: apsw.Connection, session_id: str) -> int:
    try:
        row = conn.execute(
            "SELECT count(*) FROM transcript_events WHERE session_id = ?", (session_id,)
        ).fetchone()
    except apsw.Error as exc:
        raise StoreError(f"cannot read OpenClaw's transcript_events: {exc}") from None
    count = row[0] if row else 0
    return count if isinstance(count, int) else 0


class SessionReader(io.RawIOBase):
    """A session's events from row ``skip`` on as one JSONL stream, read a batch of rows at a
    time as the reader asks for bytes (what the transcript parser reads from a file)."""

    def __init__(self, conn: apsw.Connection, session_id: str, skip: int) -> None:
        self._conn, self._session, self._next = conn, session_id, skip
        self._buf = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._buf and not self._done:
            lines = event_lines(self._conn, self._session, self._next)
            self._next += len(lines)
            self._done = len(lines) < BATCH_ROWS
            self._buf = b"".join(line + b"\n" for line in lines)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def agent_store(home: Path, agent: str) -> Path:
    """An agent's store under OpenClaw's home."""
    return home / "agents" / agent / "agent" / STORE_NAME


def session_key(store: Path, session_id: str) -> str | None:
    """The session's key (``agent:<id>:cron:...``) as the store's ``session_windows`` says,
    or None: no store, no such table (an older OpenClaw), no row."""
    if not store.is_file():
        return None
    try:
        with open_store(store) as conn:
            row = conn.execute(
                "SELECT session_key FROM session_windows WHERE session_id = ?", (session_id,)
            ).fetchone()
    except (StoreError, apsw.Error):
        return None
    return str(row[0]) if row and row[0] else None


def kind_of_key(key: str) -> str:
    """The kind of an OpenClaw session by its key, OpenClaw's own rule (the plugin's
    ``sessionKindOf``): ``...:cron:...``, ``...:heartbeat``, ``...:subagent:...``."""
    low = key.strip().lower()
    rest = ":".join(low.split(":")[2:]) if low.startswith("agent:") else low
    if rest.startswith("cron:"):
        return "cron"
    if rest == "heartbeat" or rest.endswith(":heartbeat"):
        return "heartbeat"
    if rest.startswith("subagent:") or ":subagent:" in rest:
        return "subagent"
    return "interactive"
