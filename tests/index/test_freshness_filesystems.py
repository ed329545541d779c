"""Where read-your-writes' stats may keep the interpreter lock (index/freshness.py): only
while every file they go to was found, lately, on a local file system. Looked at when the
index opens, after a whole scan, when a new file joins the hot ones and once a finding is a
minute old. The file system (statfs) and the clock are fakes at the boundary where the test
needs one: no network mount can be made here without root."""

from __future__ import annotations

import os
from pathlib import Path

from memoryd.files.layout import Layout
from memoryd.index import filesystems
from memoryd.index.freshness import RECHECK_SECONDS, Freshness, py_stat_many
from memoryd.index.store import FileRow

EXT4, NFS, FUSE = 0xEF53, 0x6969, 0x65735546


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeFileSystems:
    """statfs of a machine where ``mounts`` (absolute folder -> f_type) are mounted on a
    local disk; records what it was asked."""

    def __init__(self, mounts: dict[str, int]) -> None:
        self.mounts = mounts
        self.asked: list[str] = []
        self.during: dict[str, object] = {}  # path -> called while it is asked

    def __call__(self, path: str) -> int | None:
        self.asked.append(path)
        if (call := self.during.pop(path, None)) is not None:
            call()  # type: ignore[operator]
        if not os.path.lexists(path):
            return None
        best = max(
            (m for m in self.mounts if path.startswith(m.rstrip("/") + "/") or path == m), key=len
        )
        return self.mounts[best]


def row(rel: str, path: Path) -> FileRow:
    st = os.stat(path)
    return FileRow(rel, "memory", "h", st.st_mtime_ns, st.st_size, "", 0, 1, 0, 0, 0, None)


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n")
    return root


def test_a_workspace_on_a_local_disk_keeps_the_lock_for_a_minute_then_looks_again(
    tmp_path: Path,
) -> None:
    root, clock = workspace(tmp_path), Clock()
    fs = FakeFileSystems({"/": EXT4})
    fresh = Freshness(Layout(root), fs, clock)
    assert not fresh.may_hold_lock()  # nothing looked at yet: the safe way
    fresh.load([])
    assert fresh.may_hold_lock() and fresh.not_local is None
    assert str(root / "memory") in fs.asked and str(root / "MEMORY.md") in fs.asked
    clock.now += RECHECK_SECONDS - 1
    assert fresh.may_hold_lock()
    clock.now += 1
    assert not fresh.may_hold_lock()  # a mount may have been made under it since
    fs.asked.clear()
    fresh.stale_hot_paths_released()  # the search's check, off the loop, looks first
    assert fs.asked and fresh.may_hold_lock()
    fs.asked.clear()
    fresh.stale_hot_paths_released()  # not due: no second look
    assert fs.asked == []


def test_a_folder_mounted_from_a_server_makes_every_check_give_the_lock_up(
    tmp_path: Path,
) -> None:
    root, clock = workspace(tmp_path), Clock()
    fs = FakeFileSystems({"/": EXT4, str(root / "memory"): NFS})
    fresh = Freshness(Layout(root), fs, clock)
    fresh.load([])
    assert not fresh.may_hold_lock()
    assert fresh.not_local == (str(root / "memory"), "nfs")
    # unmounted: found local again at the next look that is due
    del fs.mounts[str(root / "memory")]
    fresh.stale_hot_paths_released()
    assert not fresh.may_hold_lock()  # not due yet
    clock.now += RECHECK_SECONDS
    fresh.stale_hot_paths_released()
    assert fresh.may_hold_lock() and fresh.not_local is None
    # and a mount made under it is found by the next whole scan's look
    fs.mounts[str(root)] = FUSE
    fresh.scanned()
    assert not fresh.may_hold_lock() and fresh.not_local == (os.path.join(root, ""), "fuse")


def test_a_file_system_statfs_cannot_name_is_not_taken_for_local(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    fresh = Freshness(Layout(root), lambda _path: None, Clock())
    fresh.load([])
    assert not fresh.may_hold_lock()
    assert fresh.not_local == (os.path.join(root, ""), None)  # the first looked at


def test_a_new_hot_file_elsewhere_is_found_at_once_even_during_a_look(tmp_path: Path) -> None:
    root, clock = workspace(tmp_path), Clock()
    (root / "memory" / "remote").mkdir()
    note = root / "memory" / "remote" / "note.md"
    note.write_text("- x\n")
    fs = FakeFileSystems({"/": EXT4, str(root / "memory" / "remote"): NFS})
    fresh = Freshness(Layout(root), fs, clock)
    fresh.load([])
    assert fresh.may_hold_lock()  # the hot files are local; note.md is not hot yet
    fresh.committed("memory/remote/note.md", row("memory/remote/note.md", note), False)
    assert fresh.may_hold_lock()  # a scan's commit: not hot
    fresh.committed("memory/remote/note.md", row("memory/remote/note.md", note), True)
    assert not fresh.may_hold_lock()  # the writer thread looked at it when it committed
    assert fresh.not_local == (str(note), "nfs")
    # A look begun before a new file elsewhere became hot must not call everything local:
    (root / "memory" / "other.md").write_text("x")
    clock.now += RECHECK_SECONDS
    fs.mounts[str(root / "memory" / "remote")] = EXT4  # ...remote/ unmounted
    fs.mounts[str(root / "memory" / "other.md")] = FUSE  # ...a file mounted on its own

    def commit_meanwhile() -> None:
        fresh.committed("memory/other.md", row("memory/other.md", root / "memory/other.md"), True)

    fs.during[str(root / "MEMORY.md")] = commit_meanwhile  # during the look's statfs of it
    fresh.stale_hot_paths_released()
    assert not fresh.may_hold_lock()
    assert fresh.not_local == (str(root / "memory" / "other.md"), "fuse")


def test_the_check_that_gives_the_lock_up_finds_what_the_held_one_finds(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    fresh = Freshness(Layout(root), FakeFileSystems({"/": NFS}), Clock())
    fresh.load([row("MEMORY.md", root / "MEMORY.md")])
    assert fresh.stale_hot_paths() == fresh.stale_hot_paths_released() == []
    (root / "MEMORY.md").write_text("# Memory\n\n- a write the watcher has not reported\n")
    assert fresh.stale_hot_paths() == fresh.stale_hot_paths_released() == [root / "MEMORY.md"]
    given: list[list[str]] = []

    def stats(paths: list[str]) -> list[tuple[int, int] | None]:  # os.stat, file by file
        given.append(list(paths))
        return py_stat_many(paths)

    fresh.stat_released = stats  # type: ignore[assignment]
    assert fresh.stale_hot_paths_released() == [root / "MEMORY.md"]
    assert str(root / "MEMORY.md") in given[0]
    assert fresh.stale_hot_paths() == [root / "MEMORY.md"] and len(given) == 1


def test_the_real_statfs_finds_this_machines_temporary_folder_as_the_mount_table_does(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    fresh = Freshness(Layout(root))
    fresh.load([])
    local = filesystems.is_local(filesystems.fs_type(str(root)))
    assert fresh.may_hold_lock() is local
    assert (fresh.not_local is None) is local


def test_the_watchers_filter_stats_no_folder_where_a_stat_may_hang(tmp_path: Path) -> None:
    # A folder event the filter cannot place is stat'ed (is it a folder?) on the event loop
    # only on a local file system; elsewhere it goes to the writer, which looks there.
    root = workspace(tmp_path)
    gone = root / "memory" / "a-folder-that-went"
    local = Freshness(Layout(root), FakeFileSystems({"/": EXT4}), Clock())
    local.load([])
    remote = Freshness(Layout(root), FakeFileSystems({"/": NFS}), Clock())
    remote.load([])
    assert not local.is_indexed_path(gone)  # stat'ed: not a folder (not there)
    assert remote.is_indexed_path(gone)  # not stat'ed: the writer will see
    (root / "memory" / "topics").mkdir()
    assert local.is_indexed_path(root / "memory" / "topics")
    assert remote.is_indexed_path(root / "memory" / "topics")
    assert not remote.is_indexed_path(root / "notes.txt")  # placed without a stat: not ours
