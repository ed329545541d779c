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
from typing import Any

from memoryd.errors import InvalidParams
from memoryd.files.append import Appender
from memoryd.files.layout import Layout
from memoryd.files.lines import line_key
from memoryd.files.provenance import Ledger, ledger_for
from memoryd.lifecycle import journal
from memoryd.lifecycle.forget import Selection, build_change

__all__ = ["Forgotten", "apply_forget", "describe", "redo_meta"]


@dataclass
class Forgotten:
    answer: dict[str, Any]
    paths: list[Path] = field(default_factory=list)  # changed files, for the index


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
    return out


def redo_meta(root: Path, meta: dict[str, Any]) -> None:
    """What a forget does beside its files (idempotent: run again by recovery)."""
    ledger = ledger_for(root)
    session = meta.get("session")
    if isinstance(session, str) and session:
        if session not in ledger.forgotten_sessions:
            ledger.forget_session(session)
        ledger.rewrite(lambda r: r.session_id == session)
    keys = set(meta.get("keys") or ())
    paths = set(meta.get("paths") or ())
    if keys:
        ledger.rewrite(lambda r: r.k in keys and r.path in paths)


def apply_forget(
    root: Path, sel: Selection, appender: Appender, *, purge: bool, keep_days: float
) -> Forgotten:
    """Remove ``sel`` for good (pre-image kept unless ``purge``)."""
    layout = Layout(root)
    answer = describe(sel, dry_run=False)
    if not sel.removals and sel.session is None:
        return Forgotten(answer)
    keys = sorted(
        {line_key(t) for r in sel.removals for t in r.lines.values()} - {""},
    )
    meta: dict[str, Any] = {
        "keys": keys,
        "paths": sorted({r.rel for r in sel.removals}),
    }
    if sel.session is not None:
        meta["session"] = sel.session
    ledger: Ledger = ledger_for(root)
    with appender.locks.locked(root / r.rel for r in sel.removals):
        change = build_change(layout, sel, keep=not purge, meta=meta)

        def mark() -> None:  # durable before any file is touched: never flushed again
            if sel.session is not None and sel.session not in ledger.forgotten_sessions:
                ledger.forget_session(sel.session)

        try:
            folder = journal.apply(root, change, on_planned=mark)
        except journal.Conflict as exc:
            raise InvalidParams(f"{exc}: nothing was forgotten; run the forget again") from None
    redo_meta(root, meta)
    answer["kept"] = None if purge else folder
    answer["pruned"] = journal.prune(root, keep_days, time.time())
    return Forgotten(answer, [root / r.rel for r in sel.removals])


def apply_import(root: Path, merged: Any, appender: Appender, keep_days: float) -> dict[str, Any]:
    """Write an import's change (importing.py) under the append locks of its files."""
    change: journal.Change = merged.change
    answer = dict(merged.report)
    if not change.files:
        answer["kept"] = None
        return answer
    with appender.locks.locked(root / f.rel for f in change.files):
        try:
            folder = journal.apply(root, change)
        except journal.Conflict as exc:
            raise InvalidParams(f"{exc}: nothing was imported; run the import again") from None
    answer["kept"] = folder
    answer["pruned"] = journal.prune(root, keep_days, time.time())
    return answer
