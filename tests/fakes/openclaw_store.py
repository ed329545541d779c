"""An OpenClaw agent store as openclaw 2026.9.6 creates it (the `transcript_events` and
`session_transcript_archives` tables copied from a store the real openclaw wrote), filled by
the tests as OpenClaw would: WAL, events as JSON or, like OpenClaw's large ones,
zstd-compressed with their navigation; a deleted or reset session archived as one JSONL blob
(its header and events, zstd or not) with its sha256, its rows removed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import apsw
import zstandard

TRANSCRIPT_EVENTS = """
CREATE TABLE transcript_events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_json TEXT,
  created_at INTEGER NOT NULL,
  event_zstd BLOB,
  event_utf8_bytes INTEGER CHECK (event_utf8_bytes IS NULL OR event_utf8_bytes >= 0),
  navigation_json TEXT,
  PRIMARY KEY (session_id, seq),
  CHECK (
    (event_json IS NOT NULL AND event_zstd IS NULL)
    OR (
      event_json IS NULL AND event_zstd IS NOT NULL
      AND event_utf8_bytes IS NOT NULL
      AND event_utf8_bytes BETWEEN 1 AND 4194304
      AND length(event_zstd) BETWEEN 1 AND 4194304
      AND navigation_json IS NOT NULL
    )
  )
) STRICT
"""
TRANSCRIPT_ARCHIVES = """
CREATE TABLE IF NOT EXISTS session_transcript_archives (
  session_id TEXT NOT NULL,
  generation TEXT NOT NULL,
  session_key TEXT NOT NULL,
  reason TEXT NOT NULL CHECK (reason IN ('deleted', 'reset')),
  encoding TEXT NOT NULL CHECK (encoding IN ('identity', 'zstd')),
  archive_blob BLOB NOT NULL,
  archive_sha256 TEXT NOT NULL CHECK (length(archive_sha256) = 64),
  archive_name TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  published_at INTEGER,
  publish_attempts INTEGER NOT NULL DEFAULT 0 CHECK (publish_attempts >= 0),
  last_publish_attempt_at INTEGER,
  last_publish_error TEXT,
  PRIMARY KEY (session_id, generation),
  CHECK (archive_name NOT LIKE '%/%' AND archive_name NOT LIKE '%\\%')
) STRICT
"""
NAVIGATION = json.dumps({"version": 1, "report": {"kind": "canonical"}})


def store_path(home: Path, agent: str = "main") -> Path:
    return home / ".openclaw" / "agents" / agent / "agent" / "openclaw-agent.sqlite"


def create_store(path: Path) -> apsw.Connection:
    """The store with its table, in WAL mode; the connection stands for OpenClaw's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(TRANSCRIPT_EVENTS)
    return conn


def message(role: str, text: str) -> dict[str, Any]:
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    return {"type": "message", "id": "m", "message": {"role": role, "content": content}}


def add_events(
    conn: apsw.Connection, session: str, events: list[dict[str, Any]], *, zstd: bool = False
) -> None:
    """Appended after the session's last seq; ``zstd``: stored compressed."""
    row = conn.execute(
        "SELECT coalesce(max(seq), -1) FROM transcript_events WHERE session_id = ?", (session,)
    ).fetchone()
    seq = int(row[0]) + 1 if row else 0
    compressor = zstandard.ZstdCompressor()
    for event in events:
        text = json.dumps(event, ensure_ascii=False)
        if zstd:
            blob = compressor.compress(text.encode())
            conn.execute(
                "INSERT INTO transcript_events (session_id, seq, created_at, event_zstd, "
                "event_utf8_bytes, navigation_json) VALUES (?, ?, ?, ?, ?, ?)",
                (session, seq, 1_700_000_000_000 + seq, blob, len(text.encode()), NAVIGATION),
            )
        else:
            conn.execute(
                "INSERT INTO transcript_events (session_id, seq, created_at, event_json) "
                "VALUES (?, ?, ?, ?)",
                (session, seq, 1_700_000_000_000 + seq, text),
            )
        seq += 1


def archive_session(
    conn: apsw.Connection,
    session: str,
    *,
    reason: str = "deleted",
    zstd: bool = True,
    generation: str = "g1",
    tamper: bool = False,
) -> bytes:
    """What OpenClaw's delete (or reset) does to a session: its rows, in seq order, become one
    JSONL archive (the first row is its ``type: session`` header), stored zstd-compressed or
    as is with the stored bytes' sha256, and the rows leave ``transcript_events``. ``tamper``:
    the hash does not match. The archive's text."""
    conn.execute(TRANSCRIPT_ARCHIVES)
    rows = conn.execute(
        "SELECT event_json, event_zstd FROM transcript_events WHERE session_id = ? ORDER BY seq",
        (session,),
    ).fetchall()
    dctx = zstandard.ZstdDecompressor()
    text = b"".join(
        (j.encode() if isinstance(j, str) else dctx.decompress(z)) + b"\n" for j, z in rows
    )
    blob = zstandard.ZstdCompressor().compress(text) if zstd else text
    digest = hashlib.sha256(blob + (b"x" if tamper else b"")).hexdigest()
    with conn:
        conn.execute(
            "INSERT INTO session_transcript_archives (session_id, generation, session_key, "
            "reason, encoding, archive_blob, archive_sha256, archive_name, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session,
                generation,
                f"agent:main:{session}",
                reason,
                "zstd" if zstd else "identity",
                blob,
                digest,
                f"{session}.jsonl.{reason}.{generation}" + (".zst" if zstd else ""),
                1_700_000_100_000,
            ),
        )
        conn.execute("DELETE FROM transcript_events WHERE session_id = ?", (session,))
    return text
