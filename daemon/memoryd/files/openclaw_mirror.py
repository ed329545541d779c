"""OpenClaw's sessions copied from its SQLite stores into its workspace as JSONL transcripts.

OpenClaw 2026.9 keeps transcripts in one SQLite store per agent
(``<home>/agents/<agent>/agent/openclaw-agent.sqlite``, files/openclaw_store.py), not in files.
For a workspace registered as OpenClaw's, each session's new rows are appended, in ``seq``
order and in OpenClaw's own event form (one JSON event a line), to
``sessions/openclaw/<agent>/<session id>.jsonl``; the session index then reads that file as it
reads any transcript: incrementally, from its last byte, the growing tail re-chunked. Names
are percent-encoded (``urllib.parse.quote``) so that any agent or session id is one safe
file name, and the plugin decodes them back.

Why a copy and not an index source of its own: the index's tested, incremental and
tail-aware transcript path applies unchanged, and a hit's path names its agent and session.

The store is opened read-only (``mode=ro``) and each query sees one committed snapshot while
OpenClaw writes (WAL). Only rows past the last copied ``seq`` are read, found by a seek on the
table's primary key (session_id, seq). That ``seq`` is kept in the state database, not taken
from the file: a copy that retention archived or someone deleted is not filled again with
old rows. A file is appended before its mark moves, so a crash between the two repeats a few
events at worst, never loses one. A session with no mark but a copy (the state database was
rebuilt from ``workspaces.json``) resumes after as many rows as the copy has lines, one line
per row, counting the copies retention archived (``sessions/archive/YYYY-MM/openclaw/``) too,
instead of copying them all again.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import quote

import apsw

from memoryd.files import openclaw_archives, openclaw_store
from memoryd.files.layout import (
    ARCHIVE_DIR,
    OPENCLAW_SESSIONS_DIR,
    SESSIONS_DIR,
    TRANSCRIPT_SUFFIX,
)

MAX_NAME_BYTES: Final = 200  # an encoded id longer than this is not copied (file name limits)


@dataclass
class StoreReport:
    """One store's last pass, for status."""

    agent: str
    path: str
    sessions: int = 0
    rows_read: int = 0  # event rows read in this pass (only new ones)
    rows_read_total: int = 0  # since the daemon started
    rows_mirrored: int = 0  # appended to the copies in this pass
    archives_read: int = 0  # archived sessions read in this pass (new ones only)
    files: list[Path] = field(default_factory=list)  # the copies appended to
    error: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # session id -> why not copied

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent": self.agent,
            "path": self.path,
            "sessions": self.sessions,
            "rows_read": self.rows_read,
            "rows_read_total": self.rows_read_total,
            "rows_mirrored": self.rows_mirrored,
            "archives_read": self.archives_read,
        }
        if self.error is not None:
            out["error"] = self.error
        if self.skipped:
            out["skipped"] = dict(self.skipped)
        return out


def find_stores(home: Path) -> list[Path]:
    """The agent stores under an OpenClaw home, in a stable order."""
    agents = home / "agents"
    try:
        names = sorted(e.name for e in os.scandir(agents) if e.is_dir())
    except OSError:
        return []
    out = []
    for name in names:
        store = agents / name / "agent" / openclaw_store.STORE_NAME
        if store.is_file():
            out.append(store)
    return out


def signature(store: Path) -> tuple[int, ...]:
    """What changes when OpenClaw writes: the database's and its WAL's size and mtime."""
    out: list[int] = []
    for path in (store, store.with_name(store.name + "-wal")):
        try:
            st = path.stat()
        except OSError:
            out += [-1, -1]
            continue
        out += [st.st_size, st.st_mtime_ns]
    return tuple(out)


def file_name(ident: str) -> str:
    """An agent or session id as one file name: percent-encoded, never hidden or ``..``."""
    encoded = quote(ident, safe="")
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


def mirror_rel(agent: str, session: str) -> str:
    folder = f"{SESSIONS_DIR}/{OPENCLAW_SESSIONS_DIR}/{file_name(agent)}"
    return f"{folder}/{file_name(session)}{TRANSCRIPT_SUFFIX}"


class Marks(Protocol):
    """How far each session of a store was copied (kept in the state database)."""

    def of(self, store: Path) -> dict[str, int]: ...

    def set(self, store: Path, session: str, seq: int) -> None: ...


def mirror_store(
    store: Path,
    root: Path,
    marks: Marks,
    stopping: Callable[[], bool] = lambda: False,
    forgotten: frozenset[str] = frozenset(),
    archives_done: set[tuple[str, str]] | None = None,
) -> StoreReport:
    """Append every session's new rows in ``store`` to its copy under ``root`` (``stopping``:
    checked between sessions, so a shutdown never waits for a whole store). A session in
    ``forgotten`` (``memctl forget --session``) is never copied again. Sessions OpenClaw
    archived are read from their archive once each (``archives_done``: the (session,
    generation) pairs already read by this process)."""
    report = StoreReport(openclaw_store.agent_of(store), str(store))
    done = marks.of(store)
    try:
        with openclaw_store.open_store(store) as conn:
            sessions = openclaw_store.last_seqs(conn)
            report.sessions = len(sessions)
            for session, last in sessions.items():
                if stopping():
                    break
                if session in forgotten:
                    report.skipped[session] = "forgotten (forget --session): never copied again"
                    continue
                copied = done.get(session)
                if copied is None:
                    copied = _resume_point(conn, store, root, report.agent, session, marks)
                if last > copied:
                    _mirror_session(conn, store, root, session, copied, marks, report)
            done = marks.of(store)
            for archive in openclaw_archives.list_archives(conn):
                if stopping():
                    break
                key = (archive.session_id, archive.generation)
                if archives_done is not None and key in archives_done:
                    continue
                if archive.session_id in forgotten:
                    report.skipped[archive.session_id] = (
                        "forgotten (forget --session): never copied again"
                    )
                    continue
                _mirror_archive(conn, store, root, archive, done, marks, report)
                if archives_done is not None:
                    archives_done.add(key)
    except (openclaw_store.StoreError, OSError) as exc:
        report.error = str(exc)
    return report


def _resume_point(
    conn: Any, store: Path, root: Path, agent: str, session: str, marks: Marks
) -> int:
    """The seq after which a session without a mark goes on: the seq of the copy's last
    line (row N for N lines, rows in seq order), or -1 (everything) without a copy."""
    lines = _copied_lines(root, agent, session)
    if lines == 0:
        return -1
    try:
        row = conn.execute(
            "SELECT seq FROM transcript_events WHERE session_id = ? ORDER BY seq LIMIT 1 OFFSET ?",
            (session, lines - 1),
        ).fetchone()
        if row is None:  # more lines than rows: the copy holds the whole session
            row = conn.execute(
                "SELECT max(seq) FROM transcript_events WHERE session_id = ?", (session,)
            ).fetchone()
    except apsw.Error as exc:
        raise openclaw_store.StoreError(f"cannot read OpenClaw's events: {exc}") from None
    seq = int(row[0])
    marks.set(store, session, seq)
    return seq


def _copied_lines(root: Path, agent: str, session: str) -> int:
    """The session's lines already copied: its copy's and those of the copies retention
    archived (``sessions/archive/YYYY-MM/openclaw/<agent>/<session>.jsonl[.N].gz``)."""
    rel = mirror_rel(agent, session)
    name = rel.rsplit("/", 1)[1]
    archived = re.compile(re.escape(name) + r"(\.\d+)?\.gz")
    top = root / SESSIONS_DIR / ARCHIVE_DIR
    total = _count_lines(root / rel, open)
    for folder in top.glob(f"*/{OPENCLAW_SESSIONS_DIR}/{file_name(agent)}") if top.is_dir() else []:
        for entry in os.scandir(folder):
            if archived.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                total += _count_lines(Path(entry.path), gzip.open)
    return total


def _count_lines(path: Path, opener: Callable[..., Any]) -> int:
    try:
        with opener(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0
    except (OSError, EOFError, zlib.error):  # a damaged archive: its lines are not known
        return 0


def _mirror_session(
    conn: Any,
    store: Path,
    root: Path,
    session: str,
    after: int,
    marks: Marks,
    report: StoreReport,
) -> None:
    rel = mirror_rel(report.agent, session)
    if len(os.fsencode(rel.rsplit("/", 1)[1])) > MAX_NAME_BYTES:
        report.skipped[session] = "the session id is too long for a file name"
        return
    path = root / rel
    with _append_beneath(root, path) as out:
        while True:
            rows = openclaw_store.events_after(conn, session, after)
            report.rows_read += len(rows)
            if not rows:
                break
            out.write(b"".join(line + b"\n" for _, line in rows))
            out.flush()
            after = rows[-1][0]
            marks.set(store, session, after)
            report.rows_mirrored += len(rows)
            if len(rows) < openclaw_store.BATCH_ROWS:
                break
    report.files.append(path)


def _mirror_archive(
    conn: Any,
    store: Path,
    root: Path,
    archive: openclaw_archives.Archive,
    done: dict[str, int],
    marks: Marks,
    report: StoreReport,
) -> None:
    """An archived session's lines past what its copy already holds. Its rows were copied in
    ``seq`` order, and OpenClaw numbers a session's rows 0, 1, 2, ... as its archive's lines,
    so a mark of ``seq`` means the first ``seq + 1`` lines are there already."""
    session = archive.session_id
    rel = mirror_rel(report.agent, session)
    if len(os.fsencode(rel.rsplit("/", 1)[1])) > MAX_NAME_BYTES:
        report.skipped[session] = "the session id is too long for a file name"
        return
    copied = done.get(session)
    have = copied + 1 if copied is not None else _copied_lines(root, report.agent, session)
    path = root / rel
    n = 0
    try:
        with contextlib.ExitStack() as opened:
            out = None
            batch: list[bytes] = []
            report.archives_read += 1
            for line in openclaw_archives.archive_lines(conn, archive):
                n += 1
                if n > have:
                    batch.append(line + b"\n")
                if len(batch) >= openclaw_store.BATCH_ROWS:
                    out = out or opened.enter_context(_append_beneath(root, path))
                    _write(out, batch, report)
                    marks.set(store, session, n - 1)
            if batch:
                out = out or opened.enter_context(_append_beneath(root, path))
                _write(out, batch, report)
                marks.set(store, session, n - 1)
    except openclaw_store.StoreError as exc:
        report.skipped[session] = str(exc)
    if n > have:
        done[session] = n - 1
        report.files.append(path)


def _write(out: Any, batch: list[bytes], report: StoreReport) -> None:
    if batch:
        out.write(b"".join(batch))
        out.flush()
        report.rows_mirrored += len(batch)
        batch.clear()


@contextlib.contextmanager
def _append_beneath(root: Path, path: Path) -> Iterator[Any]:
    """``path`` opened to append, its folders made; refused when a link would lead outside
    the workspace."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    real = path.parent.resolve()
    if not real.is_relative_to(root.resolve()):
        raise OSError(f"{path.parent} leads outside the workspace ({real}): not written")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "ab") as out:
        yield out
