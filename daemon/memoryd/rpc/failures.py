"""Failures of the machine, not of memoryd, as the errors a client can act on.

A method that meets a full disk or an index file gone from under it (SQLite or the OS
says so) is answered ``disk_full`` or ``unavailable``, not ``internal``: the request was
fine, and the same request succeeds once space is freed or the index is back.
"""

from __future__ import annotations

import errno

import apsw

from memoryd.errors import DiskFull, MemorydError, Unavailable

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def known_failure(exc: BaseException) -> MemorydError | None:
    """The client-facing error for ``exc`` or what it was raised from (SQLite undoes a
    transaction that hit SQLITE_FULL itself, so leaving ``with conn:`` raises "cannot
    rollback" from the FullError), or None when it is a defect (``internal``)."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        seen.add(id(found))
        known = _known(found)
        if known is not None:
            return known
        found = found.__cause__ or found.__context__
    return None


def _known(exc: BaseException) -> MemorydError | None:
    if isinstance(exc, apsw.FullError) or (isinstance(exc, OSError) and exc.errno in _NO_SPACE):
        return DiskFull(
            f"the disk is full ({type(exc).__name__}: {exc}); nothing was recorded: free "
            "some space and try again"
        )
    if isinstance(exc, apsw.CantOpenError | apsw.ConnectionClosedError):
        return Unavailable(
            f"the index could not be used ({type(exc).__name__}: {exc}): the workspace was "
            "removed or its index is being rebuilt; try again"
        )
    return None
