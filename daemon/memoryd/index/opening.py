"""Opening an index file: create or migrate it, tell damage (moved aside, rebuilt from the
markdown) from a file that cannot be used right now (an error, the file untouched), and
compare its fingerprints with the settings (a change re-chunks or re-embeds in the
background, keyword search answering meanwhile).

A file whose header or schema is damaged fails to open and is rebuilt at once. The full
check of every page (``PRAGMA quick_check``) reads the whole file: 1.0 s at 100k chunks,
which every search at start waited for. It runs once the index is open, on a thread of its
own (``IntegrityCheck``), and what it finds goes the way of damage found at run time
(damage.py: moved aside and rebuilt while serving).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from memoryd import sqlite
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.errors import IndexUnavailable
from memoryd.index import schema, store
from memoryd.index.vectors.mirror import VectorMirror
from memoryd.runtime.config import IndexConfig
from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.index")

# Errors that say the index cannot be used now, not that it is damaged: never moved aside.
NOT_CORRUPTION = (
    apsw.BusyError,
    apsw.LockedError,
    apsw.CantOpenError,
    apsw.PermissionsError,
    apsw.ReadOnlyError,
    apsw.IOError,
    apsw.FullError,
)
VECTORS_OFF = "vectors off"  # meta fingerprint of an index opened without sqlite-vec
CHUNKER_VERSION = 2  # bump when chunker output changes: indexes re-chunk on open


def open_or_rebuild(db_path: Path) -> tuple[apsw.Connection, str | None]:
    """The writer's connection, migrated; and why it was rebuilt (None: it was not)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    opened: apsw.Connection | None = None
    try:
        opened = schema.connect(db_path)
        schema.migrate(opened)  # reads the header and the schema: a garbage file fails here
    except apsw.Error as exc:
        if opened is not None:
            opened.close()
        if isinstance(exc, NOT_CORRUPTION):
            # Not corruption: moving the file aside would throw a good index away.
            raise IndexUnavailable(f"cannot open index {db_path}: {exc}") from None
        return rebuild(db_path, f"{type(exc).__name__}: {exc}")
    return opened, None


def rebuild(db_path: Path, problem: str) -> tuple[apsw.Connection, str]:
    """A damaged index (closed) moved aside and a new one made: (its connection, why)."""
    _move_aside(db_path, problem)
    opened = schema.connect(db_path)
    schema.migrate(opened)
    return opened, f"index was corrupt ({problem}); rebuilt from the files"


class IntegrityCheck:
    """``PRAGMA quick_check`` of an open index on a read-only connection and a thread of
    its own; ``on_damage`` gets what it finds as a CorruptError."""

    def __init__(self, db_path: Path, on_damage: Callable[[BaseException], None]) -> None:
        self.db_path = db_path
        self.on_damage = on_damage
        self._lock = threading.Lock()
        self._conn: apsw.Connection | None = None
        self._closed = False
        self._started = False
        self._thread = threading.Thread(target=self._run, name="memoryd-check", daemon=True)

    def start(self) -> None:
        """Begin the check (once; not after close)."""
        with self._lock:
            if self._started or self._closed:
                return
            self._started = True
        self._thread.start()

    def _run(self) -> None:
        try:
            with self._lock:
                if self._closed:
                    return
                self._conn = schema.connect(self.db_path, readonly=True)
            inode = os.stat(self.db_path).st_ino  # the file checked: a swap makes another
            problem = sqlite.quick_check(self._conn)
        except sqlite.CORRUPTION as exc:
            problem = f"{type(exc).__name__}: {exc}"
        except (apsw.Error, OSError) as exc:  # closing (interrupted), busy...: not damage
            if not self._closed:
                log.warning("index_check_skipped", path=str(self.db_path), error=repr(exc))
            return
        finally:
            with self._lock:
                conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()
        with contextlib.suppress(OSError):
            if problem is not None and not self._closed and os.stat(self.db_path).st_ino == inode:
                self.on_damage(apsw.CorruptError(f"quick_check: {problem}"))

    def close(self) -> None:
        """Stop a check under way (its query is interrupted) and wait for the thread."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                with contextlib.suppress(apsw.Error):
                    self._conn.interrupt()
        if self._thread.is_alive():
            self._thread.join()


def _move_aside(db_path: Path, problem: str) -> None:
    aside = sqlite.move_aside(db_path)
    log.error(
        "index_corrupt",
        path=str(db_path),
        problem=problem,
        moved_to=str(aside),
        action="rebuilding from the markdown files",
    )


def apply_fingerprint(
    conn: apsw.Connection,
    cfg: IndexConfig,
    provider: EmbeddingProvider | None,
    vec_ok: bool,
    mirror: VectorMirror,
    *,
    provider_known: bool = True,
) -> None:
    """A chunking change re-chunks every file; an embedding change re-embeds every chunk.

    Both happen in the background: keyword search keeps answering meanwhile.
    ``provider_known`` False: the provider is still being chosen (the index opens first, so
    keyword search never waits for a model): only the chunking is compared now, the
    embedding when it is known (``apply_embedding``).
    """
    meta = schema.get_meta(conn)
    chunking = f"{cfg.chunk_tokens}/{cfg.chunk_overlap}/{CHUNKER_VERSION}"
    with conn:
        if meta.get("chunking") != chunking:
            conn.execute("UPDATE files SET hash = ''")
        schema.set_meta(conn, {"schema_version": str(schema.SCHEMA_VERSION), "chunking": chunking})
        if provider_known:
            apply_embedding(conn, cfg, provider, vec_ok, mirror)


def embedding_fingerprint(
    cfg: IndexConfig, provider: EmbeddingProvider | None, vec_ok: bool
) -> str:
    """What the stored vectors were made with: another value drops them all."""
    p = provider
    if not vec_ok:
        # Vectors written now could not follow later deletes (the vec0 table cannot be
        # touched without sqlite-vec), so none are kept: this fingerprint makes the first
        # open with sqlite-vec again drop what is left and re-embed (mostly from the cache).
        return VECTORS_OFF
    if p is not None:
        return f"{p.name}|{p.model}|{p.provider_key}|windows={cfg.vector_window_tokens}|l2"
    return "none"


def apply_embedding(
    conn: apsw.Connection,
    cfg: IndexConfig,
    provider: EmbeddingProvider | None,
    vec_ok: bool,
    mirror: VectorMirror,
) -> None:
    """The embedding half of ``apply_fingerprint`` (its own transaction, or the caller's)."""
    embedding = embedding_fingerprint(cfg, provider, vec_ok)
    with conn:
        if schema.get_meta(conn).get("embedding") != embedding:
            store.drop_vectors(conn, mirror)
        schema.set_meta(conn, {"embedding": embedding})
        if provider is not None and provider.dims and vec_ok:
            store.create_vec_table(conn, provider.dims)


def upgrade_keyword_text(
    conn: apsw.Connection | None, root: Path, on_error: Callable[[BaseException, str], None]
) -> None:
    """Writer thread: an index made before CJK bigrams re-indexes its CJK chunks' keywords
    (once; schema.upgrade_keyword_text). ``on_error``: a failure (rolled back: the old
    keywords keep answering), for damage to judge."""
    if conn is None:
        return
    started = time.perf_counter()
    try:
        redone = schema.upgrade_keyword_text(conn)
    except apsw.Error as exc:
        log.error("keyword_upgrade_failed", workspace=str(root), error=str(exc))
        on_error(exc, "upgrading the keywords")
        return
    if redone:  # None: done before; 0: nothing in CJK
        log.info(
            "keyword_text_upgraded",
            workspace=str(root),
            chunks=redone,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )
