"""What the index keeps of single lines: annotations and provenance (table ``line_meta``).

Sparse: a row only for a line with an annotation or a ledger record. A file written by hand
without annotations has none, and costs one substring test to find that out (plus a key per
line while the ledger has records). Rows are written with the file's chunks, in the same
transaction; searches read them through ``LineMetaMap``, an in-memory copy (no SQL per
candidate; an empty map costs nothing).

Annotations of a line whose origin is ``untrusted`` or ``system`` are not kept: a web page
must not boost itself, trigger itself, or supersede the owner's fact by key.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import apsw

from memoryd.files.annotations import parse_line
from memoryd.files.lines import line_key
from memoryd.files.provenance import ORIGINS, Ledger, least_trusted

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why
else:
    from memoryd.named_tuple import NamedTuple

UNTRUSTED_ORIGINS = frozenset({"untrusted", "system"})
_NO_LINES: tuple[list[int], list[LineMeta]] = ([], [])  # a file without meta (never changed)
# line_meta's superseded_by column (migration 0004) is never filled: supersession is worked
# out in memory from the keys (index/search/supersession.py), so it is not read or written.
_COLS = "path, line, importance, triggers, project, key, origin, session_id, session_kind"


class LineMeta(NamedTuple):
    """What a line's annotations and ledger record say about it. A named tuple (a frozen
    slots dataclass compiled six methods from source, ~4 M instructions before a spawned
    daemon's first answer, issue 38): equal, hashed and shown as that dataclass was."""

    importance: int | None = None
    triggers: tuple[str, ...] = ()
    project: str | None = None
    key: str | None = None
    origin: str | None = None  # None: no record, the owner's
    session_id: str | None = None
    session_kind: str | None = None

    def row(self, path: str, line: int) -> tuple[object, ...]:
        return (
            path,
            line,
            self.importance,
            "\n".join(self.triggers) or None,
            self.project,
            self.key,
            self.origin,
            self.session_id,
            self.session_kind,
        )

    @classmethod
    def from_row(cls, r: Sequence[object]) -> LineMeta:
        imp, trig, proj, key, origin, sid, kind = r[2:9]
        return cls(
            int(imp) if isinstance(imp, int) else None,
            tuple(str(trig).split("\n")) if trig else (),
            str(proj) if proj else None,
            str(key) if key else None,
            str(origin) if origin in ORIGINS else None,
            str(sid) if sid else None,
            str(kind) if kind else None,
        )


def file_meta(path: str, text: str, ledger: Ledger | None, first: int = 1) -> dict[int, LineMeta]:
    """The meta of ``text``'s lines (of file ``path``) that have any, by line number
    (``first``: the first line's). A line's provenance is its own record in that file."""
    keyed = ledger is not None and not ledger.empty
    if not keyed and "<!--" not in text:
        return {}
    out: dict[int, LineMeta] = {}
    for n, line in enumerate(text.split("\n"), first):
        ann = parse_line(line)[1] if "<!--" in line else None
        prov = ledger.lookup(path, line_key(line)) if keyed and ledger is not None else None
        if ann is None and prov is None:
            continue
        if prov is not None and prov.origin in UNTRUSTED_ORIGINS:
            ann = None
        if ann is None and prov is None:
            continue
        out[n] = LineMeta(
            ann.importance if ann else None,
            ann.triggers if ann else (),
            ann.project if ann else None,
            ann.key if ann else None,
            prov.origin if prov else None,
            prov.session_id if prov else None,
            prov.session_kind if prov else None,
        )
    return out


def write(conn: apsw.Connection, path: str, meta: dict[int, LineMeta], had_rows: bool) -> None:
    """Replace ``path``'s rows (in the caller's transaction); ``had_rows``: whether the
    map says it had any (no statement at all for a file with none before or after)."""
    if had_rows:
        conn.execute("DELETE FROM line_meta WHERE path = ?", (path,))
    if meta:
        conn.executemany(
            f"INSERT OR REPLACE INTO line_meta({_COLS}) VALUES (?,?,?,?,?,?,?,?,?)",
            [m.row(path, n) for n, m in sorted(meta.items())],
        )


class Summary(NamedTuple):
    """A span of lines' meta as one: what a hit or a candidate carries (a named tuple, as
    LineMeta)."""

    importance: int | None
    triggers: tuple[str, ...]
    project: str | None
    key: str | None
    origin: str  # the least trusted; 'owner' when no line has a record
    session_id: str | None


def summarise(metas: Iterable[LineMeta]) -> Summary | None:
    """``metas`` as one (None for none): the max importance, the triggers' union, the first
    project and key, the least trusted origin with its session."""
    found = recorded = False
    importance: int | None = None
    triggers: dict[str, None] = {}
    project = key = session = None
    origin = "owner"
    for m in metas:
        found = True
        if m.importance is not None:
            importance = m.importance if importance is None else max(importance, m.importance)
        triggers.update(dict.fromkeys(m.triggers))
        project = project or m.project
        key = key or m.key
        if m.origin is not None:
            if not recorded or (m.origin != origin and least_trusted(origin, m.origin) == m.origin):
                origin, session = m.origin, m.session_id
            recorded = True
    if not found:
        return None
    return Summary(importance, tuple(triggers), project, key, origin, session)


class LineMetaMap:
    """The ``line_meta`` table in memory: path -> its lines (sorted) and their meta.

    The writer stages a file's new rows in its transaction and applies them when it
    commits; searches read it from any thread (a whole file's entry is swapped at once)."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[list[int], list[LineMeta]]] = {}
        self._staged: dict[str, dict[int, LineMeta]] = {}
        self._lock = threading.Lock()
        self.generation = 0  # bumped at every change: what is derived from it can tell

    def __bool__(self) -> bool:
        return bool(self._files)

    def load(self, conn: apsw.Connection) -> None:
        files: dict[str, dict[int, LineMeta]] = {}
        for r in conn.execute(f"SELECT {_COLS} FROM line_meta ORDER BY path, line"):
            files.setdefault(str(r[0]), {})[int(r[1])] = LineMeta.from_row(r)
        with self._lock:
            self._files = {p: _entry(m) for p, m in files.items()}
            self._staged.clear()
            self.generation += 1

    def keyed(self) -> list[tuple[str, int, str]]:
        """(path, line, key) of every line with a key (issue 26's supersession; untrusted
        and system lines carry none)."""
        files = self._files
        return [
            (p, n, m.key)
            for p, (lines, metas) in files.items()
            for n, m in zip(lines, metas, strict=True)
            if m.key
        ]

    def has(self, path: str) -> bool:
        return path in self._files or path in self._staged

    def stage(self, path: str, meta: dict[int, LineMeta]) -> None:
        with self._lock:
            self._staged[path] = meta

    def commit(self, path: str) -> None:
        with self._lock:
            meta = self._staged.pop(path, None)
            if meta is None:
                return
            if meta:
                self._files[path] = _entry(meta)
            elif self._files.pop(path, None) is None:
                return
            self.generation += 1

    def discard(self) -> None:
        with self._lock:
            self._staged.clear()

    def _bounds(
        self, path: str, start: int, end: int
    ) -> tuple[list[int], list[LineMeta], int, int]:
        """``path``'s lines with meta, their meta, and where lines start..end (inclusive)
        begin and end among them (a search asks this per hit: no copies made here)."""
        lines, metas = self._files.get(path, _NO_LINES)
        return lines, metas, bisect.bisect_left(lines, start), bisect.bisect_right(lines, end)

    def span(self, path: str, start: int, end: int) -> list[LineMeta]:
        """The meta of ``path``'s lines start..end (inclusive)."""
        _, metas, a, b = self._bounds(path, start, end)
        return metas[a:b]

    def lines(self, path: str, start: int, end: int) -> list[tuple[int, LineMeta]]:
        """The same, each with its line number."""
        lines, metas, a, b = self._bounds(path, start, end)
        return list(zip(lines[a:b], metas[a:b], strict=True))

    def items(self) -> list[tuple[str, int, LineMeta]]:
        """Every line with meta (for the trigger lane's index)."""
        out = []
        for path, (lines, metas) in list(self._files.items()):
            out += [(path, n, m) for n, m in zip(lines, metas, strict=True)]
        return out


def _entry(meta: dict[int, LineMeta]) -> tuple[list[int], list[LineMeta]]:
    ordered = sorted(meta.items())
    return [n for n, _ in ordered], [m for _, m in ordered]
