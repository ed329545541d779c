"""FTS5 secure deletes are switched on inside one transaction and never stay on
(index/secure_delete.py): the setting is off again when the transaction commits, and when
it fails, on disk and in the connection's own copy of it."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from memoryd import sqlite
from memoryd.index.secure_delete import fts_secure

SCHEMA = """
CREATE TABLE chunks(id INTEGER PRIMARY KEY, text TEXT NOT NULL, heading TEXT NOT NULL);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    text, heading, content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading)
        VALUES ('delete', old.id, old.text, old.heading);
END;
"""
FIRST = (b"zorblaxian", b"quuxwibble", b"frobnicated")
SECOND = (b"plonkified", b"wazzerbat", b"grumbletonk")


def _index(path: Path) -> apsw.Connection:
    """Two lines in older FTS5 segments, many other rows written after them."""
    conn = sqlite.connect(path, vectors=False)
    conn.execute(SCHEMA)
    for words in (FIRST, SECOND):
        with conn:
            conn.execute(
                "INSERT INTO chunks(text, heading) VALUES(?, '')", (b" ".join(words).decode(),)
            )
    for batch in range(30):
        with conn:
            for i in range(40):
                text = " ".join(f"w{batch}x{i}y{k}" for k in range(12))
                conn.execute("INSERT INTO chunks(text, heading) VALUES(?, '')", (text,))
    return conn


def _on_disk(conn: apsw.Connection, path: Path, words: tuple[bytes, ...]) -> list[bytes]:
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    return [w[:7] for w in words if w[:7] in data]  # porter stems keep the first letters


def _setting(conn: apsw.Connection) -> list[tuple[apsw.SQLiteValue, ...]]:
    return list(conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'secure-delete'"))


def test_a_secure_delete_leaves_no_term_and_the_setting_off(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    conn = _index(path)
    assert _on_disk(conn, path, FIRST) and _on_disk(conn, path, SECOND)
    with conn, fts_secure(conn, True):
        conn.execute("DELETE FROM chunks WHERE text LIKE 'zorblaxian%'")
    assert _on_disk(conn, path, FIRST) == []
    assert _setting(conn) in ([], [(0,)])
    with conn, fts_secure(conn, False):  # an ordinary delete: FTS5 keeps the older terms
        conn.execute("DELETE FROM chunks WHERE text LIKE 'plonkified%'")
    assert _on_disk(conn, path, SECOND)
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")


def test_a_failed_transaction_leaves_secure_delete_off(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    conn = _index(path)
    with pytest.raises(RuntimeError), conn, fts_secure(conn, True):
        conn.execute("DELETE FROM chunks WHERE text LIKE 'zorblaxian%'")
        raise RuntimeError("the sync failed")
    assert _setting(conn) in ([], [(0,)])
    assert conn.execute("SELECT count(*) FROM chunks WHERE text LIKE 'zorblaxian%'").fetchone() == (
        1,
    )
    # The connection's own copy of the setting is off too: the next delete is ordinary.
    with conn:
        conn.execute("DELETE FROM chunks WHERE text LIKE 'plonkified%'")
    assert _on_disk(conn, path, SECOND)
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")
