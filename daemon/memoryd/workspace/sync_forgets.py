"""Forgets that arrive by git sync leave the index as securely as a local one.

A tombstone from another host (or a purge's rewritten history adopted here) takes lines
out of this workspace's files when the sync engine writes its merge (sync/engine.py).
Around that write the files are held secure on the workspace's index, as ``ForgetService``
does for a local forget: the watch's sync of them in between deletes their chunks with
FTS5 secure-delete, the index follows them before the hold ends, and the release
checkpoints the WAL and drops the keyword copy's file (index/secure_delete.py). A
workspace whose index is not open gets no hold: its next open scans the files as they are
(the removed lines' words may stay in FTS5's older segments until merged, docs/sync.md).

Blocking: runs in the sync's thread, never on the event loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.errors import MemorydError
from memoryd.runtime.logs import get_logger

if TYPE_CHECKING:
    from memoryd.workspace.served import Workspace

__all__ = ["SecureSyncWrites"]

log = get_logger("memoryd.sync")


class SecureSyncWrites:
    """``sync.apply.SecureWrites`` over the registry's open indexes."""

    def __init__(self, workspaces: Callable[[], Iterable[Workspace]]) -> None:
        self.workspaces = workspaces

    @contextlib.contextmanager
    def __call__(self, root: Path, paths: list[Path]) -> Iterator[object]:
        index = next((w.index for w in self.workspaces() if w.root == root), None)
        if index is None:  # not open (yet): its next open scans the files
            yield None
            return
        hold = index.secure.hold(paths)
        try:
            yield hold
        finally:
            try:  # what was written leaves the index before the hold ends
                index.submit_sync(paths).result()
            except MemorydError as exc:  # closing: nothing more is synced
                log.warning("sync_forget_not_indexed", root=str(root), error=exc.message)
            finally:
                hold.release().result()
