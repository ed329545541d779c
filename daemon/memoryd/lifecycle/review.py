"""The review queue (docs/provenance.md, "What waits on the owner"): untrusted writes that
ask to be kept long-term wait for the owner in one plain place.

Nothing is stored for it: the queue is worked out from the ledger and the files, so it is
always what is on disk (a line forgotten, edited or moved by hand has left it; a line
approved is the owner's and has left it). A line waits when its origin is ``untrusted`` (or
``system``) and it asks to be remembered long-term:

- it carries ``<!-- importance -->``, ``<!-- trigger -->``, ``<!-- key -->`` or
  ``<!-- promote -->`` (annotations that are ignored until the owner approves the line);
- an agent wrote it with ``append`` (memctl, the client, MCP ``memory_append``): a note it
  asked to be kept, recorded untrusted because its session read outside content (or by
  ``mcp.append_origin``);
- hippocampus would weigh it: searches returned it (its evidence is untrusted, so the gate
  keeps it out of MEMORY.md until the owner approves it).

Untrusted lines stay searchable and are never recalled, waiting or not. An item's id is a
hash of (path, line key): the same line keeps its id while it waits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from memoryd.errors import MemorydError
from memoryd.files.annotations import parse_line
from memoryd.files.layout import Layout
from memoryd.files.lines import line_key
from memoryd.files.provenance import Ledger
from memoryd.files.reader import read_all
from memoryd.secrets import mask

__all__ = ["HELD_ORIGINS", "Waiting", "find", "item_id", "waiting"]

HELD_ORIGINS: Final = ("untrusted", "system")
ASKED_VIAS: Final = ("append", "mcp")  # an agent's explicit note (flush notes are not asked)
MAX_FILE_BYTES: Final = 64 << 20
Counts = Callable[[Iterable[str]], dict[str, tuple[int, int]]]  # key -> (hits, queries)


def item_id(path: str, key: str) -> str:
    return hashlib.sha256(f"{path}\0{key}".encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Waiting:
    id: str
    path: str
    line: int
    key: str
    text: str  # masked, as every answer shows a file
    origin: str
    session_id: str | None
    session_kind: str | None
    via: str
    at: float
    reasons: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "origin": self.origin,
            "via": self.via,
            "at": round(self.at, 3),
            "reasons": list(self.reasons),
        }
        if self.session_id:
            out["session_id"] = self.session_id
        if self.session_kind:
            out["session_kind"] = self.session_kind
        return out


def _asks(raw: str) -> list[str]:
    """The long-term annotations a line carries."""
    notes = parse_line(raw)[1]
    if notes is None:
        return []
    asked = []
    if notes.importance is not None:
        asked.append(f"importance {notes.importance}")
    if notes.triggers:
        asked.append(f"trigger {', '.join(notes.triggers)}")
    if notes.key:
        asked.append(f"key {notes.key}")
    if notes.promote:
        asked.append("promote")
    return asked


def waiting(ledger: Ledger, layout: Layout, counts: Counts) -> list[Waiting]:
    """Every line waiting for the owner, oldest write first."""
    ledger.refresh()
    held = ledger.held(HELD_ORIGINS)
    by_path: dict[str, dict[str, tuple[Any, Any]]] = {}
    for (path, key), prov, rec in held:
        by_path.setdefault(path, {})[key] = (prov, rec)
    hits = counts({key for (_, key), _, _ in held})
    out: list[Waiting] = []
    for path, lines in sorted(by_path.items()):
        try:
            with layout.open_file(layout.root / path) as fh:
                data = read_all(fh.fileno(), MAX_FILE_BYTES)
        except (OSError, MemorydError):
            continue  # gone, or not a memory file any more: nothing waits there
        seen: set[str] = set()
        for n, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            key = line_key(raw)
            if key not in lines or key in seen:
                continue
            seen.add(key)
            prov, rec = lines[key]
            reasons = [f"asks to be kept: {a}" for a in _asks(raw)]
            if rec.via in ASKED_VIAS and prov.origin == "untrusted":
                reasons.append(f"an agent's note ({rec.via}), written as untrusted")
            returned = hits.get(key, (0, 0))[0]
            if returned:
                reasons.append(f"a hippocampus candidate: searches returned it {returned} time(s)")
            if reasons:
                out.append(
                    Waiting(
                        item_id(path, key),
                        path,
                        n,
                        key,
                        mask(raw.strip()),
                        prov.origin,
                        prov.session_id,
                        prov.session_kind,
                        rec.via,
                        rec.at,
                        tuple(reasons),
                    )
                )
    return sorted(out, key=lambda w: (w.at, w.path, w.line))


def find(items: list[Waiting], wanted: str) -> Waiting | None:
    """The item of id ``wanted`` (a unique prefix of 4 or more characters is enough)."""
    wanted = wanted.strip().lower()
    if len(wanted) < 4:
        return None
    matches = [w for w in items if w.id.startswith(wanted)]
    return matches[0] if len(matches) == 1 else None
