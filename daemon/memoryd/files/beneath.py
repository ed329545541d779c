"""Opening a file beneath a workspace folder, immune to links swapped in while we walk.

Checking a resolved path and then opening it by name races with anyone who replaces a
folder on the way by a link leading out (``renameat2 RENAME_EXCHANGE`` in a loop won that
race for one read in ten). So the path is walked one component at a time from the
workspace's own directory descriptor: every folder is opened ``O_DIRECTORY|O_NOFOLLOW``
relative to the one before, the file ``O_NOFOLLOW`` relative to its folder. The kernel
never follows a link for us; a link met on the way is read (``readlinkat``) and its target
resolved lexically against the real folders walked so far, refused when it leaves the
workspace, and the walk starts again from the workspace's descriptor. Last, what was
opened is checked: its folder's ``..`` chain must lead back to the workspace in as many
steps as it is deep (a folder moved out meanwhile fails that).

Linux's ``openat2(RESOLVE_BENEATH)`` does the walk in the kernel, but Python has no
wrapper for it, it is missing on macOS and older kernels, and it refuses the links inside
the workspace that memory files legitimately use (memory/today.md -> 2024-05-01.md,
MEMORY.md -> memory/MEMORY.md); this walk follows those and costs one ``openat`` per
component.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from memoryd.errors import ForbiddenPath
from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

MAX_LINKS = 40  # as the kernel's own limit for one lookup
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# A link as the last component: ELOOP for O_NOFOLLOW (EMLINK on FreeBSD), EEXIST for
# O_CREAT|O_EXCL, which never follows one.
_LINK_ERRNOS = (errno.ELOOP, errno.EMLINK, errno.EEXIST)


@frozen_record(frozen=True, eq=False, repr=False)
class Opened(Record):
    """What ``open_beneath`` opened, and where it is really."""

    fd: int  # the caller closes it
    rel: str  # the real workspace-relative path of what was opened (links resolved)
    created: bool  # made by this open (O_CREAT without the file there before)


def _normalise(parts: list[str], requested: str) -> list[str]:
    """``parts`` with ``.`` and ``..`` applied lexically; ForbiddenPath above the root."""
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                raise ForbiddenPath(f"{requested} leads outside the workspace")
            out.pop()
        else:
            out.append(part)
    return out


def _link_target(root: Path, walked: list[str], target: str, requested: str) -> list[str]:
    """The workspace-relative components a link (in folder ``walked``) points to."""
    if os.path.isabs(target):
        # An absolute link may name the workspace through another link of its own (macOS:
        # /tmp is /private/tmp): its folder is resolved to find where it points. Only the
        # resulting workspace-relative path is used; the open still walks from the root.
        real = Path(os.path.realpath(os.path.dirname(target))) / os.path.basename(target)
        try:
            rel = real.relative_to(root)
        except ValueError:
            raise ForbiddenPath(
                f"{requested} is a link to {target}, outside the workspace"
            ) from None
        return _normalise(list(rel.parts), requested)
    return _normalise([*walked, *PurePosixPath(target).parts], requested)


def _is_beneath(dir_fd: int, depth: int, root_st: os.stat_result) -> bool:
    """Whether folder ``dir_fd`` is ``depth`` levels below the root, by its ``..`` chain."""
    fd = os.dup(dir_fd)
    try:
        for _ in range(depth):
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
        st = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (root_st.st_dev, root_st.st_ino)
    finally:
        os.close(fd)


def open_beneath(
    root: Path, rel: str, flags: int, mode: int = 0o666, *, make_dirs: bool = False
) -> Opened:
    """Open ``rel`` (workspace-relative) below ``root`` (resolved) with ``flags``.

    Links inside the workspace are followed, any other is ForbiddenPath; OSError as
    ``os.open`` raises it (FileNotFoundError, IsADirectoryError, ELOOP never: a link as the
    last component is followed too). ``make_dirs`` creates missing folders on the way.
    """
    root_fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the root may be reached by a link
    try:
        root_st = os.fstat(root_fd)
        parts = _normalise(list(PurePosixPath(rel).parts), rel)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "the workspace folder itself", rel)
        for _ in range(MAX_LINKS + 1):
            found = _walk(root, root_fd, root_st, parts, rel, flags, mode, make_dirs)
            if isinstance(found, Opened):
                return found
            parts = found  # a link: start again from the root with where it points
        raise OSError(errno.ELOOP, "too many levels of links", rel)
    finally:
        os.close(root_fd)


def _walk(
    root: Path,
    root_fd: int,
    root_st: os.stat_result,
    parts: list[str],
    requested: str,
    flags: int,
    mode: int,
    make_dirs: bool,
) -> Opened | list[str]:
    """One walk from the root: the opened file, or the parts to walk next (a link met)."""
    fd = os.dup(root_fd)
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                target = _readlink(fd, name)
                if target is not None:
                    return _link_target(root, parts[:i], target, requested) + parts[i + 1 :]
                if make_dirs and isinstance(exc, FileNotFoundError):
                    with contextlib.suppress(FileExistsError):  # made meanwhile: fine
                        os.mkdir(name, 0o777, dir_fd=fd)
                    return parts  # the next walk opens (and so checks) it
                raise
            os.close(fd)
            fd = nfd
        name = parts[-1]
        try:
            opened, created = _open_last(fd, name, flags, mode)
        except OSError as exc:
            target = _readlink(fd, name) if exc.errno in _LINK_ERRNOS else None
            if target is not None:
                return _link_target(root, parts[:-1], target, requested)
            raise
        # Check what was opened: the folder it was opened in still hangs below the root.
        if not _is_beneath(fd, len(parts) - 1, root_st):
            os.close(opened)
            raise ForbiddenPath(
                f"{requested}: a folder on its way was moved out of the "
                "workspace while it was opened"
            )
        return Opened(opened, "/".join(parts), created)
    finally:
        os.close(fd)


def _open_last(dir_fd: int, name: str, flags: int, mode: int) -> tuple[int, bool]:
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC
    if not flags & os.O_CREAT or flags & os.O_EXCL:
        return os.open(name, flags, mode, dir_fd=dir_fd), bool(flags & os.O_CREAT)
    try:  # O_CREAT alone: an existing file first, so that "created" is known
        return os.open(name, flags & ~os.O_CREAT, dir_fd=dir_fd), False
    except FileNotFoundError:
        return os.open(name, flags | os.O_EXCL, mode, dir_fd=dir_fd), True


def _readlink(dir_fd: int, name: str) -> str | None:
    """The target of link ``name`` in ``dir_fd``, or None when it is not a link."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:  # EINVAL: not a link
        return None
