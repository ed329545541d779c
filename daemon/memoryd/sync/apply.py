"""An integration written to the workspace: through the journal, under the file locks.

The workspace may have moved on since the commit the merge started from (agents append all
the time). Each file is read under its lock: still as committed, it simply takes the merged
content; changed since, the merged content is merged again with what is on disk (the
committed version as the base, by the same rule), so a line written meanwhile is kept. Then
the journal replaces the files as one change (whole or absent across a kill -9), checking
each is still what was read (lifecycle/journal.py); a file that moved on in between is read
and merged again. The ledger is replaced while its own appends are held off.

Pre-images are kept (``forget.keep_days``, this host's own) when lines are removed: a forget
that travelled here is a forget here too. A purge that travelled (the remote's history was
rewritten) keeps none.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from memoryd.errors import MemorydError
from memoryd.files.beneath import open_beneath
from memoryd.files.layout import display_name
from memoryd.files.provenance import LEDGER_REL, ledger_for
from memoryd.lifecycle import journal
from memoryd.sync.merge_daily import Sides
from memoryd.sync.merge_file import merge_file
from memoryd.sync.paths import kind_of
from memoryd.sync.tree_merge import Integration

__all__ = ["Busy", "LockPaths", "SecureWrites", "write_integration"]

LockPaths = Callable[[Iterable[Path]], AbstractContextManager[object]]
# Around a write that removes forgotten lines (root, the files): the workspace's index
# deletes their chunks securely and follows them before it ends (services.py makes it from
# the registry; a workspace whose index is not open gets no hold).
SecureWrites = Callable[[Path, list[Path]], AbstractContextManager[object]]


class Busy(MemorydError):
    code = "unavailable"


def _read(root: Path, rel: str) -> tuple[bool, bytes | None]:
    """(regular, content): a missing file is (True, None); a link or folder (False, None)."""
    try:
        st = os.lstat(root / rel)
    except FileNotFoundError:
        return True, None
    except OSError:
        return False, None
    if not stat.S_ISREG(st.st_mode):
        return False, None
    try:
        opened = open_beneath(root, rel, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return True, None
    with os.fdopen(opened.fd, "rb") as f:
        return True, f.read()


def write_integration(
    root: Path,
    integ: Integration,
    locked: LockPaths,
    host: str,
    now: float,
    keep: bool,
) -> list[str]:
    """Bring the workspace's files to ``integ``; the paths written."""
    if not integ.contents:
        return []
    rels = sorted(integ.contents)

    def merged_with(rel: str, disk: bytes | None) -> bytes | None:
        """The file's new content given what is on disk now (written since our commit:
        merged again by its rule, with the committed version as the base)."""
        base = integ.committed[rel]
        new = integ.contents[rel]
        if disk == base:
            return new
        sides = Sides(rel, integ.ledger, host, host, now, now)
        return merge_file(kind_of(rel), base, disk, new, sides).data

    with locked(root / r for r in rels), _ledger_held(root, rels):
        files = []
        for rel in rels:
            regular, disk = _read(root, rel)
            if not regular:
                continue  # a link or a folder where a memory file was: left alone
            new = merged_with(rel, disk)
            if new != disk:
                files.append(journal.FileChange(rel, disk, new))
        change = journal.Change("sync", files, {"sync": integ.theirs}, keep)
        done = journal.apply(root, change, now=now, replan=merged_with)
    if done.left:  # the branch must not claim what the files do not hold: next time
        raise Busy(
            "sync could not write "
            + ", ".join(f"{display_name(rel)} ({why})" for rel, why in sorted(done.left.items()))
            + "; it tries again"
        )
    return [f.rel for f in files]


@contextlib.contextmanager
def _ledger_held(root: Path, rels: list[str]) -> Iterator[None]:
    if LEDGER_REL not in rels:
        yield
        return
    with ledger_for(root).exclusive():
        yield
