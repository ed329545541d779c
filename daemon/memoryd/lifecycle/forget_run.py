"""Carrying out a forget: the locks, the journal, the ledger, and what the index keeps.

Blocking (run in a thread). The index side: the files are synced again (their chunks, FTS
rows and vectors of the removed lines go; the fleet publisher sends the changed files on
its next pass, as for any edit), then the embedding cache's vectors of the chunks that held
a removed line are deleted, so not even a vector of the forgotten text stays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import Conflict, InvalidParams
from memoryd.files.layout import Layout
from memoryd.files.lines import line_key
from memoryd.files.locks import FileLocks
from memoryd.files.provenance import Ledger, ledger_for
from memoryd.lifecycle import journal
from memoryd.lifecycle.forget import Selection, build_change, cut
from memoryd.runtime.logs import get_logger

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex

log = get_logger("memoryd.lifecycle.forget_run")

__all__ = [
    "ForgetConflict",
    "Forgotten",
    "apply_forget",
    "catch_up_index",
    "describe",
    "redo_meta",
]


@dataclass
class Forgotten:
    answer: dict[str, Any]
    paths: list[Path] = field(default_factory=list)  # changed files, for the index
    folder: str = ""  # the journal's change: marked indexed once the index followed


def describe(sel: Selection, dry_run: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "dry_run": dry_run,
        "removed": [r.to_dict() for r in sel.removals],
        "lines": sel.line_count,
        "files": len(sel.removals),
    }
    if sel.session is not None:
        out["session_id"] = sel.session
    if sel.left:
        out["left_outside"] = sel.left  # transcripts outside the workspace: not deleted
    if sel.unmatched:
        out["unmatched"] = sel.unmatched  # hits no line of which holds a query word
    return out


def redo_meta(root: Path, meta: dict[str, Any]) -> None:
    """What a forget does beside its files (idempotent: run again by recovery)."""
    ledger = ledger_for(root)
    session = meta.get("session")
    if isinstance(session, str) and session:
        if session not in ledger.forgotten_sessions:
            ledger.forget_session(session)
        ledger.rewrite(lambda r: r.session_id == session)
    at = round(float(meta.get("at") or 0.0), 3)
    # Tombstones: hashes, never text (sync makes forgets travel with them); recovery redoing
    # this does not write them twice.
    have = {(r.path, r.k) for r in ledger.records() if r.op == "forget" and r.at == at}
    lines = [(str(p), str(k)) for p, k in meta.get("forgotten") or () if p and k]
    new = [line for line in lines if line not in have]
    if new:
        ledger.forget_lines(new, at)


def catch_up_index(root: Path, index: WorkspaceIndex) -> None:
    """Before an index just opened answers anyone: the files of forgets whose index sync a
    kill stopped are synced now (blocking), so no forgotten line is ever served again."""
    pending = journal.unindexed(root)
    if not pending:
        return
    paths = sorted({root / rel for rels in pending.values() for rel in rels})
    with index.secure.hold(paths):  # secure deletes, then the WAL truncated (as a forget)
        index.submit_sync(paths).result()
    for folder in pending:
        journal.mark_indexed(root, folder)
    log.info("forget_index_caught_up", changes=len(pending), files=len(paths))


def _forgotten_meta(meta: dict[str, Any], sel: Selection) -> None:
    """What the ledger learns of a forget (redo_meta): the keys whose records go, and a
    tombstone (path, key) for each removed line."""
    pairs = {(r.rel, line_key(t)) for r in sel.removals for t in r.lines.values()}
    meta["keys"] = sorted({k for _, k in pairs if k})
    meta["paths"] = sorted({r.rel for r in sel.removals})
    meta["forgotten"] = sorted([p, k] for p, k in pairs if k)
    meta.setdefault("at", round(time.time(), 3))


def apply_forget(
    root: Path, sel: Selection, locks: FileLocks, *, purge: bool, keep_days: float
) -> Forgotten:
    """Remove ``sel`` for good (pre-image kept unless ``purge``). The answer lists exactly
    what left the disk; lines that could not be removed (their file kept changing, or was
    edited so they cannot be found again) fail the request with ``conflict``, naming them
    and what was removed."""
    layout = Layout(root)
    if not sel.removals and sel.session is None:
        return Forgotten(describe(sel, dry_run=False))
    meta: dict[str, Any] = {}
    if sel.session is not None:
        meta["session"] = sel.session
    _forgotten_meta(meta, sel)
    ledger: Ledger = ledger_for(root)
    by_rel = {r.rel: r for r in sel.removals}

    def replan(rel: str, now: bytes | None) -> bytes | None:
        """The file changed beyond an append since it was read: cut its lines again."""
        removal = by_rel[rel]
        if removal.whole_file:
            return None
        if now is None:
            raise journal.Stale("it was deleted meanwhile")
        try:
            return cut(now, removal)
        except InvalidParams as exc:
            raise journal.Stale(str(exc)) from None

    with locks.locked(root / r.rel for r in sel.removals):
        change, left = build_change(layout, sel, keep=not purge, meta=meta)

        def mark() -> None:  # durable before any file is touched: never flushed again
            if sel.session is not None and sel.session not in ledger.forgotten_sessions:
                ledger.forget_session(sel.session)

        applied = journal.apply(root, change, on_planned=mark, replan=replan)
    applied.left.update(left)
    done = Selection(
        [r for r in sel.removals if r.rel not in applied.left], sel.session, sel.left, sel.unmatched
    )
    _forgotten_meta(meta, done)
    redo_meta(root, meta)
    answer = describe(done, dry_run=False)
    answer["kept"] = None if purge or not applied.folder else applied.folder
    answer["pruned"] = journal.prune(root, keep_days, time.time())
    paths = [root / rel for r in done.removals for rel in (r.rel, *sorted(r.aliases))]
    if applied.left:
        not_removed = [
            {**by_rel[rel].to_dict(), "why": why} for rel, why in sorted(applied.left.items())
        ]
        raise ForgetConflict(answer, not_removed, paths, applied.folder)
    return Forgotten(answer, paths, applied.folder)


class ForgetConflict(Conflict):
    """Some lines could not be removed: the error names them; ``paths`` (what did change)
    still go to the index before the error is answered."""

    def __init__(
        self,
        answer: dict[str, Any],
        not_removed: list[dict[str, Any]],
        paths: list[Path],
        folder: str,
    ) -> None:
        lines = sum(len(r.get("lines") or ()) for r in not_removed)
        files = ", ".join(str(r["path"]) for r in not_removed)
        super().__init__(
            f"not removed: {files} ({not_removed[0]['why']}); "
            f"{answer['lines']} line(s) of {answer['files']} file(s) were removed. "
            "Run the forget again for the rest",
            {"not_removed": not_removed, "removed": answer["removed"], "kept": answer["kept"]},
        )
        self.paths = paths
        self.folder = folder
        self.not_removed_lines = lines


def apply_import(root: Path, merged: Any, locks: FileLocks, keep_days: float) -> dict[str, Any]:
    """Write an import's change (importing.py) under the locks of its files."""
    change: journal.Change = merged.change
    answer = dict(merged.report)
    if not change.files:
        answer["kept"] = None
        return answer
    with locks.locked(root / f.rel for f in change.files):
        applied = journal.apply(root, change)
    answer["kept"] = applied.folder if change.keep else None
    answer["pruned"] = journal.prune(root, keep_days, time.time())
    if applied.left:
        imported = sorted({f.rel for f in change.files} - set(applied.left))
        raise Conflict(
            f"not imported: {', '.join(sorted(applied.left))} (changed by another writer "
            f"meanwhile); imported: {', '.join(imported) or 'nothing'}. Importing the same "
            "archive again adds only what is missing",
            {
                "not_imported": [{"path": p, "why": w} for p, w in sorted(applied.left.items())],
                "imported": imported,
            },
        )
    return answer
