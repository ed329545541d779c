"""The read-your-writes check's quiet path (index/file_events.py): once a check found
nothing, the next sets inotify watches on what it stats, and from then on a check makes no
stat until an event. Every check must still give what the stats give: here each change a
writer can make right before a search (written, replaced by a rename, created, deleted,
written through a hard link elsewhere, touched, the folder above the workspace moved) is
made on real files after the watches are set, and the quiet Freshness is compared with one
that always stats (held=False never arms)."""

from __future__ import annotations

import datetime as dt
import gc
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import pytest

from memoryd.files.layout import Layout
from memoryd.index import file_events
from memoryd.index.file_events import EVENTS, FileEvents
from memoryd.index.freshness import ARM_WAIT_MAX, Freshness, py_stat_many
from memoryd.index.store import FileRow

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or file_events.compiled is None,
    reason="inotify (Linux) through the compiled module",
)


def row(rel: str, path: Path) -> FileRow:
    st = os.stat(path)
    return FileRow(rel, "memory", "h", st.st_mtime_ns, st.st_size, "", 0, 1, 0, 0, 0, None)


def today_rel() -> str:
    return f"memory/{dt.date.today().isoformat()}.md"


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "above" / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n")
    (root / today_rel()).write_text("# Today\n")
    (root / "memory" / "2020-01-01.md").write_text("# Old\n")
    return root


def pair(root: Path) -> tuple[Freshness, Freshness]:
    """A Freshness that takes the quiet path, and one that stats at every check (the
    stats as given off the event loop: the same comparison, never armed)."""
    rels = ["MEMORY.md", today_rel(), "memory/2020-01-01.md"]
    made = []
    for _ in range(2):
        fresh = Freshness(Layout(root))
        fresh.load([row(rel, root / rel) for rel in rels])
        fresh.scanned()  # the folders' mtimes, as after a whole scan
        fresh.stat_released = py_stat_many
        made.append(fresh)
    return made[0], made[1]


def armed(fresh: Freshness) -> bool:
    assert fresh.stale_hot_paths() == []  # finds nothing: the next check arms
    assert fresh.stale_hot_paths() == []  # arms
    w = fresh._watched
    assert w is not None  # made by the second check
    return w.armed and w.gen == fresh._gen


def replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def touched(root: Path) -> None:
    os.utime(root / "MEMORY.md", ns=(0, 10**18))  # same size, another mtime


def moved_above(root: Path) -> None:
    """The workspace's folder moved away with the folder above it; a new one in its place."""
    above = root.parent
    os.rename(above, above.with_name("above-old"))
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory, another\n")


CHANGES: dict[str, Callable[[Path], object]] = {
    "appended": lambda root: append(root / "MEMORY.md", "- more\n"),
    "replaced by a rename": lambda root: replace(root / "MEMORY.md", "# Memory\n- new\n"),
    "today's log written": lambda root: (root / today_rel()).write_text("# Today\n- x\n"),
    "today's log deleted": lambda root: (root / today_rel()).unlink(),
    "a curated file created": lambda root: (root / "USER.md").write_text("# User\n"),
    "an old log created": lambda root: (root / "memory" / "2019-05-05.md").write_text("x\n"),
    "an old log deleted": lambda root: (root / "memory" / "2020-01-01.md").unlink(),
    "touched": touched,
    "the folder above moved": moved_above,
    "the memory folder replaced": lambda root: (
        os.rename(root / "memory", root / "memory-old"),
        (root / "memory").mkdir(),
    ),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_right_after_the_watches_is_found_as_the_stats_find_it(
    tmp_path: Path, change: str
) -> None:
    root = workspace(tmp_path)
    quiet, stats = pair(root)
    assert armed(quiet)
    assert quiet.stale_hot_paths() == []  # the quiet path: nothing changed
    CHANGES[change](root)
    found = quiet.stale_hot_paths()
    assert found == stats.stale_hot_paths(held=False)
    assert found, change  # each of these is one a search must sync first
    assert not (quiet._watched.armed and quiet._watched.gen == quiet._gen)


def test_a_write_through_a_hard_link_elsewhere_is_found(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    other = tmp_path / "elsewhere.md"  # MEMORY.md's other name, in no watched folder
    os.link(root / "MEMORY.md", other)
    quiet, stats = pair(root)
    assert armed(quiet)
    append(other, "- written through the other name\n")
    assert quiet.stale_hot_paths() == stats.stale_hot_paths(held=False) == [root / "MEMORY.md"]


def test_a_change_after_a_quiet_stretch_is_found(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    quiet, stats = pair(root)
    assert armed(quiet)
    for _ in range(50):
        assert quiet.stale_hot_paths() == []
    with open(root / "MEMORY.md", "a") as f:
        f.write("- a write the watcher has not reported\n")
        f.flush()  # written: the search comes before the file is closed
        assert quiet.stale_hot_paths() == stats.stale_hot_paths(held=False) == [root / "MEMORY.md"]


def test_a_workspace_folder_made_again_after_it_was_gone_is_found(tmp_path: Path) -> None:
    """With the workspace's folder gone (and its rows with it) the checks find nothing: the
    folder above is watched for moves only, so it could not report the folder made again."""
    root = workspace(tmp_path)
    quiet, stats = pair(root)
    assert armed(quiet)
    shutil.rmtree(root)
    gone = quiet.stale_hot_paths()
    assert gone == stats.stale_hot_paths(held=False) != []
    for fresh in (quiet, stats):
        for path in gone:
            fresh.committed(path.relative_to(root).as_posix(), None, targeted=False)
    for _ in range(ARM_WAIT_MAX + 3):  # nothing to find (with the back-off: arms again)
        assert quiet.stale_hot_paths() == []
    root.mkdir()
    (root / "MEMORY.md").write_text("# Memory, again\n")
    assert quiet.stale_hot_paths() == stats.stale_hot_paths(held=False) == [root / "MEMORY.md"]


def test_a_committed_row_and_a_new_hot_file_are_checked_by_stats_then_watched(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    quiet, _ = pair(root)
    assert armed(quiet)
    old = root / "memory" / "2020-01-01.md"
    old.write_text("# Old\n- synced\n")
    assert old not in quiet.stale_hot_paths()  # not hot: the watcher's (the stats agree)
    quiet.committed("memory/2020-01-01.md", row("memory/2020-01-01.md", old), targeted=True)
    assert quiet.stale_hot_paths() == []  # stats: the row is what the file holds
    assert armed(quiet)  # and now it is one of the watched files
    append(old, "- again\n")
    assert quiet.stale_hot_paths() == [old]


def test_a_new_day_watches_the_new_days_files(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    quiet, stats = pair(root)
    assert armed(quiet)
    quiet._hot_day = dt.date(2000, 1, 1)  # as if the day changed since the watches were set
    quiet._hot = ()
    assert quiet.stale_hot_paths() == []  # the day's files again, stats, and watched
    assert armed(quiet)
    append(root / today_rel(), "- after midnight\n")
    assert quiet.stale_hot_paths() == stats.stale_hot_paths(held=False) == [root / today_rel()]


def test_a_write_to_a_file_the_check_does_not_look_at_keeps_the_quiet_path(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    quiet, stats = pair(root)
    assert armed(quiet)
    append(root / "memory" / "2020-01-01.md", "- an older log: the watcher syncs it\n")
    assert quiet.stale_hot_paths() == stats.stale_hot_paths(held=False) == []
    assert quiet._watched.armed  # its folder's event for it does not count


def test_where_files_keep_coming_the_watches_are_set_less_and_less(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    quiet, stats = pair(root)
    assert armed(quiet)
    for i in range(300):  # a file made in the workspace's folder before every check
        (root / f"scratch{i}.txt").write_text("not a note\n")
        assert quiet.stale_hot_paths() == stats.stale_hot_paths(held=False) == []
    assert quiet._arm_wait == ARM_WAIT_MAX  # no watches answered a check: set ever more rarely
    hits = quiet._quiet_hits
    for _ in range(ARM_WAIT_MAX + 3):  # quiet again: set once more, and answering
        assert quiet.stale_hot_paths() == []
    assert quiet._watched.armed and quiet._quiet_hits > hits


def test_a_symlinked_hot_file_keeps_the_stats(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    target = tmp_path / "shared.md"
    target.write_text("# Shared\n")
    (root / "MEMORY.md").unlink()
    (root / "MEMORY.md").symlink_to(target)
    quiet, stats = pair(root)
    assert not armed(quiet)  # its target's folder is not watched
    target.write_text("# Shared\n- written at the target\n")
    assert quiet.stale_hot_paths() == stats.stale_hot_paths(held=False) == [root / "MEMORY.md"]


def test_one_workspaces_writes_leave_anothers_quiet_path_alone(tmp_path: Path) -> None:
    one, two = workspace(tmp_path / "one"), workspace(tmp_path / "two")
    q1, _ = pair(one)
    q2, _ = pair(two)
    assert armed(q1) and armed(q2)
    (one / "MEMORY.md").write_text("# Memory\n- one\n")
    assert q2.stale_hot_paths() == []
    assert q2._watched.armed  # its watches reported nothing
    assert q1.stale_hot_paths() == [one / "MEMORY.md"]


def test_a_check_that_gives_the_lock_up_never_takes_the_quiet_path(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    quiet, _ = pair(root)
    assert armed(quiet)
    quiet.stat_released = lambda paths: [None] * len(paths)  # a server that lost every file
    assert quiet.stale_hot_paths(held=False) != []  # stats, as given
    assert quiet._watched.gen == -1


def test_watches_of_a_workspace_gone_are_let_go(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    quiet, _ = pair(root)
    assert armed(quiet)
    wds = set(quiet._watched.wds)
    del quiet
    gc.collect()
    (root / "MEMORY.md").write_text("# Memory\n- after\n")
    other, _ = pair(workspace(tmp_path / "other"))
    assert armed(other)  # the watches nobody holds are dropped
    assert not (wds - other._watched.wds) & set(EVENTS._owners)


MOUNTED = """
import datetime as dt, os, subprocess, sys
from pathlib import Path
from memoryd.files.layout import Layout
from memoryd.index.freshness import ARM_WAIT_MAX, Freshness, py_stat_many
from memoryd.index.store import FileRow
root = Path(sys.argv[1])
rels = ["MEMORY.md", f"memory/{dt.date.today().isoformat()}.md"]
def row(rel):
    st = os.stat(root / rel)
    return FileRow(rel, "memory", "h", st.st_mtime_ns, st.st_size, "", 0, 1, 0, 0, 0, None)
quiet, stats = Freshness(Layout(root)), Freshness(Layout(root))
for f in (quiet, stats):
    f.load([row(rel) for rel in rels]); f.scanned(); f.stat_released = py_stat_many
assert quiet.stale_hot_paths() == quiet.stale_hot_paths() == []
assert quiet._watched.armed and quiet._watched.gen == quiet._gen
subprocess.run(["mount", "-t", "tmpfs", "none", str(root / "memory")], check=True)
(root / rels[1]).write_text("# Today, on the mounted file system\\n")
found = quiet.stale_hot_paths()
assert found == stats.stale_hot_paths(held=False) == [root / rels[1]], found
print("found")
"""


SERVER_MOUNTED = """
import datetime as dt, os, subprocess, sys
from pathlib import Path
from memoryd.files.layout import Layout
from memoryd.index import filesystems
from memoryd.index.freshness import ARM_WAIT_MAX, NEVER, Freshness, py_stat_many
from memoryd.index.store import FileRow
root = Path(sys.argv[1])
rels = ["MEMORY.md", f"memory/{dt.date.today().isoformat()}.md"]
def row(rel):
    st = os.stat(root / rel)
    return FileRow(rel, "memory", "h", st.st_mtime_ns, st.st_size, "", 0, 1, 0, 0, 0, None)
def fs_type(path):  # what is mounted over memory/ stands for a server's file system
    inside = os.path.abspath(path).startswith(str(root / "memory"))
    return "nfs4" if inside and os.path.ismount(root / "memory") else filesystems.fs_type(path)
quiet = Freshness(Layout(root), fs_type=fs_type)
quiet.load([row(rel) for rel in rels]); quiet.scanned(); quiet.stat_released = py_stat_many
assert quiet.stale_hot_paths() == quiet.stale_hot_paths() == []
assert quiet._watched.armed and quiet._watched.gen == quiet._gen
subprocess.run(["mount", "-t", "tmpfs", "none", str(root / "memory")], check=True)
(root / rels[1]).write_text("# Today, on the server\\n")
assert quiet.stale_hot_paths(held=quiet.may_hold_lock()) == [root / rels[1]]
quiet.committed(rels[1], row(rels[1]), targeted=False)  # synced (a scan: no look)
for _ in range(ARM_WAIT_MAX + 3):  # the stats, never watches on the server's files
    assert quiet.stale_hot_paths(held=quiet.may_hold_lock()) == []
    w = quiet._watched
    assert not (w.armed and w.gen == quiet._gen)
assert quiet.local_until == NEVER and quiet.not_local[0] == str(root / "memory")
print("found")
"""


def in_mount_namespace(script: str, root: Path) -> None:
    """``script`` run on ``root`` in a mount namespace of its own (as root, or as a user
    where user namespaces are allowed); skipped where neither can be made."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1)")
    private = [unshare, "-m", "--propagation", "private"]
    args = private if os.geteuid() == 0 else [unshare, "-U", "-r", "-m", "--propagation", "private"]
    try:
        done = subprocess.run(
            [*args, sys.executable, "-c", script, str(root)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except OSError as exc:
        pytest.skip(f"unshare: {exc}")
    # Skipped only where unshare(1) or the mount was refused: any other failure of the
    # script (an assertion, a SyntaxError, an import) fails the test
    refused = done.stderr.lstrip().startswith("unshare:") or "CalledProcessError" in done.stderr
    if done.returncode != 0 and "found" not in done.stdout and refused:
        pytest.skip(f"no mount namespace here: {done.stderr.strip()[-200:]}")
    said = done.stdout.strip().splitlines()  # the log's lines, then the script's own
    assert done.returncode == 0 and said[-1:] == ["found"], done.stderr


def test_a_file_system_mounted_over_a_watched_folder_is_found(tmp_path: Path) -> None:
    """A mount makes no inotify event on the folder it covers: the mount table's poll says it."""
    in_mount_namespace(MOUNTED, workspace(tmp_path))


def test_no_watches_stand_for_the_stats_on_a_servers_file_system_mounted_meanwhile(
    tmp_path: Path,
) -> None:
    """A watch sees no write made on a server: after a mount, watches are set anew only
    where the paths are found on local file systems (else the stats leave the event loop,
    as for a file found elsewhere), not at the next look (up to a minute later)."""
    in_mount_namespace(SERVER_MOUNTED, workspace(tmp_path))


def test_a_check_that_passed_the_armed_test_as_another_armed_again_finds_the_write(
    tmp_path: Path,
) -> None:
    """Searches check on the event loop and on reader threads. One found the watches armed,
    then, before its poll, another workspace's check took the write's event (disarming this
    one) and a second check of this workspace set the watches again: the first one's poll
    finds the queue empty, and must not answer from watches set after the write."""
    root, other = workspace(tmp_path / "one"), workspace(tmp_path / "two")
    quiet, stats = pair(root)
    q2, _ = pair(other)
    assert armed(quiet) and armed(q2)
    assert quiet.stale_hot_paths() == []  # a check the watches answered (no back-off)
    at_poll, go_on = threading.Event(), threading.Event()
    poll = FileEvents.quiet.__code__
    found: list[list[Path]] = []

    def held_at_the_poll(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is poll:
            at_poll.set()
            go_on.wait(10)

    def first() -> None:
        sys.setprofile(held_at_the_poll)
        try:
            found.append(quiet.stale_hot_paths())
        finally:
            sys.setprofile(None)

    append(root / "MEMORY.md", "- written before both checks\n")
    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert at_poll.wait(10)  # the first check found the watches armed
        assert q2.stale_hot_paths() == []  # took the write's event: this one disarmed
        assert quiet.stale_hot_paths() == [root / "MEMORY.md"]  # the stats, watches set again
    finally:
        go_on.set()
        thread.join(10)
    assert found == [stats.stale_hot_paths(held=False)] == [[root / "MEMORY.md"]]


def kernel_watches() -> set[int]:
    """The watch descriptors the daemon's inotify instance holds (proc(5): fdinfo, in hex)."""
    with open(f"/proc/self/fdinfo/{EVENTS._fd}") as f:
        return {int(line.split()[1][3:], 16) for line in f if line.startswith("inotify wd:")}


def test_watches_set_before_one_that_is_refused_are_let_go(tmp_path: Path) -> None:
    """The folders are watched before a symlinked hot file refuses the quiet path: those
    watches are not left in the kernel, unknown (each counts against the user's limit,
    which the watcher needs too)."""
    root = workspace(tmp_path)
    target = tmp_path / "shared.md"
    target.write_text("# Shared\n")
    (root / "MEMORY.md").unlink()
    (root / "MEMORY.md").symlink_to(target)
    quiet, _ = pair(root)
    assert not armed(quiet)
    assert kernel_watches() <= set(EVENTS._owners)
    del quiet
    gc.collect()
    other, _ = pair(workspace(tmp_path / "other"))
    assert armed(other)  # the watches of the workspace gone are let go
    assert kernel_watches() <= set(EVENTS._owners)


def test_watches_set_for_the_day_before_while_the_day_changes_are_not_trusted(
    tmp_path: Path,
) -> None:
    """One check began setting the watches with the day before's files (today's log not
    among them); meanwhile another check, on another thread, saw the new day. The first
    must not then stand for the stats: today's log written after has no watch of its own
    (its folder's event for it does not count)."""
    root = workspace(tmp_path)
    quiet, stats = pair(root)
    assert armed(quiet)
    assert quiet.stale_hot_paths() == []  # answered by the watches
    for fresh in (quiet, stats):  # a row committed: the next check sets the watches again
        fresh.committed("MEMORY.md", row("MEMORY.md", root / "MEMORY.md"), targeted=False)
    yesterday = dt.date.today() - dt.timedelta(days=1)
    quiet._hot = quiet._hot_for(yesterday)  # as read just before midnight
    at_arm, go_on = threading.Event(), threading.Event()
    arm = FileEvents.arm.__code__

    def held_at_the_arm(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is arm:
            at_arm.set()
            go_on.wait(10)

    def first() -> None:
        sys.setprofile(held_at_the_arm)
        try:
            quiet.stale_hot_paths()
        finally:
            sys.setprofile(None)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert at_arm.wait(10)  # the first check sets the day before's watches
        quiet._hot_day = yesterday  # ... and the other sees the new day
        assert quiet.stale_hot_paths() == []
    finally:
        go_on.set()
        thread.join(10)
    append(root / today_rel(), "- after midnight\n")
    assert quiet.stale_hot_paths() == stats.stale_hot_paths(held=False) == [root / today_rel()]


def test_watches_whose_descriptor_went_bad_leave_the_stats_to_answer(tmp_path: Path) -> None:
    """A poll or a read of the inotify fd that fails (here the fd made /dev/null: reading
    it ends the stream) disarms every workspace and sets no watch again: the stats answer,
    no search fails."""
    root = workspace(tmp_path)
    events = FileEvents()  # not the daemon's: this one is spoiled
    w = file_events.Watched()
    assert events.arm(w, [str(root)], [str(root / "MEMORY.md")], [])
    w.gen = 7
    assert events.quiet(w, 7)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, events._fd)  # polls as readable, reads as the end of the stream
        assert not events.quiet(w, 7) and not w.armed
        assert not events.arm(w, [str(root)], [str(root / "MEMORY.md")], [])
    finally:
        os.close(null)
        os.close(events._fd)
        os.close(events._mounts)
