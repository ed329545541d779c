"""Where each written line came from: the provenance ledger beside the markdown.

Where: ``memory/.provenance.jsonl`` inside the workspace. Hidden, so never indexed and never
readable by ``get`` (like ``memory/.history``). Markdown is the truth and the ledger travels
with it (git, sync, backup, export); it survives a reindex, a deleted index, a lost state
folder and a restart; it is plain text a person can read.

One JSON object a line, appended (O_APPEND, fsync) by the daemon only, while the append lock
of the markdown file it describes is held, and BEFORE the markdown line is written: a crash
in between leaves a record with no line (harmless, dropped at compaction: the
``ledger_compaction`` job); the other order would leave an untrusted line with no record,
counted as the owner's.

A line's trust is its own: it is found by (path, ``line_key``) (lines.py), never by its
text elsewhere (docs/provenance.md, write-path.md section 3). For one (path, key): the least
trusted ``add`` since the last ``forget`` (a tombstone: the line left that file), unless an
``approve`` later than those adds makes it the owner's. Records are folded in the order of
their ``at`` (file order on a tie), so two hosts' merged ledgers give the same answer. A
line with no record counts as ``owner`` (written by hand, inside the user's trust
boundary); so does a line moved or edited by hand (the person took it over). A copy of the
owner's text elsewhere never changes the owner's line. The text never sets provenance.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

from memoryd import records
from memoryd.errors import InvalidParams
from memoryd.files.beneath import open_beneath
from memoryd.files.fsutil import atomic_write_at, write_all
from memoryd.secrets import redact
from memoryd_client.search_terms import ORIGINS, SESSION_KINDS

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

__all__ = [
    "APPEND_VIAS",
    "HAND_WRITTEN",
    "LEDGER_NAME",
    "LEDGER_REL",
    "ORIGINS",
    "SESSION_KINDS",
    "VIAS",
    "Ledger",
    "Line",
    "Provenance",
    "Record",
    "check_provenance",
    "clean_session_id",
    "droppable",
    "fold",
    "least_trusted",
    "ledger_for",
]

LEDGER_NAME: Final = ".provenance.jsonl"
LEDGER_DIR: Final = "memory"
LEDGER_REL: Final = f"{LEDGER_DIR}/{LEDGER_NAME}"
VERSION: Final = 1
# ORIGINS: most trusted first. The least trusted of several sources is what a line is.
_TRUST: Final = {o: len(ORIGINS) - i for i, o in enumerate(ORIGINS)}
VIAS: Final = ("append", "mcp", "flush", "summary", "hippocampus", "import", "move")
OPS: Final = ("add", "forget", "approve", "forget_session")
_LINE_OPS: Final = ("forget", "approve")  # {k, path, at} only
# What a caller of the ``append`` method may say it is: a plain append, an MCP tool call
# (``mcp.append_origin`` applies), an agent's notes of its session (its stretch's trust).
APPEND_VIAS: Final = ("append", "mcp", "flush")
MAX_SESSION_ID: Final = 200
_WRITE_FLAGS: Final = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


def least_trusted(a: str, b: str) -> str:
    return a if _TRUST.get(a, 0) <= _TRUST.get(b, 0) else b


@frozen_record(frozen=True, eq=False, repr=False)
class Provenance(records.Record):
    """What the daemon knows of a line's source."""

    origin: str
    session_id: str | None = None
    session_kind: str | None = None

    def merged(self, other: Provenance) -> Provenance:
        """The less trusted of the two (the first on a tie)."""
        return other if _TRUST.get(other.origin, 0) < _TRUST.get(self.origin, 0) else self


HAND_WRITTEN: Final = Provenance("owner")  # a line with no record


def clean_session_id(value: str) -> str:
    """A session id as it may reach the disk (the ledger, a heading, the state database,
    logs): a secret in it replaced by ``[REDACTED:kind]`` (secrets.py), as in any text."""
    return redact(value).text


def check_provenance(
    origin: object, session_id: object, session_kind: object, *, default_origin: str
) -> Provenance:
    """Wire params as a Provenance, or InvalidParams naming the bad one."""
    if origin is None:
        origin = default_origin
    if origin not in ORIGINS:
        raise InvalidParams(
            f"origin must be one of {', '.join(ORIGINS)}", {"param": "origin", "got": origin}
        )
    if session_id is not None and (
        not isinstance(session_id, str)
        or not session_id
        or len(session_id) > MAX_SESSION_ID
        or not session_id.isprintable()
    ):
        raise InvalidParams(
            f"session_id must be a printable string of 1 to {MAX_SESSION_ID} characters",
            {"param": "session_id"},
        )
    if session_kind is not None and session_kind not in SESSION_KINDS:
        raise InvalidParams(
            f"session_kind must be one of {', '.join(SESSION_KINDS)}",
            {"param": "session_kind", "got": session_kind},
        )
    assert isinstance(origin, str)
    return Provenance(
        origin,
        clean_session_id(session_id) if isinstance(session_id, str) else None,
        session_kind if isinstance(session_kind, str) else None,
    )


@frozen_record(frozen=True, eq=False, repr=False)
class Record(records.Record):
    """One line's ledger record. ``op`` "add": line ``k`` was written to ``path`` (by whom:
    origin and session, and how: ``via``); "forget": line ``k`` was removed from ``path`` (a
    tombstone, a hash and no text); "approve": the owner took line ``k`` of ``path`` as
    theirs in review. Made by ``added``, ``tombstone`` and ``approval``."""

    k: str
    path: str
    origin: str
    session_id: str | None = None
    session_kind: str | None = None
    via: str = "append"
    at: float = 0.0
    op: str = "add"

    @classmethod
    def added(cls, k: str, path: str, prov: Provenance, via: str, at: float) -> Record:
        return cls(k, path, prov.origin, prov.session_id, prov.session_kind, via=via, at=at)

    @classmethod
    def tombstone(cls, k: str, path: str, at: float) -> Record:
        return cls(k, path, "owner", via="", at=at, op="forget")

    @classmethod
    def approval(cls, k: str, path: str, at: float) -> Record:
        return cls(k, path, "owner", via="", at=at, op="approve")

    @property
    def provenance(self) -> Provenance:
        return Provenance(self.origin, self.session_id, self.session_kind)

    def to_json(self) -> str:
        body: dict[str, Any] = {"v": VERSION, "op": self.op, "k": self.k, "path": self.path}
        if self.op == "add":
            body["origin"] = self.origin
            body["session_id"] = self.session_id
            body["session_kind"] = self.session_kind
            body["via"] = self.via
        body["at"] = round(self.at, 3)
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


@frozen_record(frozen=True, eq=False, repr=False)
class SessionMark(records.Record):
    """Issue 26's mark that a session is never flushed or indexed again (``forget
    --session``): a ledger line of its own kind, about a session rather than a line."""

    session_id: str
    at: float = 0.0
    op: ClassVar[str] = "forget_session"

    def to_json(self) -> str:
        body = {"v": VERSION, "op": self.op, "session_id": self.session_id}
        body["at"] = round(self.at, 3)
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


Entry = Record | SessionMark  # one ledger line


def entry_from_json(line: str) -> Entry | None:
    """The record (or session mark) of one ledger line, or None when it is not a valid one."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("v") != VERSION:
        return None
    at = obj.get("at", 0.0)
    at = float(at) if isinstance(at, int | float) else 0.0
    sid = obj.get("session_id")
    sid = sid if isinstance(sid, str) and sid else None
    if obj.get("op") == SessionMark.op:
        return SessionMark(sid, at) if sid else None
    k, path, origin, op = obj.get("k"), obj.get("path"), obj.get("origin"), obj.get("op")
    if op in _LINE_OPS and isinstance(k, str) and k and isinstance(path, str) and path:
        return Record(k, path, "owner", via="", at=at, op=str(op))
    if op != "add" or not isinstance(k, str) or not k or origin not in ORIGINS:
        return None
    kind = obj.get("session_kind")
    via = obj.get("via")
    return Record(
        k,
        path if isinstance(path, str) else "",
        str(origin),
        session_id=sid,
        session_kind=kind if kind in SESSION_KINDS else None,
        via=via if isinstance(via, str) else "append",
        at=at,
    )


Line = tuple[str, str]  # (path, line_key): a line in its file


def fold(records: Iterable[Record]) -> Provenance | None:
    """One line's provenance from its records (one (path, key)), in the order of their
    ``at`` (stable: file order on a tie): the least trusted ``add`` since the last
    ``forget``; an ``approve`` makes what came before it the owner's."""
    found: Provenance | None = None
    for rec in sorted(records, key=lambda r: r.at):
        if rec.op == "forget":
            found = None
        elif rec.op == "add":
            found = rec.provenance if found is None else found.merged(rec.provenance)
        elif rec.op == "approve" and found is not None:
            found = Provenance("owner", found.session_id, found.session_kind)
    return found


class Ledger:
    """One workspace's ledger in memory, reloaded when the file's (mtime, size) changed.

    Thread-safe. Lookups are dict reads; ``add`` appends and fsyncs before returning.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.RLock()
        self._records: list[Entry] = []
        self._lines: dict[Line, list[Record]] = {}  # each line's records, in file order
        self._by_line: dict[Line, Provenance] = {}
        self._forgotten: set[str] = set()
        self._signature: tuple[int, int] | None = None  # (mtime_ns, size) last loaded
        self.malformed = 0  # lines skipped at the last load
        self.generation = 0  # bumped on every change seen: derived data can tell it is stale

    # -- reading ------------------------------------------------------------------------
    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.root / LEDGER_REL)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def refresh(self) -> bool:
        """Load the file again when it changed since last seen; True when it did."""
        with self._lock:
            sig = self._stat()
            if sig == self._signature and (sig is not None or not self._records):
                return False
            self._load(sig)
            return True

    def _load(self, sig: tuple[int, int] | None) -> None:
        data = b""
        if sig is not None:
            with contextlib.suppress(FileNotFoundError):
                opened = open_beneath(self.root, LEDGER_REL, os.O_RDONLY | os.O_CLOEXEC)
                with os.fdopen(opened.fd, "rb") as f:
                    data = f.read()
                    st = os.fstat(f.fileno())
                    sig = (st.st_mtime_ns, st.st_size)
        records: list[Entry] = []
        malformed = 0
        for raw in data.decode("utf-8", "replace").splitlines():
            if not raw.strip():
                continue
            rec = entry_from_json(raw)
            if rec is None:
                malformed += 1  # a torn last line after a crash, or a hand edit
            else:
                records.append(rec)
        self._records = []
        self._lines = {}
        self._by_line = {}
        self._forgotten = set()
        self._index(records)
        self._signature = sig
        self.malformed = malformed

    def _index(self, records: Iterable[Entry]) -> None:
        touched: set[Line] = set()
        for rec in records:
            self._records.append(rec)
            if isinstance(rec, SessionMark):
                self._forgotten.add(rec.session_id)
                continue
            line = (rec.path, rec.k)
            self._lines.setdefault(line, []).append(rec)
            touched.add(line)
        for line in touched:
            found = fold(self._lines[line])
            if found is None:
                self._by_line.pop(line, None)
            else:
                self._by_line[line] = found
        self.generation += 1

    def lookup(self, path: str, key: str) -> Provenance | None:
        """The provenance of line ``key`` of ``path`` (workspace-relative; None: no record,
        the line counts as the owner's). Call ``refresh`` first where the file may have
        changed (once per batch, not per line)."""
        return self._by_line.get((path, key))

    def __len__(self) -> int:
        return len(self._records)

    @property
    def empty(self) -> bool:
        """No line has a provenance: every line is the owner's (lookups can be skipped)."""
        return not self._by_line

    def records(self) -> list[Record]:
        """Every line's records, in file order (the session marks: ``forgotten_sessions``)."""
        with self._lock:
            return [r for r in self._records if isinstance(r, Record)]

    def records_for_session(self, session_id: str) -> list[Record]:
        with self._lock:
            return [
                r
                for r in self._records
                if isinstance(r, Record) and r.op == "add" and r.session_id == session_id
            ]

    def lines_of(self, path: str) -> dict[str, Provenance]:
        """Every recorded line of ``path``: key -> provenance."""
        with self._lock:
            return {k: p for (rel, k), p in self._by_line.items() if rel == path}

    def held(self, origins: Collection[str]) -> list[tuple[Line, Provenance, Record]]:
        """The lines whose provenance is one of ``origins`` (untrusted, system: what the
        review queue looks at), each with its latest ``add`` record (how and when)."""
        with self._lock:
            out = []
            for line, prov in self._by_line.items():
                if prov.origin in origins:
                    adds = [r for r in self._lines[line] if r.op == "add"]
                    out.append((line, prov, max(adds, key=lambda r: r.at)))
            return out

    @property
    def forgotten_sessions(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._forgotten)

    # -- writing ------------------------------------------------------------------------
    def add(self, records: Sequence[Entry]) -> None:
        """Append ``records`` durably (write + fsync) before returning. The caller holds the
        lock of the markdown file they describe and writes that file after this."""
        if not records:
            return
        payload = "".join(r.to_json() + "\n" for r in records).encode("utf-8")
        with self._lock:
            self.refresh()
            opened = open_beneath(self.root, LEDGER_REL, _WRITE_FLAGS, 0o600, make_dirs=True)
            try:
                size = os.fstat(opened.fd).st_size
                # A torn last line (a crash mid-write) must not swallow our first record.
                if size and os.pread(opened.fd, 1, size - 1) != b"\n":
                    payload = b"\n" + payload
                write_all(opened.fd, payload)
                os.fsync(opened.fd)
                st = os.fstat(opened.fd)
            finally:
                os.close(opened.fd)
            expected = size + len(payload)
            self._index(records)
            # Someone else wrote too (another daemon on this workspace): reload next time.
            self._signature = (st.st_mtime_ns, st.st_size) if st.st_size == expected else None

    def forget_lines(self, lines: Iterable[Line], at: float | None = None) -> None:
        """Tombstones: each (path, key) was removed from its file (by a forget, H33)."""
        when = time.time() if at is None else at
        self.add([Record.tombstone(k, path, when) for path, k in lines])

    def approve(self, path: str, key: str, at: float | None = None) -> None:
        """The owner took line ``key`` of ``path`` as theirs (review): its annotations apply."""
        when = time.time() if at is None else at
        self.add([Record.approval(key, path, when)])

    def carry(self, old: str, new: str, at: float | None = None) -> int:
        """The daemon moved file ``old`` to ``new`` (retention's archive): its lines keep
        their provenance there. The caller holds both files' locks. How many were carried."""
        when = time.time() if at is None else at
        records = [
            Record.added(k, new, p, "move", when) for k, p in sorted(self.lines_of(old).items())
        ]
        self.add(records)
        return len(records)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold off every ``add`` while the caller replaces the file as a whole (sync's
        merge through the journal: an add in between would land in the replaced inode and
        be lost); the file is read again afterwards."""
        with self._lock:
            try:
                yield
            finally:
                self._signature = None
                self.refresh()

    def forget_session(self, session_id: str, at: float | None = None) -> None:
        """Issue 26: record that ``session_id`` is never flushed or indexed again."""
        self.add([SessionMark(session_id, time.time() if at is None else at)])

    def rewrite(self, without: Callable[[Record], bool]) -> int:
        """Replace the file, atomically, with the records ``without`` does not drop (only
        ``add`` and ``approve`` records are offered to it: tombstones and forget_session
        marks are always kept); returns how many were dropped."""
        with self._lock:
            self.refresh()
            kept = [
                r
                for r in self._records
                if not isinstance(r, Record) or r.op not in ("add", "approve") or not without(r)
            ]
            return self._replace(kept)

    def _replace(self, kept: list[Entry]) -> int:
        dropped = len(self._records) - len(kept)
        if not dropped:
            return 0
        data = "".join(r.to_json() + "\n" for r in kept).encode("utf-8")
        opened = open_beneath(self.root, LEDGER_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            atomic_write_at(opened.fd, LEDGER_NAME, data, mode=0o600)
        finally:
            os.close(opened.fd)
        self._load(self._stat())
        return dropped

    def compact(
        self,
        live: Mapping[str, Collection[str]],
        keep_forgets_since: float,
        keep_lines_since: float,
    ) -> dict[str, int]:
        """Drop the records ``droppable`` names among those of the paths in ``live`` (path ->
        the keys now in that file; the caller holds those files' locks, so no record of
        them is written meanwhile); the file is replaced atomically. How many of each op
        went."""
        with self._lock:
            self.refresh()
            records = [r for r in self._records if isinstance(r, Record)]
            gone = droppable(records, live, keep_forgets_since, keep_lines_since)
            if not gone:
                return {}
            drop = {id(records[i]) for i in gone}
            self._replace([r for r in self._records if id(r) not in drop])
            counts: dict[str, int] = {}
            for i in gone:
                counts[records[i].op] = counts.get(records[i].op, 0) + 1
            return counts


def droppable(
    records: Sequence[Record],
    live: Mapping[str, Collection[str]],
    keep_forgets_since: float,
    keep_lines_since: float,
) -> set[int]:
    """The positions in ``records`` a compaction drops, among the records of the paths in
    ``live`` (path -> the keys now in that file). An ``add`` or ``approve`` older than
    ``keep_lines_since`` goes when its line is no longer in its file, or when a later
    tombstone made it moot (``fold`` starts again after a ``forget``). A tombstone goes when
    older than ``keep_forgets_since`` (sync needs it for ``sync.tombstone_days``) and every
    record before it on its line goes too: so the fold of what stays is what it was."""
    lines: dict[Line, list[int]] = {}
    for i, rec in enumerate(records):
        if rec.path in live:
            lines.setdefault((rec.path, rec.k), []).append(i)
    out: set[int] = set()
    for (path, k), positions in lines.items():
        ordered = sorted(positions, key=lambda i: records[i].at)  # fold's order
        ops = [records[i].op for i in ordered]
        last_forget = max((n for n, op in enumerate(ops) if op == "forget"), default=-1)
        on_disk = k in live[path]
        all_before = True  # every record so far on this line is dropped
        for n, i in enumerate(ordered):
            rec = records[i]
            if rec.op == "forget":
                gone = all_before and rec.at < keep_forgets_since
            else:
                gone = rec.at < keep_lines_since and (n < last_forget or not on_disk)
            if gone:
                out.add(i)
            all_before = all_before and gone
    return out


_LEDGERS: dict[Path, Ledger] = {}
_LEDGERS_LOCK = threading.Lock()


def ledger_for(root: Path) -> Ledger:
    """The process's one in-memory ledger of the workspace at ``root`` (resolved): the
    appender writes through it and the index reads it, so both see the same records."""
    with _LEDGERS_LOCK:
        ledger = _LEDGERS.get(root)
        if ledger is None:
            ledger = _LEDGERS[root] = Ledger(root)
    ledger.refresh()
    return ledger
