"""What the index holds of each file ((mtime, size) as committed) and which files were written
lately: the watcher's filter (``is_indexed_path``), the cheap check a search makes for a
write the watcher has not reported yet (``stale_hot_paths``), and which changes a search
must wait for (``concerns``).

The check's stats keep the interpreter lock (``stat_many``) only while every file they go
to was last found on a local file system (``may_hold_lock``; filesystems.py): looked at when
the index opens, after each whole scan, when a new file joins the hot ones, and again once
a finding is ``RECHECK_SECONDS`` old (a mount made or gone under the workspace meanwhile).
Otherwise a stat may wait minutes for a server, and the search runs the check off the event
loop, through os.stat (``stale_hot_paths(held=False)``). Where the lock is kept, between
writes, one poll of inotify watches set on what the stats look at stands for them
(file_events.py): the same answer, without a stat.

The watched folders' mtimes after a whole scan are kept in the index (meta
``folder_mtimes``): a file added or removed while the daemon was stopped is found by the
first search after a start, not only once the startup scan reaches it. An index no whole
scan ever ended on (just added, or made anew) knows its folders only through that scan
(``folders_known``): a search waits for it (workspace/search_service.py)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.files.layout import (
    CURATED_FILES,
    MEMORY_DIR,
    SESSIONS_DIR,
    Layout,
    daily_rel,
    day_of,
    display_name,
)
from memoryd.index import filesystems, schema
from memoryd.index.store import FileRow
from memoryd.index.types import SearchRequest
from memoryd.runtime.days import local_today
from memoryd.runtime.logs import get_logger
from memoryd_client.search_terms import SOURCE_MEMORY

try:  # _compiled_stats.c: the stats without giving the interpreter lock up; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover (no compiler where it was installed)
    compiled = None  # type: ignore[assignment]

HOT_SECONDS = 600  # files changed this recently are stat'ed before each search...
HOT_MAX = 32  # ...at most this many, the most recent
WATCHED_FOLDERS = ("", MEMORY_DIR, SESSIONS_DIR)  # their mtimes tell a file came or went
RECHECK_SECONDS = 60.0  # a finding that the stats' files are all local holds this long
NEVER = float("-inf")
ARM_WAIT_MAX = 64  # full checks at most between two settings of the watches (_may_arm)
FOLDERS_KEY = "folder_mtimes"  # meta: {rel: mtime_ns} of WATCHED_FOLDERS after a whole scan

log = get_logger("memoryd.index")


Stats = Callable[[Sequence[str]], list[tuple[int, int] | None]]

if TYPE_CHECKING:
    import apsw

    from memoryd.index.file_events import FileEvents, Watched


def py_stat_many(paths: Sequence[str]) -> list[tuple[int, int] | None]:
    """(mtime in ns, size) of each path, None for one that cannot be stat'ed. The compiled
    version (same values) keeps the interpreter lock through the stats: os.stat gives it up
    for each, and a thread waiting for it (the watch thread every 50 ms, hit counting's
    batch) took it there in the middle of a search, which then waited for it to come back
    (issue 38's tail)."""
    out: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return out


stat_many: Stats = py_stat_many if compiled is None else compiled.stat_many


class Freshness:
    """Thread-safe: the writer thread commits while searches and the watcher ask.
    ``fs_type`` (statfs), ``stat_released`` (os.stat, file by file: where a stat may hang)
    and ``clock`` are the system's but in tests (a fake file system, a fake clock)."""

    def __init__(
        self,
        layout: Layout,
        fs_type: filesystems.FsType = filesystems.fs_type,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.layout = layout
        self.root = layout.root
        self._lock = threading.Lock()
        self._files: dict[str, tuple[int, int]] = {}  # rel -> (mtime_ns, size) as indexed
        self._recent: dict[str, float] = {}  # rel -> when a targeted sync committed it
        self._dir_mtimes: dict[str, int] = {}  # after the last whole scan; {}: none yet
        self._kept_mtimes: dict[str, int] = {}  # as the index holds them (FOLDERS_KEY)
        self._before_scan: dict[str, int] | None = None  # read as a whole scan began
        # A whole scan ended on this index, now or before a restart: a search's check finds
        # a file come or gone in a folder (``_dirs_changed``). Until then only the scan does.
        self.folders_known = False
        self._root_str = str(self.root)
        # (rel, absolute path) of each watched folder: joined once, not at each search
        self._folders = tuple((rel, os.path.join(self._root_str, rel)) for rel in WATCHED_FOLDERS)
        self._hot_day: date | None = None  # the day _hot was made for
        self._hot: tuple[tuple[str, str], ...] = ()  # (rel, absolute path) always checked
        self.fs_type = fs_type
        self.stat_released: Stats = py_stat_many
        self._clock = clock
        # Until then (clock: time.monotonic in the daemon, whose searches compare it with
        # their own reading) the stats may keep the lock: every file they go to was found on
        # a local file system. NEVER before the first look, or after a file found elsewhere.
        self.local_until = NEVER
        self.not_local: tuple[str, str | None] | None = None  # that file, its type's name
        self._look_again = NEVER  # when the next look is due
        self._looking = threading.Lock()
        self._found = 0  # files found not local by ``committed``: a look begun before keeps it
        # What the check compares with changed (a row committed, a scan ended): bumped, and
        # the quiet path (file_events.py) waits for a check of its own.
        self._gen = 0
        # file_events.py's, made at the first check that sets watches (not at the start)
        self._events: FileEvents | None = None
        self._watched: Watched | None = None
        self._arming = threading.Lock()  # one check sets the watches at a time
        self._quiet_before = False  # the last check found nothing: the next one arms
        self._quiet_hits = 0  # checks the watches answered
        self._hits_at_arm = -1  # ... when they were last set
        self._arm_wait = self._arm_skip = 0  # full checks before the next watches (_may_arm)
        self._backed_off = False

    def load(self, rows: Iterable[FileRow], conn: apsw.Connection | None = None) -> None:
        """The index's files as opened (the writer thread), the folders' mtimes its last
        whole scan left in ``conn``; and where the stats will go."""
        with self._lock:
            self._files = {r.path: (r.mtime_ns, r.size) for r in rows}
            self._gen += 1
        if conn is not None:
            self._kept_mtimes = _mtimes(schema.get_meta(conn).get(FOLDERS_KEY))
            self._dir_mtimes = dict(self._kept_mtimes)
            self.folders_known = bool(self._dir_mtimes)
        self._gen += 1
        self.look_at_filesystems()

    def may_hold_lock(self) -> bool:
        """Whether the stats may keep the interpreter lock (on the event loop): every file
        they go to was found on a local file system, lately."""
        return self.local_until > self._clock()

    def look_at_filesystems(self) -> None:
        """Find out whether every file the stats go to is on a local file system. Blocks as
        long as a stat of them (statfs asks the file system): never on the event loop."""
        if not self._looking.acquire(blocking=False):
            return  # another thread is looking
        try:
            start, found_before = self._clock(), self._found
            paths = [path for _rel, path in (*self._folders, *self._hot_for(local_today()))]
            with self._lock:
                paths += [os.path.join(self._root_str, rel) for rel in self._recent]
            found = filesystems.first_not_local(paths, self.fs_type)
            self._look_again = start + RECHECK_SECONDS
            if found is None and self._found == found_before:
                self.local_until = self._look_again
                self._tell(None)
            elif found is not None:
                self.local_until = NEVER
                self._tell(found)
        finally:
            self._looking.release()

    def _tell(self, found: tuple[str, str | None] | None) -> None:
        """Log a change of finding (troubleshooting: why searches of it take a thread)."""
        if found == self.not_local:
            return
        if found is not None and (self.not_local is None or found[1] != self.not_local[1]):
            log.info(
                "workspace_not_on_a_local_file_system",
                root=self._root_str,
                path=found[0],
                file_system=found[1] or "not known",
                effect="read-your-writes stats run off the event loop",
            )
        elif found is None:
            log.info("workspace_on_a_local_file_system", root=self._root_str)
        self.not_local = found

    def _hot_for(self, day: date) -> tuple[tuple[str, str], ...]:
        """(rel, absolute path) of the files every search stats: the curated files, the
        day's and the day before's log."""
        rels = {*CURATED_FILES, daily_rel(day), daily_rel(day - timedelta(days=1))}
        return tuple((rel, os.path.join(self._root_str, rel)) for rel in sorted(rels))

    def committed(self, rel: str, row: FileRow | None, targeted: bool) -> None:
        """A file's new row (None: removed). ``targeted``: a file someone is writing now,
        not one a startup scan found: it stays hot for a while."""
        with self._lock:
            self._gen += 1
            if row is None:
                self._files.pop(rel, None)
            else:
                self._files[rel] = (row.mtime_ns, row.size)
            new = targeted and rel not in self._recent
            if targeted:
                self._recent[rel] = time.monotonic()
                if len(self._recent) > HOT_MAX:
                    del self._recent[min(self._recent, key=self._recent.__getitem__)]
        if new:  # one more file the stats go to: where is it? (statfs: the writer thread)
            path = os.path.join(self._root_str, rel)
            name = filesystems.name_at(path, self.fs_type)
            if name not in filesystems.LOCAL:
                self._found += 1
                self.local_until = NEVER
                self._tell((path, name))

    def before_sync(self, paths: list[Path] | None) -> list[Path] | None:
        """A sync's paths, folders expanded (``expand_dirs``; the writer thread). Before a
        whole scan (None) lists the folders: their mtimes, for ``scanned`` (a file that comes
        or goes during the scan then leaves them behind: the next search's check lists the
        folders again; read after the scan, they would vouch for a file it never saw)."""
        if paths is not None:
            return self.expand_dirs(paths)
        self._before_scan = self._read_dir_mtimes()
        return None

    def scanned(self, conn: apsw.Connection | None = None) -> None:
        """A whole scan just ended: the folder mtimes to compare later searches against (as
        read before it: ``before_sync``), kept in ``conn`` for the next start (written only
        when they changed); and the file systems looked at again (a scan follows a mount
        made or gone)."""
        mtimes, self._before_scan = self._before_scan, None
        if mtimes is None:
            mtimes = self._read_dir_mtimes()
        if conn is not None and mtimes != self._kept_mtimes:
            schema.set_meta(conn, {FOLDERS_KEY: json.dumps(mtimes, sort_keys=True)})
            self._kept_mtimes = mtimes
        with self._lock:
            self._dir_mtimes = mtimes
            self._gen += 1
        self.folders_known = bool(mtimes)
        self.look_at_filesystems()

    def expand_dirs(self, paths: list[Path]) -> list[Path]:
        """A directory event (moved or deleted folder) stands for every file under it."""
        out: list[Path] = []
        for p in paths:
            rel = self.layout.rel(Path(os.path.abspath(p)))
            if rel is not None and Path(p).is_dir():
                out += [f.path for f in self.layout.iter_files() if f.rel.startswith(rel + "/")]
            elif rel is not None and not Path(p).exists():
                with self._lock:
                    out += [self.root / k for k in self._files if k.startswith(rel + "/")]
            out.append(p)
        return out

    def is_indexed_path(self, path: Path) -> bool:
        """Whether a change at ``path`` (absolute) concerns this index (the watcher's filter)."""
        rel = self.layout.rel(Path(os.path.abspath(path)))
        if rel is None:
            return False
        with self._lock:
            known = rel in self._files or any(k.startswith(rel + "/") for k in self._files)
        if known or self.layout.classify(rel) is not None:
            return True
        folder = rel in (MEMORY_DIR, SESSIONS_DIR) or rel.startswith(MEMORY_DIR + "/")
        # The watcher asks on the event loop: where a stat may hang (not found local lately)
        # it is left to the writer (expand_dirs), which stops only this workspace then.
        return folder and (not self.may_hold_lock() or Path(path).is_dir())

    def concerns(self, req: SearchRequest) -> Callable[[Path], bool]:
        """Whether a change at a path (absolute) can change which chunks ``req`` may find:
        a search waits only for those. The filters decide, as search.Filters applies them
        (source, path prefix, a daily file's date); a path they cannot place (a folder, a
        name that is no note) concerns every search. The text is not looked at: a change
        that cannot match may still change a chunk's lines or ranking."""
        sources = set(req.sources)
        prefix = req.path_prefix
        since, until = req.since, req.until

        def concerns(path: Path) -> bool:
            rel = self.layout.rel(Path(os.path.abspath(path)))
            if rel is None:
                return False  # not this workspace's
            source = self.layout.classify(rel)
            if source is None:
                return True
            name = display_name(rel)
            if source not in sources or (prefix and not name.startswith(prefix)):
                return False
            if (since or until) and source == SOURCE_MEMORY:  # a transcript's day is inside
                day = day_of(name)
                return bool(day) and (not since or day >= since) and (not until or day <= until)
            return True

        return concerns

    def stale_hot_paths(self, held: bool = True) -> list[Path]:
        """Recently active files whose (mtime, size) differ from the index: a cheap check
        (a few stats) that lets a search see a write the watcher has not reported yet.
        ``held``: the stats keep the interpreter lock (``may_hold_lock`` said so); else they
        give it up, each, as os.stat does.

        Held (a local file system), after a check that found nothing, the next one also
        sets watches on what it stats (file_events.py); from then on, until an event or a
        change of what it compares with (``_gen``), nothing is to be found and no stat is
        made: the same answer, one poll instead of ~8 stats."""
        today = local_today()
        w = self._watched
        if today != self._hot_day:  # the curated files, today's and yesterday's log
            self._hot = self._hot_for(today)
            self._hot_day = today
            with self._lock:  # other files now: watched anew (and not those of a check
                self._gen += 1  # setting the watches with the day before's meanwhile)
        elif held and w is not None and w.armed and (gen := w.gen) == self._gen:
            assert self._events is not None  # set with ``w``
            if self._events.quiet(w, gen):
                self._quiet_hits += 1
                return []  # no change since a check that found nothing (file_events.py)
        if not held:
            if w is not None:
                w.gen = -1
        elif self._quiet_before and self._may_arm() and self._arming.acquire(blocking=False):
            try:
                stale = self._watched_check()
            finally:
                self._arming.release()
            self._quiet_before = not stale
            return stale
        stale = self._compare(self._state(), stat_many if held else self.stat_released)
        self._quiet_before = held and not stale
        return stale

    def _watched_check(self) -> list[Path]:
        """The check (held), the watches set first: a change after them is queued, one
        before is what the stats read. Armed for the next checks when it finds nothing and
        nothing changed meanwhile (an event clears ``armed``; a commit bumps ``_gen``)."""
        if self._watched is None:  # the second check, not the start's path
            from memoryd.index import file_events

            self._events, self._watched = file_events.EVENTS, file_events.Watched()
        assert self._events is not None
        w = self._watched
        w.gen, gen = -1, self._gen  # first: a check that found them armed answers no more
        state = self._state()
        folders, files, above = self._watch_list(state)
        armed = self._events.arm(w, folders, files, above) and self._local(w, folders, files)
        stale = self._compare(state, stat_many)
        if armed and not stale and gen == self._gen:
            w.gen = gen
        return stale

    def _local(self, w: Watched, folders: list[str], files: list[str]) -> bool:
        """Whether the watched paths are on local file systems (a server's writes make no
        event here): looked at for the first watches and after a mount (read after ``arm``,
        which takes the queued ones; a later one disarms). Found elsewhere: the stats leave
        the event loop until the next look, as ``committed`` does."""
        assert self._events is not None
        mounts = self._events.mounts
        if w.local_at == mounts:
            return True
        found = filesystems.first_not_local([*folders, *files], self.fs_type)
        if found is None:
            w.local_at = mounts
            return True
        self._found += 1
        self.local_until = NEVER
        self._tell(found)
        return False

    def _may_arm(self) -> bool:
        """Whether this check sets the watches: not where events keep coming (a folder
        where files are made all the time): after watches no check found quiet, the next
        are set only after 1, 2, 4... ARM_WAIT_MAX full checks."""
        if self._arm_skip > 0:
            self._arm_skip -= 1
            return False
        if self._quiet_hits == self._hits_at_arm and not self._backed_off:  # set for nothing
            self._arm_wait = min(2 * self._arm_wait or 1, ARM_WAIT_MAX)
            self._arm_skip, self._backed_off = self._arm_wait, True
            return False
        if self._quiet_hits != self._hits_at_arm:
            self._arm_wait = 0
        self._backed_off, self._hits_at_arm = False, self._quiet_hits
        return True

    def _state(self) -> list[tuple[str, str, tuple[int, int] | None]]:
        """(rel, absolute path, (mtime, size) as indexed) of each file the check stats."""
        hot = self._hot
        # The rows as committed, read before the stats. Each is one dict read (atomic under
        # the GIL) and compared with its own file alone, so the hot files need no lock;
        # the recent files do: the writer thread adds and drops them while we iterate.
        files = self._files
        state = [(rel, path, files.get(rel)) for rel, path in hot]
        if self._recent:
            now = time.monotonic()
            known = {rel for rel, _ in hot}
            with self._lock:
                state += [
                    (rel, os.path.join(self._root_str, rel), files.get(rel))
                    for rel, t in self._recent.items()
                    if now - t < HOT_SECONDS and rel not in known
                ]
        return state

    def _compare(
        self, state: list[tuple[str, str, tuple[int, int] | None]], stats: Stats
    ) -> list[Path]:
        """The files of ``state`` that changed, and those come or gone in a watched folder."""
        # One call, the interpreter lock held through the stats (stat_many, above), or not
        now_stats = stats([path for _rel, path, _indexed in state])
        stale = []
        for (rel, _path, indexed), current in zip(state, now_stats, strict=True):
            if current != indexed and (current is None or self.layout.classify(rel)):
                stale.append(self.root / rel)
        if self._dir_mtimes and self._dirs_changed(stats):
            mtimes = self._read_dir_mtimes()  # before the listing (scanned's ``mtimes``)
            with self._lock:
                known_files = set(self._files)
            present = {f.rel for f in self.layout.iter_files()}
            stale += [self.root / rel for rel in sorted(present ^ known_files)]
            self._dir_mtimes = mtimes
        return stale

    def _watch_list(
        self, state: list[tuple[str, str, tuple[int, int] | None]]
    ) -> tuple[list[str], list[str], list[str]]:
        """What file_events.arm watches for a check of ``state``: the folders (the root
        first, the other watched ones, and every one from the root down to each file), the
        files, and the folders above the root (not the file system's root: it cannot be
        moved)."""
        root = self._root_str
        folders = {path.rstrip("/") or "/": None for _rel, path in self._folders}
        for rel, _path, _indexed in state:
            parts = rel.split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                folders[os.path.join(root, *parts[:depth])] = None
        above = []
        parent = os.path.dirname(root)
        while parent != os.path.dirname(parent):
            above.append(parent)
            parent = os.path.dirname(parent)
        ordered = sorted(folders, key=lambda f: f.count("/"))  # each after its parent
        return ordered, [path for _rel, path, _indexed in state], above

    def stale_hot_paths_released(self) -> list[Path]:
        """``stale_hot_paths`` where a stat may hang (not found local, or not lately): off
        the event loop, on a thread of its own, the lock given up at each stat; the file
        systems looked at again first when due."""
        if self._clock() >= self._look_again:
            self.look_at_filesystems()
        return self.stale_hot_paths(held=False)

    def _dirs_changed(self, stats: Stats) -> bool:
        """Whether a watched folder's mtime (or its existence) differs from the last scan's:
        ``_read_dir_mtimes() != _dir_mtimes``, without building the map on every search."""
        known = self._dir_mtimes
        folders = self._folders
        for (rel, _path), now in zip(folders, stats([p for _r, p in folders]), strict=True):
            then = known.get(rel)
            if (now is not None) if then is None else (now is None or now[0] != then):
                return True
        return False

    def _read_dir_mtimes(self) -> dict[str, int]:
        out = {}
        for rel, path in self._folders:
            with contextlib.suppress(OSError):
                out[rel] = os.stat(path).st_mtime_ns
        return out


def _mtimes(text: str | None) -> dict[str, int]:
    """FOLDERS_KEY's value; {} when missing or not what scanned() writes."""
    try:
        found = json.loads(text or "{}")
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if k in WATCHED_FOLDERS and type(v) is int}
