"""Atomic file replacement, shared by every job that rewrites a memory file.

A reader (an agent, an editor, the indexer) sees either the old file or the new one, never
a torn mix, and a crash leaves the old file in place: write a temp file in the same
directory, fsync it, rename it over the target, fsync the directory.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path


def _read_umask() -> int:
    # os.umask can only be read by setting it, which races with other threads creating
    # files; do it once, at import, before the daemon starts any thread.
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_UMASK = _read_umask()


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> int:
    """Write ``data``: one ``write`` for a regular file; the loop only covers a short write
    (a full disk), which then raises on the next one. The OSError carries ``written``, the
    bytes that did land, for the caller to take back."""
    view = memoryview(data)
    done = 0
    try:
        while done < len(data):
            done += os.write(fd, view[done:])
    except OSError as exc:
        exc.written = done  # type: ignore[attr-defined]
        raise
    return done


def atomic_write(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Replace ``path`` with ``data`` atomically (its folder opened by name: for memory
    files, open the folder beneath the workspace and use ``atomic_write_at``)."""
    dir_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        atomic_write_at(dir_fd, path.name, data, mode=mode, before_replace=before_replace)
    finally:
        os.close(dir_fd)


def atomic_write_at(
    dir_fd: int,
    name: str,
    data: bytes,
    *,
    mode: int | None = None,
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Replace file ``name`` of the open folder ``dir_fd`` with ``data`` atomically.

    Every step is relative to the folder's descriptor, so a folder swapped for a link
    meanwhile cannot lead the write elsewhere. The new file keeps the old one's permission
    bits (or ``mode``, or 0666 less the umask for a new file). The temp file is hidden and
    ends in ``.tmp`` so watchers skip it. ``before_replace`` runs once the temp file is
    durable, just before the rename: the last moment to check that nobody changed the file
    meanwhile; if it raises, nothing is replaced.
    """
    if mode is None:
        try:
            mode = os.stat(name, dir_fd=dir_fd).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        tmp = f".{name}.{os.urandom(4).hex()}.tmp"  # secrets.token_hex(4) (no random module)
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


# atomic_write's temp names: ".<target name>.<8 hex digits>.tmp" (mkstemp's 8 characters
# in earlier versions).
_TEMP = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")


def remove_stale_temps(root: Path) -> list[str]:
    """Remove the temp files a killed rewrite of MEMORY.md (or of its backup) left behind.

    Only at a workspace's open, before any job can run on it: a temp file then belongs to
    no live write. Returns the workspace-relative paths removed.
    """
    removed = []
    for folder, prefix in ((root, ".MEMORY.md."), (root / "memory" / ".history", ".")):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and _TEMP.match(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(folder / name)
                    removed.append((folder / name).relative_to(root).as_posix())
    return removed
