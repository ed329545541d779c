"""Whether anything changed a set of files and folders since a moment, without a stat: the
read-your-writes check's quiet path (freshness.py).

A search stats the recently active files (and the watched folders) before it runs, for a
write the watcher has not reported yet. Between writes those stats find nothing, search
after search. Here one inotify instance of the daemon's own (not the watcher's: watchfiles
hands its events over after a debounce) watches exactly what the stats would look at: the
files themselves (their inodes: a write through another hard link, a rename onto them,
their deletion, a touch), every folder from the workspace down to them (a file made,
deleted or renamed in it; the folder's own mtime), the folders above the workspace (moved
or deleted), and the mount table (a file system mounted or unmounted anywhere). The kernel
queues the event inside the call that changes the file, before the writer gets control
back, so a search asked after a write always finds its event queued: one poll with no
timeout says whether the stats can find anything. Any event, an overflow or a mount, and
the stats run as before, then arm the watches again.

Where it does not apply the stats run as before: not Linux (no inotify), no compiled module,
a hot file or folder that is a symbolic link (its target's folder is not watched), a watch
that cannot be set (the user's watch limit), and, decided by freshness.py, a workspace not
found on a local file system (a server's writes make no event here).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Sequence

try:  # _compiled_watch.c; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover (no compiler where it was installed)
    compiled = None  # type: ignore[assignment]

# inotify(7)
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
# A file: written or truncated, its times or links changed, moved or deleted
FILE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVE_SELF | IN_DELETE_SELF
# A folder on the way: an entry made, deleted or renamed, its own mtime set, itself moved
FOLDER_MASK = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_ATTRIB
FOLDER_MASK |= IN_MOVE_SELF | IN_DELETE_SELF
ABOVE_MASK = IN_MOVE_SELF | IN_DELETE_SELF  # a folder above the workspace: moved or deleted
MOUNTS = "/proc/self/mounts"  # poll reports a change of the mount table (proc(5))


class Watched:
    """One workspace's watches (freshness.py). ``armed``: nothing was reported on them since
    ``arm`` set them; cleared by any event of theirs (``quiet``) or by the owner."""

    def __init__(self) -> None:
        self.armed = False
        self.gen = -1  # the owner's generation when armed (freshness.py)
        self.wds: frozenset[int] = frozenset()
        self.local_at = -1  # FileEvents.mounts when its paths were last found local


class FileEvents:
    """The daemon's one inotify instance, shared by its workspaces (each instance counts
    against the user's inotify instance limit, 128 on many systems). Thread-safe: searches
    run on the event loop and on reader threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd = -1
        self._mounts = -1
        self._broken = compiled is None
        # Changes of the mount table seen (a watch says nothing of a server's writes: after
        # one, freshness.py looks where the paths are before it trusts new watches)
        self.mounts = 0
        self._owners: dict[int, weakref.WeakSet[Watched]] = {}  # wd -> who watches it
        self._all: weakref.WeakSet[Watched] = weakref.WeakSet()

    def quiet(self, w: Watched, gen: int) -> bool:
        """Whether nothing was reported on ``w``'s watches since they were armed at ``gen``
        (the caller found them so). Checked again with the queue read: meanwhile another
        check may have taken an event of them (another workspace's poll) and set them anew,
        after the change that made it (its owner sets ``gen`` -1 first)."""
        if not w.armed:
            return False
        with self._lock:
            try:
                ready = compiled.watch_ready(self._fd, self._mounts)
                if ready:
                    self._take_events(ready)
            except OSError:  # the fds unusable (closed by someone): the stats from now on
                self._give_up()
            return w.armed and w.gen == gen

    def arm(
        self, w: Watched, folders: Sequence[str], files: Sequence[str], above: Sequence[str]
    ) -> bool:
        """Watch ``folders`` (the workspace's first, then those on the way to ``files``,
        each after the one that holds it), ``files`` and the folders ``above`` the
        workspace, then report on ``w`` until an event. Set before the caller's stats: a
        change made after its file's watch is queued, one made before is what the stats
        read. A folder not there is reported coming by the folder holding it, but for the
        workspace's own: the folder above is watched for moves only, so the workspace's
        folder must be there. False (and ``w`` not armed) where the watches cannot say
        everything the stats would."""
        with self._lock:
            w.armed = False
            if self._broken or not self._open():
                return False
            try:
                ready = compiled.watch_ready(self._fd, self._mounts)
                if ready:  # the others' events, before ``w``'s watches change
                    self._take_events(ready)
            except OSError:
                self._give_up()
                return False
            wds: list[int] = []  # those set before a refusal too: ``w``'s, let go later
            try:
                self._add(wds, above, ABOVE_MASK, False, absent_ok=False)
                self._add(wds, folders[:1], FOLDER_MASK, False, absent_ok=False)
                self._add(wds, folders[1:], FOLDER_MASK, False, absent_ok=True)
                self._add(wds, files, FILE_MASK, True, absent_ok=True)
                done = True
            except OSError:  # the watch limit, most likely: stats from now on
                done = False
            new = frozenset(wds)
            for wd in new:
                self._owners.setdefault(wd, weakref.WeakSet()).add(w)
            for wd in w.wds - new:
                self._drop(w, wd)
            for wd in [wd for wd, owners in self._owners.items() if not owners]:
                self._drop(None, wd)  # a workspace's whose index is gone
            self._all.add(w)
            w.wds = new
            w.armed = done
            return w.armed

    def _give_up(self) -> None:
        """No watch stands for the stats any more (everyone disarmed, none armed again):
        a poll or a read of the fds failed, which nothing here recovers from."""
        self._broken = True
        for w in self._all:
            w.armed = False

    def _open(self) -> bool:
        if self._fd >= 0:
            return True
        try:
            self._fd = compiled.watch_open()
            self._mounts = os.open(MOUNTS, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # not Linux, no /proc, the instance limit: stats as before
            if self._fd >= 0:
                os.close(self._fd)
            self._fd, self._broken = -1, True
            return False
        return True

    def _add(
        self, out: list[int], paths: Sequence[str], mask: int, file: bool, *, absent_ok: bool
    ) -> None:
        """The watches of ``paths``, into ``out``; OSError where one cannot say what a stat
        would (``out`` holds those set before)."""
        for path in paths:
            wd = compiled.watch_add(self._fd, path, mask, file)
            if wd == -2 or (wd == -1 and not absent_ok):  # a link, or no folder above
                raise OSError(f"cannot watch {path}")
            if wd >= 0:  # -1: nothing there; the folder holding it reports it coming
                out.append(wd)

    def _take_events(self, ready: int) -> None:
        """Disarm whoever a queued event concerns (``ready``: watch_ready's answer, which
        says a mount only once): everyone for an overflow or a mount."""
        wds = compiled.watch_read(self._fd) if ready & 1 else []
        self.mounts += ready >> 1
        if ready & 2 or -1 in wds:
            for w in self._all:
                w.armed = False
            return
        for wd in wds:
            owners = self._owners.get(wd)
            if not owners:
                self._drop(None, wd)  # no workspace left watching it
                continue
            for w in owners:
                w.armed = False

    def _drop(self, w: Watched | None, wd: int) -> None:
        owners = self._owners.get(wd)
        if owners is not None and w is not None:
            owners.discard(w)
        if not owners:
            self._owners.pop(wd, None)
            with contextlib.suppress(OSError):
                compiled.watch_remove(self._fd, wd)


EVENTS = FileEvents()
