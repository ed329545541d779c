"""``forget --purge``: the copies of a forgotten line beyond the memory files.

A forget removes lines from the memory files, the index and the embedding cache. A purge
then reaches every other copy memoryd keeps (docs/lifecycle.md, "What purge reaches"):

- the hidden history under ``memory/.history``: the pre-images of earlier forgets and imports
  (``changes/*/N.before``), hippocampus's backups of MEMORY.md and its reports, are rewritten
  without the lines; the exports kept in ``exports/`` are repacked without them (or removed
  when one cannot be read), and the answer says which;
- the state database: the lines' hit counts and samples (``line_hits``, the words that tied
  queries to them), and job reports that quote them; then VACUUM and a truncated WAL;
- the index database's bytes (index/purge.py) and the keyword copy's sidecar file.

What memoryd cannot rewrite is named in the answer (``not_reached``): an archive ``export -o``
wrote outside the workspace (recorded when written), a git history in the workspace; a
transcript holding the text is named in ``still_in`` (the agent's file: forget the session).
A synced workspace's repository and remote are sync's (rpc/lifecycle_methods.py calls it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memoryd.files.beneath import open_beneath
from memoryd.files.fsutil import atomic_write_at
from memoryd.files.layout import HISTORY_DIR, SESSIONS_DIR, Layout
from memoryd.files.lines import normalize_line
from memoryd.lifecycle.archive import pack_members, read_archive
from memoryd.lifecycle.exports import EXPORTS_DIR
from memoryd.runtime.logs import get_logger
from memoryd.runtime.state import StateDB

if TYPE_CHECKING:
    from memoryd.files.locks import FileLocks
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.lifecycle.hits import HitCounter

__all__ = [
    "Purge",
    "cores_of",
    "forget_hits",
    "record_outside_export",
    "run",
    "scrub_history",
    "scrub_state",
    "unreached",
]

log = get_logger("memoryd.lifecycle.purge")

MIN_CONTAINED: Final = 12  # a shorter line is matched whole, never inside another line
PURGED: Final = "[purged]"


@dataclass
class Purge:
    """One purge: the workspace, the removed lines' keys and texts, and what it did."""

    root: Path
    keys: set[str]
    cores: set[str]  # the removed lines, normalised (files/lines.py)
    transcripts: set[str] = field(default_factory=set)  # transcripts the forget removed
    report: dict[str, Any] = field(default_factory=dict)


def cores_of(texts: Iterable[str]) -> set[str]:
    return {core for t in texts if (core := normalize_line(t))}


def _holds(line: str, cores: set[str]) -> bool:
    norm = normalize_line(line) if line.strip() else ""
    if not norm:
        return False
    return any(norm == c or (len(c) >= MIN_CONTAINED and c in norm) for c in cores)


def scrub_text(data: bytes, cores: set[str]) -> bytes | None:
    """``data`` without its lines that hold a removed line (None: none did)."""
    lines = data.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    kept = [line for line in lines if not _holds(line, cores)]
    if len(kept) == len(lines):
        return None
    return "".join(kept).encode("utf-8", "surrogateescape")


# -- memory/.history ---------------------------------------------------------------------


def scrub_history(p: Purge) -> None:
    """Rewrite the hidden history without the lines (see the module's docstring)."""
    layout = Layout(p.root)
    try:
        top = layout.open_dir(HISTORY_DIR)
    except OSError:
        return
    rewritten: list[str] = []
    removed: list[str] = []
    try:
        for rel, kind in _history_files(top, HISTORY_DIR):
            if rel.startswith(f"{EXPORTS_DIR}/"):
                continue  # below, archive by archive
            if kind == "transcript_before":
                _unlink(layout, rel)
                removed.append(rel)
            elif _rewrite(layout, rel, p.cores):
                rewritten.append(rel)
    finally:
        os.close(top)
    exports = _scrub_exports(layout, p.cores)
    p.report["history"] = {"rewritten": rewritten, "removed": removed}
    p.report["exports"] = exports


def _history_files(dir_fd: int, rel: str) -> Iterable[tuple[str, str]]:
    """(path, kind) of every regular file below the open folder (links never followed)."""
    plan: dict[str, Any] | None = None
    names = sorted(os.listdir(dir_fd))
    if "plan.json" in names:
        with contextlib.suppress(OSError, ValueError):
            plan = json.loads(_read_at(dir_fd, "plan.json"))
    for name in names:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            try:
                yield from _history_files(sub, f"{rel}/{name}")
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode) and name != "plan.json":
            yield f"{rel}/{name}", _kind(plan, name)


def _kind(plan: dict[str, Any] | None, name: str) -> str:
    """A pre-image of a transcript (whole-file removal) goes whole: its lines are JSON."""
    if plan is None or not name.endswith(".before"):
        return "text"
    for f in plan.get("files", ()):
        if f"{f.get('n')}.before" == name and str(f.get("rel", "")).startswith(SESSIONS_DIR + "/"):
            return "transcript_before"
    return "text"


def _read_at(dir_fd: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _rewrite(layout: Layout, rel: str, cores: set[str]) -> bool:
    parent, _, name = rel.rpartition("/")
    dir_fd = layout.open_dir(parent)
    try:
        new = scrub_text(_read_at(dir_fd, name), cores)
        if new is None:
            return False
        atomic_write_at(dir_fd, name, new, mode=0o600)
        return True
    finally:
        os.close(dir_fd)


def _unlink(layout: Layout, rel: str) -> None:
    parent, _, name = rel.rpartition("/")
    dir_fd = layout.open_dir(parent)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _scrub_exports(layout: Layout, cores: set[str]) -> dict[str, list[str]]:
    """Repack each kept export without the lines (its name, so an import by name still
    finds it); one that cannot be read is removed."""
    out: dict[str, list[str]] = {"rewritten": [], "removed": []}
    try:
        dir_fd = layout.open_dir(EXPORTS_DIR)
    except OSError:
        return out
    try:
        for name in sorted(os.listdir(dir_fd)):
            if not name.endswith(".tar.gz"):
                continue
            try:
                archive = read_archive(Path(EXPORTS_DIR) / name, dir_fd)
            except Exception:  # not ours or damaged: it cannot be rewritten, so it goes
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=dir_fd)
                out["removed"].append(name)
                continue
            members = dict(archive.files)
            changed = False
            for rel, data in archive.files.items():
                new = scrub_text(data, cores) if rel.endswith(".md") else None
                if new is not None:
                    members[rel], changed = new, True
            if changed:
                packed, _ = pack_members(members, archive.workspace, archive.created_at)
                atomic_write_at(dir_fd, name, packed, mode=0o600)
                out["rewritten"].append(name)
    finally:
        os.close(dir_fd)
    return out


# -- the state database ------------------------------------------------------------------


def forget_hits(state: StateDB, root: Path, keys: Iterable[str]) -> int:
    """Drop the removed lines' hit counts, samples and matched words (any forget); how many
    lines had some."""
    keys = sorted(set(keys))
    if not keys:
        return 0
    gone = 0
    with state.lock, state.conn:
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            marks = ",".join("?" * len(part))
            args = (str(root), *part)
            gone += sum(
                1
                for _ in state.conn.execute(
                    f"DELETE FROM line_hits WHERE workspace_path = ? AND key IN ({marks}) "
                    "RETURNING key",
                    args,
                )
            )
            state.conn.execute(
                f"DELETE FROM line_hit_queries WHERE workspace_path = ? AND key IN ({marks})",
                args,
            )
    from memoryd.index.purge import checkpoint  # as scrub below: the index side, loaded late

    with state.lock:  # their older page images must not stay in the WAL (docs/lifecycle.md)
        checkpoint(state.conn)
    return gone


def scrub_state(state: StateDB, p: Purge) -> None:
    """Job reports quoting the lines are rewritten without them; then the database is
    vacuumed and its WAL truncated (a small file: a purge is rare)."""
    scrubbed = 0
    with state.lock, state.conn:
        rows = state.conn.execute(
            "SELECT id, message, report FROM job_runs WHERE workspace_path = ?", (str(p.root),)
        ).fetchall()
        for ident, message, report in rows:
            new_message = _scrub_value(str(message), p.cores)
            new_report = json.dumps(_scrub_value(_loads(str(report)), p.cores))
            if new_message != message or json.loads(new_report) != _loads(str(report)):
                state.conn.execute(
                    "UPDATE job_runs SET message = ?, report = ? WHERE id = ?",
                    (new_message, new_report, ident),
                )
                scrubbed += 1
    with state.lock:
        state.conn.execute("VACUUM")
        busy = state.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    p.report["state"] = {"job_runs_rewritten": scrubbed, "wal_truncated": not (busy or [1])[0]}


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _scrub_value(value: Any, cores: set[str]) -> Any:
    """A job report's value without the lines (a string left empty says it was purged)."""
    if isinstance(value, str):
        new = scrub_text(value.encode("utf-8", "surrogateescape"), cores)
        if new is None:
            return value
        text = new.decode("utf-8", "surrogateescape")
        return text if text.strip() else PURGED
    if isinstance(value, list):
        return [_scrub_value(v, cores) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_value(v, cores) for k, v in value.items()}
    return value


# -- what a purge cannot reach -------------------------------------------------------------


def record_outside_export(state: StateDB, root: Path, path: Path, sha256: str) -> None:
    """``export -o`` wrote ``path``: a purge names it while it is still as written."""
    with state.lock, state.conn:
        state.conn.execute(
            "INSERT OR REPLACE INTO exports_outside(path, workspace_path, sha256, at) "
            "VALUES (?, ?, ?, ?)",
            (str(path), str(root), sha256, time.time()),
        )


def unreached(state: StateDB, p: Purge) -> None:
    """Name what holds the lines and cannot be rewritten by memoryd."""
    out: list[dict[str, str]] = p.report.setdefault("not_reached", [])
    with state.lock:
        rows = state.conn.execute(
            "SELECT path, sha256 FROM exports_outside WHERE workspace_path = ? ORDER BY path",
            (str(p.root),),
        ).fetchall()
    for path, sha in rows:
        if _sha_of(Path(str(path))) == sha:
            out.append(
                {
                    "path": str(path),
                    "why": "an export written outside the workspace (export -o): memoryd does "
                    "not rewrite it; delete it or export again",
                }
            )
        else:  # changed or gone: not ours any more
            with state.lock, state.conn:
                state.conn.execute("DELETE FROM exports_outside WHERE path = ?", (path,))
    if (p.root / ".git").exists():
        out.append(
            {
                "path": str(p.root / ".git"),
                "why": "the workspace's git history (hippocampus commits MEMORY.md there) may "
                "hold the lines: memoryd does not rewrite history",
            }
        )
    p.report["still_in"] = _transcripts_holding(p)


def _sha_of(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        h = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _transcripts_holding(p: Purge) -> list[str]:
    """Transcripts in the workspace that quote a removed line (read, never changed)."""
    found: list[str] = []
    probes = [c.encode() for c in p.cores if len(c) >= MIN_CONTAINED]
    top = p.root / SESSIONS_DIR
    if not probes or not top.is_dir() or top.is_symlink():
        return found
    for folder, dirs, names in os.walk(top):  # links are not followed
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in sorted(names):
            rel = Path(folder, name).relative_to(p.root).as_posix()
            if not name.endswith(".jsonl") or rel in p.transcripts:
                continue
            try:
                opened = open_beneath(p.root, rel, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            with os.fdopen(opened.fd, "rb") as fh:
                data = " ".join(fh.read().decode("utf-8", "replace").split()).casefold().encode()
            if any(probe in data for probe in probes):
                found.append(rel)
    return found


# -- the whole sequence ------------------------------------------------------------------


def run(
    p: Purge, index: WorkspaceIndex, state: StateDB, locks: FileLocks, hits: HitCounter | None
) -> dict[str, Any]:
    """Blocking (a thread), after the forget's files changed and the index followed: reach
    every other copy, in this order, and answer what was done and what was not reached."""
    from memoryd.index.purge import scrub

    started = last = time.perf_counter()
    steps: dict[str, float] = {}

    def step(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        steps[name] = round((now - last) * 1000, 1)
        last = now

    with locks.lock_for(p.root / EXPORTS_DIR):  # an export packing now finishes first
        scrub_history(p)
    step("history")
    p.report["index"] = index.on_writer(scrub).result() or {}
    index.copies.drop_sidecar()  # its stems; written again at a clean close, without them
    step("index")
    if hits is not None:
        hits.wait_idle()  # counts queued before the forget are written, then dropped
    forget_hits(state, p.root, p.keys)
    scrub_state(state, p)
    step("state")
    unreached(state, p)
    step("not_reached")
    p.report["steps_ms"] = steps
    p.report["ms"] = round((time.perf_counter() - started) * 1000, 1)
    log.info("purged", workspace=str(p.root), lines=len(p.keys), ms=p.report["ms"])
    return p.report
