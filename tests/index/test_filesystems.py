"""Which file system holds a workspace (index/filesystems.py): the compiled statfs against
the mount table on this machine's own mounts, and the table of what counts as local (only
known local types: a network, FUSE or unknown type takes the safe way)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from memoryd.index import filesystems
from memoryd.index.filesystems import is_local, name_at, py_fs_type, type_name

# Mount points most Linux machines have (a container too); the ones this machine has are
# compared. Each is a different kind: a disk, tmpfs, kernel file systems.
COMMON_MOUNTS = ("/", "/proc", "/sys", "/dev", "/dev/shm", "/dev/pts", "/run", "/tmp")


def mount_points() -> list[str]:
    with open("/proc/self/mountinfo", "rb") as f:
        listed = {os.fsdecode(line.split(b" ")[4]) for line in f.read().splitlines()}
    return [p for p in COMMON_MOUNTS if p in listed]


@pytest.mark.parametrize(
    ("kind", "name", "local"),
    [
        (0xEF53, "ext4", True),
        (0x58465342, "xfs", True),
        (0x9123683E, "btrfs", True),
        (0x01021994, "tmpfs", True),
        (0x794C7630, "overlay", True),
        (0x2FC12FC1, "zfs", True),
        ("ext3", "ext4", True),
        ("devtmpfs", "tmpfs", True),
        ("apfs", "apfs", True),  # macOS
        ("msdos", "vfat", True),
        (0x6969, "nfs", False),
        ("nfs4", "nfs", False),
        (0xFF534D42, "smb", False),  # cifs
        (0xFE534D42, "smb", False),  # smb2 and later
        ("smbfs", "smb", False),  # macOS
        (0x65735546, "fuse", False),
        ("fuse.sshfs", "fuse", False),
        ("fuseblk", "fuse", False),
        ("macfuse", "fuse", False),
        (0x01021997, "9p", False),
        (0x00C36400, "ceph", False),
        (0x9FA0, "proc", False),  # not where notes are kept: not known as local
        (0x12345678, "0x12345678", False),  # a type not known: the safe way
        ("weirdfs", "weirdfs", False),
        (None, None, False),  # statfs could not tell
    ],
)
def test_only_known_local_file_systems_count_as_local(
    kind: int | str | None, name: str | None, local: bool
) -> None:
    assert type_name(kind) == name
    assert is_local(kind) is local


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the mount table is Linux's")
def test_the_compiled_statfs_names_this_machines_mounts_as_the_mount_table_does(
    tmp_path: Path,
) -> None:
    compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")
    assert filesystems.fs_type is compiled.fs_type
    points = [*mount_points(), str(tmp_path)]
    assert "/" in points and "/proc" in points
    for point in points:
        kind = compiled.fs_type(point)
        assert isinstance(kind, int), point
        assert type_name(kind) == type_name(py_fs_type(point)), point
    assert type_name(compiled.fs_type("/proc")) == "proc"
    assert type_name(py_fs_type("/proc/self/status")) == "proc"  # a file: its mount's


def test_a_path_not_there_is_named_by_the_folder_above_it(tmp_path: Path) -> None:
    here = name_at(str(tmp_path))
    assert here is not None
    assert filesystems.fs_type(str(tmp_path / "missing.md")) is None
    assert py_fs_type(str(tmp_path / "missing.md")) is None
    assert name_at(str(tmp_path / "memory" / "2024-05-01.md")) == here
    (tmp_path / "a.md").write_text("x")
    assert name_at(str(tmp_path / "a.md" / "under-a-file")) == here
    (tmp_path / "dangling.md").symlink_to(tmp_path / "gone" / "deeper" / "x.md")
    assert name_at(str(tmp_path / "dangling.md")) == here
    asked: list[str] = []

    def fake(path: str) -> int | None:  # a file system that knows only the workspace
        asked.append(path)
        return 0x6969 if path == str(tmp_path) else None

    assert name_at(str(tmp_path / "memory" / "x.md"), fake) == "nfs"
    assert asked == [str(tmp_path / "memory" / "x.md"), str(tmp_path / "memory"), str(tmp_path)]
    assert name_at("/nowhere/at/all", lambda _p: None) is None


def test_the_first_path_not_on_a_local_file_system_is_named() -> None:
    kinds = {"/ws": 0xEF53, "/ws/memory": 0x65735546, "/ws/sessions": 0x6969}
    assert filesystems.first_not_local(["/ws", "/ws/memory", "/ws/sessions"], kinds.get) == (
        "/ws/memory",
        "fuse",
    )
    assert filesystems.first_not_local(["/ws", "/ws"], kinds.get) is None


def test_a_path_that_is_not_a_str_or_holds_a_null_is_refused() -> None:
    compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")
    for fs_type in (compiled.fs_type, py_fs_type):
        with pytest.raises(TypeError):
            fs_type(b"/")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="embedded null byte"):
            fs_type("/tmp/a\0b")


def test_a_mount_point_written_with_escapes_is_read_back() -> None:
    # The kernel writes a space, a tab, a newline and a backslash in a mount point as \ooo.
    assert filesystems._unescape(b"/mnt/my\\040disk\\134x") == b"/mnt/my disk\\x"
    assert filesystems._unescape(b"/plain") == b"/plain"
