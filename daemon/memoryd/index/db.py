"""The one SQLite connection factory: apsw, WAL, pragmas, sqlite-vec loaded and probed.

Python's own sqlite3 often cannot load extensions; apsw ships a current SQLite that can.
sqlite-vec is *probed* with a real vec0 KNN query, once per process, so a build that loads
but does not work is detected: keyword search then still works and status says why.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from memoryd.index.keyword_text import SQL_FUNCTION, keyword_text

BUSY_TIMEOUT_MS = 5000


@dataclass(frozen=True)
class VecSupport:
    ok: bool
    version: str
    reason: str  # why vectors are off, when not ok


def _load_vec(conn: apsw.Connection) -> None:
    import sqlite_vec  # imported here so a missing wheel degrades instead of failing import

    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)


@functools.cache
def probe_vec() -> VecSupport:
    """Load sqlite-vec into a scratch connection and run a real KNN query with ``k = ?``."""
    try:
        conn = apsw.Connection(":memory:")
        _load_vec(conn)
        version = str(conn.execute("SELECT vec_version()").fetchall()[0][0])
        conn.execute(
            "CREATE VIRTUAL TABLE probe USING vec0(embedding float[2] distance_metric=cosine)"
        )
        conn.execute(
            "INSERT INTO probe(rowid, embedding) VALUES (1, '[1.0, 0.0]'), (2, '[0.0, 1.0]')"
        )
        rows = conn.execute(
            "SELECT rowid FROM probe WHERE embedding MATCH '[0.9, 0.1]' AND k = ? "
            "ORDER BY distance",
            (1,),
        ).fetchall()
        conn.close()
    except Exception as exc:  # ImportError, apsw.ExtensionLoadingError, SQLError...
        return VecSupport(False, "", f"could not load sqlite-vec: {exc}")
    if rows != [(1,)]:
        return VecSupport(False, version, f"sqlite-vec {version} loads but its KNN query is wrong")
    return VecSupport(True, version, "")


def _keyword_text_sql(*args: apsw.SQLiteValue) -> apsw.SQLiteValue:
    (text,) = args
    return keyword_text(text) if isinstance(text, str) else text


def connect(path: Path | str, *, readonly: bool = False) -> apsw.Connection:
    """A configured connection; sqlite-vec is loaded when the probe says it works."""
    flags = (
        apsw.SQLITE_OPEN_READONLY
        if readonly
        else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    )
    conn = apsw.Connection(str(path), flags=flags)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    if not readonly:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    # chunks_fts's triggers call it (schema.upgrade_keyword_text).
    conn.create_scalar_function(
        SQL_FUNCTION, _keyword_text_sql, 1, deterministic=True, flags=apsw.SQLITE_INNOCUOUS
    )
    if probe_vec().ok:
        _load_vec(conn)
    return conn


def quick_check(conn: apsw.Connection) -> str | None:
    """None when the database is sound, else SQLite's complaint."""
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if rows == [("ok",)]:
        return None
    return "; ".join(str(r[0]) for r in rows[:5])


Row = tuple[Any, ...]


def rows(conn: apsw.Connection, sql: str, args: Sequence[Any] = ()) -> list[Row]:
    """All rows of a query, typed loosely: apsw's own row type is a union of every SQL type."""
    return [tuple(r) for r in conn.execute(sql, args)]


def scalar(conn: apsw.Connection, sql: str, args: Sequence[Any] = ()) -> Any:
    found = conn.execute(sql, args).fetchall()
    return found[0][0] if found else None
