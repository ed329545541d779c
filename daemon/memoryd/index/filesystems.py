"""Which file system holds a workspace's files, and whether it is local.

Read-your-writes stats a few files before each search (freshness.py). On a local file
system a stat takes about a microsecond, and the compiled stats keep the interpreter lock
through them (issue 38's tail). On a network or user-space file system (NFS, SMB/CIFS,
sshfs and every other FUSE mount, Ceph, 9p...) one stat can wait seconds or minutes for a
server that went away; holding the lock there would stop every thread of the daemon (every
other agent's searches, the watcher, the writers), so there the stats run on a thread of
their own, through os.stat, which gives the lock up. Only the types named in ``LOCAL`` count
as local: a type not known here, a path statfs cannot reach, a platform without statfs all
take the safe way (a thread hop, ~0.1 ms more a search).

``fs_type`` is the compiled ``statfs`` (f_type on Linux, f_fstypename on macOS and FreeBSD;
it gives the lock up: statfs waits as a stat would). Its Python version, ``py_fs_type``,
reads the mount table (/proc/self/mountinfo) on Linux and knows nothing elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

try:  # _compiled_stats.c: statfs; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover (no compiler where it was installed)
    compiled = None  # type: ignore[assignment]

FsType = Callable[[str], int | str | None]

# Linux statfs f_type (linux/magic.h, statfs(2)) -> the name used here
LINUX_TYPES: dict[int, str] = {
    0xEF53: "ext4",  # ext2, ext3 and ext4 alike
    0x58465342: "xfs",
    0x9123683E: "btrfs",
    0x01021994: "tmpfs",  # devtmpfs too
    0x858458F6: "ramfs",
    0x794C7630: "overlay",
    0xF2F52010: "f2fs",
    0x2FC12FC1: "zfs",
    0xCA451A4E: "bcachefs",
    0x52654973: "reiserfs",
    0x3153464A: "jfs",
    0x3434: "nilfs",
    0x4D44: "vfat",
    0x2011BAB0: "exfat",
    0x5346544E: "ntfs",
    0x482B: "hfsplus",
    0x4244: "hfs",
    0xF15F: "ecryptfs",
    0x73717368: "squashfs",
    0xE0F5E1E2: "erofs",
    0x9660: "iso9660",
    0x15013346: "udf",
    0x6969: "nfs",
    0x517B: "smb",
    0xFF534D42: "smb",  # cifs
    0xFE534D42: "smb",  # smb2 and later
    0x65735546: "fuse",  # sshfs, rclone, s3fs, gocryptfs, ntfs-3g, virtiofs...
    0x00C36400: "ceph",
    0x01021997: "9p",  # WSL's Windows drives, VM shares
    0x5346414F: "afs",
    0x6B414653: "afs",
    0x73757245: "coda",
    0x564C: "ncp",
    0x7461636F: "ocfs2",
    0x01161970: "gfs2",
    0x0BD00BD0: "lustre",
    0x0187: "autofs",
    0x9FA0: "proc",
    0x62656572: "sysfs",
    0x27E0EB: "cgroup",
    0x63677270: "cgroup2",
    0x1CD1: "devpts",
}

# The same file systems as the mount table (Linux) or f_fstypename (macOS, FreeBSD) name them
ALIASES: dict[str, str] = {
    "ext2": "ext4",
    "ext3": "ext4",
    "devtmpfs": "tmpfs",
    "nilfs2": "nilfs",
    "msdos": "vfat",
    "msdosfs": "vfat",
    "ntfs3": "ntfs",
    "cd9660": "iso9660",
    "nfs4": "nfs",
    "cifs": "smb",
    "smb3": "smb",
    "smb2": "smb",
    "smbfs": "smb",
    "fuseblk": "fuse",
    "macfuse": "fuse",
    "osxfuse": "fuse",
    "fusefs": "fuse",
}

# File systems on a disk of this machine (or in its memory): a stat never waits for a server
LOCAL = frozenset(
    {
        "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "f2fs", "zfs", "bcachefs",
        "reiserfs", "jfs", "nilfs", "vfat", "exfat", "ntfs", "hfsplus", "hfs", "ecryptfs",
        "squashfs", "erofs", "iso9660", "udf",
        "apfs", "ufs",  # macOS, FreeBSD
    }
)  # fmt: skip


def py_fs_type(path: str) -> int | str | None:
    """``fs_type``'s Python version: on Linux the type the mount table gives the mount
    holding ``path`` (links followed: "ext4", "nfs4", "fuse.sshfs"...), None where statfs
    would fail or elsewhere. The mount listed last wins at one mount point (the one on
    top); a mount hidden by a later one over a folder above it is not told apart."""
    if not isinstance(path, str):
        raise TypeError(f"fs_type: path must be str, not {type(path).__name__}")
    try:
        os.stat(path)  # statfs fails where stat does, and follows links as it does
        real = os.path.realpath(path)
        with open("/proc/self/mountinfo", "rb") as f:
            table = f.read()
    except OSError:
        return None
    target = os.fsencode(real)
    best, kind = -1, b""
    for line in table.splitlines():
        fields = line.split(b" ")
        if b"-" not in fields[6:]:  # pragma: no cover (a line the kernel never writes)
            continue
        point = _unescape(fields[4])
        inside = target == point or target.startswith(point.rstrip(b"/") + b"/")
        if inside and len(point) >= best:
            best, kind = len(point), fields[fields.index(b"-", 6) + 1]
    return os.fsdecode(kind) if best >= 0 else None


def _unescape(field: bytes) -> bytes:
    """A mount point as the kernel writes it: space, tab, newline, backslash as \\ooo."""
    if b"\\" not in field:
        return field
    out, i = bytearray(), 0
    while i < len(field):
        if field[i : i + 1] == b"\\" and field[i + 1 : i + 4].isdigit():
            out.append(int(field[i + 1 : i + 4], 8))
            i += 4
        else:
            out += field[i : i + 1]
            i += 1
    return bytes(out)


fs_type: FsType = py_fs_type if compiled is None else compiled.fs_type


def type_name(kind: int | str | None) -> str | None:
    """The name of what ``fs_type`` gave: Linux's number through ``LINUX_TYPES`` (one not
    known: "0x..."), a name through ``ALIASES`` ("fuse.sshfs": "fuse"); None stays None."""
    if kind is None:
        return None
    if isinstance(kind, int):
        return LINUX_TYPES.get(kind, f"{kind:#x}")
    if kind.startswith("fuse."):
        return "fuse"
    return ALIASES.get(kind, kind)


def is_local(kind: int | str | None) -> bool:
    """Whether a stat there never waits for a server: only the types in ``LOCAL``."""
    return type_name(kind) in LOCAL


def name_at(
    path: str, fs_type: FsType = fs_type, seen: dict[str, str | None] | None = None
) -> str | None:
    """The type's name of the file system a stat of ``path`` goes to: the path's own (links
    followed); for a path not there (today's log before its first line), that of the
    nearest folder above it that is (where the stat's lookup ends). None: none reached.
    ``seen``: folders' names already found (one look at many paths). Blocks as long as a
    stat of the path: never on the event loop."""
    kind = fs_type(path)
    if kind is not None:
        return type_name(kind)
    if os.path.islink(path):  # a dangling link: towards its target
        path = os.path.realpath(path)
    seen = {} if seen is None else seen
    walked = []
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            name = None
            break
        path = parent
        if path in seen:
            name = seen[path]
            break
        walked.append(path)
        if (kind := fs_type(path)) is not None:
            name = type_name(kind)
            break
    seen.update(dict.fromkeys(walked, name))
    return name


def first_not_local(
    paths: Iterable[str], fs_type: FsType = fs_type
) -> tuple[str, str | None] | None:
    """The first of ``paths`` not on a local file system, with its type's name (None: not
    known), or None when all are local."""
    seen: dict[str, str | None] = {}
    for path in paths:
        name = name_at(path, fs_type, seen)
        if name not in LOCAL:
            return path, name
    return None
