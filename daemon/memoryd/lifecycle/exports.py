"""The workspace's exports folder: where an export asked for without a path goes.

``memory/.history/exports/`` inside the workspace, like forget's pre-images: hidden, so never
indexed, never readable by ``get`` and never in an export itself. An export written here
copies the memory to no new place (the workspace holds it already); a file outside is the
owner's choice (``memctl export -o FILE``). This is what MCP's ``memory_export`` writes, so a
model cannot ship the memory to a path of its choosing (docs/lifecycle.md). The newest
``KEEP_EXPORTS`` stay; an import may name one of them by its file name.

Every open is beneath the workspace (a ``memory/.history`` link leading out is refused) and
the archive is read without following a link.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path
from typing import Any, Final

from memoryd.errors import InvalidParams, NotFound
from memoryd.files.fsutil import atomic_write_at
from memoryd.files.layout import HISTORY_DIR, Layout
from memoryd.lifecycle.archive import Archive, pack, read_archive

__all__ = ["EXPORTS_DIR", "KEEP_EXPORTS", "export_here", "read_export"]

EXPORTS_DIR: Final = f"{HISTORY_DIR}/exports"
KEEP_EXPORTS: Final = 5
SUFFIX: Final = ".tar.gz"
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.tar\.gz$")


def _file_name(workspace: str, now: float) -> str:
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", workspace).strip("-")[:60] or "memory"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return f"{safe}-{stamp}-{os.urandom(2).hex()}{SUFFIX}"


def export_here(root: Path, workspace: str, now: float | None = None) -> dict[str, Any]:
    """Export workspace ``root`` into its exports folder; the answer as ``export``'s, with
    ``name`` (what an import takes) and how many older exports were removed."""
    stamp = time.time() if now is None else now
    packed, held = pack(root, workspace, stamp)
    name = _file_name(workspace, stamp)
    layout = Layout(root)
    dir_fd = layout.open_dir(EXPORTS_DIR, make=True)
    try:
        atomic_write_at(dir_fd, name, packed, mode=0o600)  # memory is private
        pruned = _prune(dir_fd, keep=name)
    finally:
        os.close(dir_fd)
    return {"path": str(root / EXPORTS_DIR / name), "name": name, **held, "pruned": pruned}


def _prune(dir_fd: int, keep: str) -> int:
    """Remove all but the newest KEEP_EXPORTS archives (by name: they start with a stamp
    after the workspace's name, so compare by modification time)."""
    found: list[tuple[float, str]] = []
    for entry in os.scandir(dir_fd):
        if entry.name.endswith(SUFFIX) and entry.is_file(follow_symlinks=False):
            try:
                found.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
            except FileNotFoundError:  # another export's prune removed it meanwhile
                continue
    found.sort(reverse=True)
    gone = 0
    for _, name in found[KEEP_EXPORTS:]:
        if name == keep:
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
            gone += 1
    return gone


def read_export(root: Path, name: str) -> Archive:
    """The export ``name`` (a file name, no folder) of workspace ``root``'s exports folder."""
    if not _NAME.match(name):
        raise InvalidParams(
            f"{name[:200]!r} is not an export's file name (NAME.tar.gz, no folder)",
            {"param": "export"},
        )
    try:
        dir_fd = Layout(root).open_dir(EXPORTS_DIR)
    except FileNotFoundError:
        raise NotFound(f"the workspace has no exports yet ({EXPORTS_DIR})") from None
    try:
        return read_archive(Path(EXPORTS_DIR) / name, dir_fd)
    finally:
        os.close(dir_fd)
