"""Which files of a workspace are memory notes, by their workspace-relative names: MEMORY.md
(or memory.md), USER.md and ``memory/**/*.md`` (no hidden part: ``memory/.history`` holds
backups). The daemon's file model (memoryd.files.layout) and the hooks that guard memory
files (agents/memory_guard.py) both take the rule from here."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: the hooks' lean path imports this (agents/hooks.py)
    from collections.abc import Sequence
    from typing import Final

MEMORY_FILES: Final = ("MEMORY.md", "memory.md")
USER_FILE: Final = "USER.md"  # stable preferences, relationships, style: indexed like MEMORY.md
CURATED_FILES: Final = (*MEMORY_FILES, USER_FILE)  # the curated tier
MEMORY_DIR: Final = "memory"  # daily files and any other notes
NOTE_SUFFIX: Final = ".md"


def is_memory_note(parts: Sequence[str]) -> bool:
    """Whether a workspace-relative path, as its parts, is a memory note by its name."""
    if not parts or any(p.startswith(".") or not p for p in parts):
        return False  # hidden, '..', empty: never a note
    if "/".join(parts) in CURATED_FILES:
        return True
    return len(parts) > 1 and parts[0] == MEMORY_DIR and parts[-1].endswith(NOTE_SUFFIX)
