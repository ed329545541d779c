"""The visible note a merge writes above two versions of the same lines of MEMORY.md or
USER.md (or another note) that both hosts changed: never git's ``<<<<<<<`` markers.

The note is one blockquote line a person reads in any editor or viewer, ending with a
comment by which ``memctl sync status`` and the hippocampus report find it.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MARK", "find_notes", "note_line"]

MARK: Final = "<!-- memoryd-conflict -->"


def note_line(day: str, ours: str, theirs: str) -> str:
    return (
        f"> **memoryd sync conflict** ({day}): `{ours}` and `{theirs}` both changed the "
        f"lines below; both versions are kept, `{ours}`'s first. Keep what is right, then "
        f"delete this note. {MARK}"
    )


def find_notes(text: str) -> list[int]:
    """The 1-based line numbers of the conflict notes in ``text``."""
    if MARK not in text:
        return []
    return [n for n, line in enumerate(text.split("\n"), 1) if line.rstrip().endswith(MARK)]
