"""The one SQLite connection factory and migration runner, for the indexes and the state.

apsw, WAL, pragmas, sqlite-vec loaded and probed. Python's own sqlite3 often cannot load
extensions; apsw ships a current SQLite that can. sqlite-vec is *probed* with a real vec0
KNN query, once per process, so a build that loads but does not work is detected: keyword
search then still works and status says why.

Database files are created 0600 in 0700 folders whatever the umask (SQLite gives the WAL
and shared-memory files the database's mode): they hold the user's notes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

BUSY_TIMEOUT_MS = 5000
# A named migration: (name, SQL). Applied once each, in order, recorded in `migrations`.
Migration = tuple[str, str]
# What says a file is damaged (moved aside and rebuilt); anything else is not ours to judge.
CORRUPTION = (apsw.CorruptError, apsw.NotADBError)


@frozen_record(frozen=True, eq=False, repr=False)
class VecSupport(Record):
    """Whether sqlite-vec loads here, its version, or why not."""

    ok: bool
    version: str
    reason: str  # why vectors are off, when not ok


def vec_extension_path() -> str:
    """``sqlite_vec.loadable_path()`` without importing the package: its ``__init__``
    imports sqlite3 and numpy.typing (numpy itself), which a start answering its first
    keyword question does not need yet. The extension is the file ``vec0`` beside it;
    ImportError, as the import would raise, when the wheel is missing."""
    spec = importlib.util.find_spec("sqlite_vec")  # None if sys.modules holds None
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'sqlite_vec'", name="sqlite_vec")
    folder = next(iter(spec.submodule_search_locations))
    return os.path.normpath(os.path.join(folder, "vec0"))


def _load_vec(conn: apsw.Connection) -> None:
    conn.enable_load_extension(True)
    conn.load_extension(vec_extension_path())
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


def make_private_dir(directory: Path) -> None:
    """Create ``directory`` (and missing parents) 0700; tighten it if it is ours and open."""
    missing = []
    for parent in (directory, *directory.parents):
        if parent.exists():
            break
        missing.append(parent)
    for new in reversed(missing):
        with contextlib.suppress(FileExistsError):
            new.mkdir(mode=0o700)
    _tighten(directory, 0o700)


def make_private_file(path: Path) -> None:
    """Create ``path`` empty if missing, 0600; tighten an existing one (and its WAL)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.close(fd)
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        _tighten(p, 0o600)


def _tighten(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):  # not ours, or gone: leave it
        st = os.stat(path)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077 | mode & 0o700)


def connect(
    path: Path | str,
    *,
    readonly: bool = False,
    vectors: bool = True,
    setup: Callable[[apsw.Connection], None] | None = None,
) -> apsw.Connection:
    """A configured connection; sqlite-vec is loaded when the probe says it works (and
    ``vectors``: the state database has no use for it). ``setup`` adds what one kind of
    database needs (the index's SQL functions: index/schema.py's ``connect``)."""
    flags = (
        apsw.SQLITE_OPEN_READONLY
        if readonly
        else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    )
    if not readonly and str(path) != ":memory:":
        make_private_dir(Path(path).parent)
        make_private_file(Path(path))
    conn = apsw.Connection(str(path), flags=flags)
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        if not readonly:
            _set_wal(conn)  # the first read: NotADBError here
            conn.execute("PRAGMA synchronous=NORMAL")
            # Freed content is zeroed when freed: a forgotten line's bytes do not linger in
            # a freed cell or page (index/purge.py; its cost: docs/lifecycle.md).
            conn.execute("PRAGMA secure_delete=ON")
        conn.execute("PRAGMA foreign_keys=ON")
        if setup is not None:
            setup(conn)
        if vectors and probe_vec().ok:
            _load_vec(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _set_wal(conn: apsw.Connection) -> None:
    """WAL mode. Switching a new file takes an exclusive lock, and SQLite refuses a second
    connection doing the same at that moment without waiting (busy timeout or not)."""
    for _ in range(200):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except apsw.BusyError:
            time.sleep(0.01)
    conn.execute("PRAGMA journal_mode=WAL")


def migrate(conn: apsw.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations not yet recorded, each in its own transaction; returns the
    names applied now."""
    # Under the write lock too: a bare write here, racing another new connection, could
    # be refused 'database is locked' without the busy timeout ever applying.
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    applied = []
    for name, sql in migrations:
        if name in done:
            continue
        # Checked again under the write lock: another connection opening the same new
        # database may have applied it since ("table meta already exists" is not corruption).
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not conn.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchall():
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (name, time.time())
                )
                applied.append(name)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied


def move_aside(path: Path) -> Path:
    """Move a damaged database to ``<name>.corrupt`` (replacing an older one) and drop its
    WAL and shared memory, so the next open starts afresh. Returns where it went."""
    aside = path.with_name(path.name + ".corrupt")
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()
    if path.exists():
        os.replace(path, aside)
    return aside


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
