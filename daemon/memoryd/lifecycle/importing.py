"""Import: an export's memory merged into a workspace, without duplicates, whole or absent.

A file the workspace lacks is created. A file it has gets the archive's lines it does not
hold yet (the same line is the same ``line_key``: case, spacing, list marker and annotations
aside), each under its heading when that heading is new, appended at its end; nothing of
the workspace's own is changed or reordered. Secrets are redacted on the way in, as for an
append. The ledger's records are merged (a line's provenance travels with it: an untrusted
line stays untrusted), and so are its forgotten-session marks.

Every file, the ledger included, changes through one journal change (journal.py): a kill
during an import leaves all of it or none of it.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.files.beneath import open_beneath
from memoryd.files.lines import line_key
from memoryd.files.provenance import LEDGER_REL, Provenance, Record, SessionMark, entry_from_json
from memoryd.lifecycle.archive import TOP_FILES, Archive
from memoryd.lifecycle.journal import Change, FileChange
from memoryd.secrets import redact

__all__ = ["Merged", "plan_import"]

_HEADING: Final = re.compile(r"^#{1,6}\s")


@dataclass
class Merged:
    change: Change
    report: dict[str, Any] = field(default_factory=dict)


def _current(root: Path, rel: str) -> bytes | None:
    try:
        opened = open_beneath(root, rel, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(opened.fd, "rb") as f:
        return f.read()


def merge_text(existing: str, incoming: str) -> tuple[str, list[str], int]:
    """``existing`` with ``incoming``'s new lines appended (their new headings with them):
    (text, the lines added, how many were skipped as already there)."""
    have = {line_key(line) for line in existing.splitlines()} - {""}
    block: list[str] = []
    added: list[str] = []
    heading: str | None = None
    skipped = 0
    for line in incoming.splitlines():
        if _HEADING.match(line):
            heading = line
            continue
        key = line_key(line)
        if not key:
            continue
        if key in have:
            skipped += 1
            continue
        if heading is not None:
            if line_key(heading) not in have and heading not in block:
                block += ["", heading, ""] if block else [heading, ""]
            heading = None
        block.append(line)
        added.append(line)
        have.add(key)
    if not block:
        return existing, [], skipped
    if not existing or existing.endswith("\n\n"):
        sep = ""
    else:
        sep = "\n" if existing.endswith("\n") else "\n\n"
    return existing + sep + "\n".join(block) + "\n", added, skipped


def _merge_ledger(current: bytes | None, incoming: bytes) -> tuple[bytes | None, int]:
    have: set[str] = set()
    for raw in (current or b"").decode("utf-8", "replace").splitlines():
        rec = entry_from_json(raw)
        if rec is not None:
            have.add(rec.to_json().rsplit(',"at"', 1)[0])
    new: list[str] = []
    for raw in incoming.decode("utf-8", "replace").splitlines():
        rec = entry_from_json(raw)
        if rec is None:
            continue
        sig = rec.to_json().rsplit(',"at"', 1)[0]
        if sig not in have:
            have.add(sig)
            new.append(rec.to_json())
    if not new:
        return current, 0
    base = current or b""
    if base and not base.endswith(b"\n"):
        base += b"\n"
    return base + ("\n".join(new) + "\n").encode(), len(new)


def plan_import(root: Path, archive: Archive, keep: bool = True, untrusted: bool = False) -> Merged:
    """The journal change merging ``archive`` into workspace ``root`` (its files as now).

    ``untrusted`` (MCP's ``memory_import``: a model chose the archive): the archive is
    external content. Only daily notes and other ``memory/`` notes take its lines, each
    recorded ``untrusted`` (searchable, never recalled by itself, never promoted); the
    curated files (MEMORY.md, USER.md: recalled as they are), the archive's own ledger and
    its forgotten-session marks are not taken, and the answer lists them as refused."""
    files: list[FileChange] = []
    report: dict[str, Any] = {
        "files_created": 0,
        "files_merged": 0,
        "lines_added": 0,
        "lines_already_there": 0,
        "redacted": 0,
        "ledger_records_added": 0,
        "files": [],
    }
    refused: list[dict[str, Any]] = []
    added_keys: list[tuple[str, str]] = []  # (key, path) of each line added
    for rel in sorted(archive.files):
        if rel == LEDGER_REL:
            continue
        clean = redact(archive.files[rel].decode("utf-8", "replace"))
        before = _current(root, rel)
        existing = "" if before is None else before.decode("utf-8", "surrogateescape")
        text, added, skipped = merge_text(existing, clean.text)
        if untrusted and rel in TOP_FILES:
            if added:
                refused.append({"path": rel, "lines": len(added), "why": CURATED_REFUSED})
            continue
        report["redacted"] += len(clean.kinds)
        report["lines_already_there"] += skipped
        if not added:
            continue
        report["files_created" if before is None else "files_merged"] += 1
        report["lines_added"] += len(added)
        report["files"].append(_listed(rel, before is None, added, skipped))
        added_keys += [(line_key(line), rel) for line in added]
        files.append(FileChange(rel, before, text.encode("utf-8", "surrogateescape")))
    ledger = archive.files.get(LEDGER_REL)
    if untrusted:
        incoming = _untrusted_records(added_keys)
        marks = _forget_marks(ledger)
        if marks:
            refused.append({"path": LEDGER_REL, "forget_marks": marks, "why": MARKS_REFUSED})
    else:
        incoming = ledger
    if incoming is not None:
        before = _current(root, LEDGER_REL)
        after, count = _merge_ledger(before, incoming)
        if count:
            files.append(FileChange(LEDGER_REL, before, after))
            report["ledger_records_added"] = count
    if untrusted:
        report["origin"] = "untrusted"
        report["refused"] = refused
    return Merged(Change("import", files, {"from": archive.workspace}, keep), report)


CURATED_REFUSED: Final = (
    "curated files take lines from the owner only (memctl import), not from a model's import"
)
MARKS_REFUSED: Final = "forgotten-session marks are taken by memctl import only"
PREVIEW_LINES: Final = 5


def _listed(rel: str, created: bool, added: list[str], skipped: int) -> dict[str, Any]:
    """One file of an import's answer: what it gains (the first lines, secrets redacted)."""
    return {
        "path": rel,
        "created": created,
        "lines_added": len(added),
        "lines_already_there": skipped,
        "first_lines": [line[:200] for line in added[:PREVIEW_LINES]],
    }


def _untrusted_records(added: list[tuple[str, str]]) -> bytes | None:
    at = time.time()
    untrusted = Provenance("untrusted", None, None)
    lines = [Record.added(k, rel, untrusted, "import", at).to_json() for k, rel in added]
    return ("\n".join(lines) + "\n").encode() if lines else None


def _forget_marks(ledger: bytes | None) -> int:
    records = (
        entry_from_json(raw) for raw in (ledger or b"").decode("utf-8", "replace").splitlines()
    )
    return sum(1 for r in records if isinstance(r, SessionMark))
