"""One lock per memory file, for every writer in this daemon.

Appends, forgets, imports, retention's moves, review, sync merges and hippocampus all change
memory files; each takes the file's lock from the daemon's one ``FileLocks`` registry, so two
of them never interleave on one file. Several files are locked in one sorted order
(``locked``): two writers each needing the same pair can never deadlock.

Writers outside the daemon (an editor, ``echo >>``) do not take these locks: a rewrite still
checks, just before its rename, that the file is what it planned against (lifecycle/journal).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["FileLocks"]


class FileLocks:
    """The per-file lock registry (one per daemon). Paths are keyed resolved (a link and its
    target share one lock); a lock, once made, is kept for the daemon's life (one per memory
    file ever written: a few bytes each)."""

    def __init__(self) -> None:
        self._locks: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock_for(self, path: Path) -> threading.Lock:
        """The lock serialising this daemon's writes to ``path``."""
        key = _key(path)
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    @contextlib.contextmanager
    def locked(self, paths: Iterable[Path]) -> Iterator[None]:
        """Hold the locks of all ``paths`` (duplicates and links collapse), taken in one
        sorted order so that no two writers deadlock."""
        keys = sorted({_key(p) for p in paths})
        with contextlib.ExitStack() as stack:
            for key in keys:
                stack.enter_context(self.lock_for(key))
            yield


def _key(path: Path) -> Path:
    """``path`` resolved; as given (made absolute) when a link on the way is being swapped
    right now (resolving then fails with EINVAL): the writer opening it beneath the
    workspace sees the swap and starts again."""
    try:
        return path.resolve()
    except OSError:
        return path.absolute()
