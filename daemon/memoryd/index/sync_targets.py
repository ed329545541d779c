"""What a sync goes through (sync.py): a whole scan, every file of the workspace and every
one the index holds; otherwise the paths it was given."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from memoryd.files.layout import IndexedFile, Layout, display_name
from memoryd.index.store import FileRow

Targets = list[tuple[str, IndexedFile | None]]  # (display name, the file; None: gone)


def sync_targets(
    layout: Layout,
    known: dict[str, FileRow],
    paths: Iterable[Path] | None,
    between: Callable[[], None],
) -> Targets:
    """``paths`` None: the whole workspace, listed with ``between`` called between two files
    (a restart's listing of 27k files takes a good second of Python: a search being answered
    goes first, runtime/foreground.py)."""
    if paths is None:
        present: dict[str, IndexedFile] = {}
        for f in layout.iter_files():
            between()
            present[f.rel] = f  # display names
        targets: Targets = list(present.items())
        return targets + [(rel, None) for rel in known if rel not in present]
    targets = []
    for p in dict.fromkeys(paths):
        rel = layout.rel(Path(os.path.abspath(p)))
        if rel is None:
            continue
        found = layout.indexed(rel)
        rel = display_name(rel)
        if found is not None or rel in known:
            targets.append((rel, found))
    return targets
