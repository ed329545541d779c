"""An OpenClaw agent store as openclaw 2026.9.6 creates it (the `transcript_events` table
copied from a store the real openclaw wrote), filled by the tests as OpenClaw would: WAL,
events as JSON or, like OpenClaw's large ones, zstd-compressed with their navigation."""

from __future__ import annotations

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
