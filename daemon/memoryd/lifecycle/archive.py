"""A workspace's memory as one file: ``export`` writes it, ``import`` reads it back.

The archive is a gzipped tar of the memory files (MEMORY.md, USER.md, memory/**/*.md), the
provenance ledger (memory/.provenance.jsonl) and ``manifest.json``: the format, the
workspace it came from, and each member's sha256 and size. Transcripts, the index and the
hidden history are not in it: the markdown is the truth, the rest is rebuilt.

Reading is strict, before anything is written: an archive bigger than ``MAX_IMPORT_BYTES``
(packed or unpacked), a member that is not a regular file (a link, a device, a hard link),
a name that is absolute, has ``..``, a backslash or a hidden part, or is not a memory file,
or a member whose hash is not the manifest's, refuses the whole import, naming the member.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import json
import os
import secrets
import stat
import tarfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Final

from memoryd.errors import InvalidParams, TooLarge
from memoryd.files.beneath import open_beneath
from memoryd.files.layout import MEMORY_DIR, MEMORY_FILES, NOTE_SUFFIX, Layout, day_of
from memoryd.files.provenance import LEDGER_REL
from memoryd.lifecycle.tar_limits import Bounded, HeaderBound, is_gzip

__all__ = [
    "FORMAT",
    "MAX_IMPORT_BYTES",
    "TOP_FILES",
    "Archive",
    "pack",
    "pack_members",
    "place",
    "read_archive",
    "summary",
    "write_archive",
]

FORMAT: Final = "memoryd-export"
VERSION: Final = 1
MANIFEST: Final = "manifest.json"
MAX_IMPORT_BYTES: Final = 256 << 20  # packed, and again unpacked: a stated limit
MAX_MEMBERS: Final = 100_000
MAX_NAME_BYTES: Final = 1024  # a member's path (each part at most 255: a file name)
TOP_FILES: Final = (*MEMORY_FILES, "USER.md")


def allowed_member(name: str) -> bool:
    """Whether ``name`` may land in a workspace: a memory file or the ledger, nothing else."""
    if name == LEDGER_REL or name in TOP_FILES:
        return True
    path = PurePosixPath(name)
    parts = path.parts
    return (
        len(parts) >= 2
        and parts[0] == MEMORY_DIR
        and name.endswith(NOTE_SUFFIX)
        and not any(p.startswith(".") for p in parts)
    )


def _check_name(name: str) -> None:
    if (
        not name
        or name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or any(p in ("..", "") for p in name.split("/"))
        or len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES
        or any(len(p.encode("utf-8", "surrogateescape")) > 255 for p in name.split("/"))
    ):
        raise InvalidParams(
            f"the archive's member {name[:200]!r} would land outside the workspace (or its "
            "name is too long for a file: a part over 255 bytes, the whole over "
            f"{MAX_NAME_BYTES}): nothing imported",
            {"member": name[:200]},
        )


def _exportable(layout: Layout) -> list[str]:
    rels = [f.rel for f in layout.iter_files() if f.source == "memory" and allowed_member(f.rel)]
    # USER.md and the ledger, whether or not this version indexes them.
    rels += [rel for rel in ("USER.md", LEDGER_REL) if (layout.root / rel).is_file()]
    return sorted(set(rels))


def _read(layout: Layout, rel: str) -> bytes:
    opened = open_beneath(layout.root, rel, os.O_RDONLY | os.O_CLOEXEC)
    with os.fdopen(opened.fd, "rb") as f:
        return f.read()


def pack(root: Path, name: str, now: float | None = None) -> tuple[bytes, dict[str, Any]]:
    """Workspace ``root``'s memory as a .tar.gz, and what it holds (``summary``)."""
    layout = Layout(root)
    members: dict[str, bytes] = {}
    for rel in _exportable(layout):
        try:
            members[rel] = _read(layout, rel)
        except OSError:
            continue  # gone meanwhile, or a link leading out: not exported
    return pack_members(members, name, time.time() if now is None else now)


def pack_members(
    members: dict[str, bytes], name: str, stamp: float
) -> tuple[bytes, dict[str, Any]]:
    """``members`` (workspace-relative path -> bytes) as an export of workspace ``name``
    made at ``stamp``: the .tar.gz and its summary (a purge repacks a kept export so)."""
    files: list[dict[str, Any]] = []
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel in sorted(members):
            data = members[rel]
            files.append(
                {"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            )
            _add(tar, rel, data, stamp)
        manifest = {
            "format": FORMAT,
            "v": VERSION,
            "workspace": name,
            "created_at": stamp,
            "files": files,
        }
        _add(tar, MANIFEST, json.dumps(manifest, indent=1).encode(), stamp)
    packed = gzip.compress(buf.getvalue(), mtime=int(stamp))
    return packed, summary(packed, files)


def summary(packed: bytes, files: list[dict[str, Any]]) -> dict[str, Any]:
    """What an export holds, as its answer says: the files, their sizes, the days of its
    daily notes, and the archive's own hash (to compare a copy with)."""
    days = sorted(d for d in (day_of(str(f["path"])) for f in files) if d)
    return {
        "files": len(files),
        "bytes": len(packed),
        "sha256": hashlib.sha256(packed).hexdigest(),
        "unpacked_bytes": sum(int(f["bytes"]) for f in files),
        "daily_notes": len(days),
        "first_day": days[0] if days else None,
        "last_day": days[-1] if days else None,
        "curated": sorted(str(f["path"]) for f in files if f["path"] in TOP_FILES),
        "ledger": any(f["path"] == LEDGER_REL for f in files),
    }


def write_archive(
    root: Path, name: str, out: Path, now: float | None = None, *, force: bool = False
) -> dict[str, Any]:
    """Export workspace ``root`` to ``out`` (a .tar.gz): see ``place``."""
    packed, held = pack(root, name, now)
    place(out, packed, force=force)
    return {"path": str(out), **held}


def place(out: Path, data: bytes, *, force: bool = False) -> None:
    """Write ``data`` (0600: memory is private) to a new file ``out``, through a temp file
    beside it. An existing ``out`` is refused unless ``force``, and even then anything but
    a regular file (a FIFO, a device, a folder, a link) is never replaced: whatever the
    path names, it does not become an archive by accident."""
    try:
        dir_fd = os.open(out.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise InvalidParams(
            f"{out.parent} is not a folder one can write to ({exc.strerror})", {"param": "path"}
        ) from None
    tmp = f".{out.name[:200]}.{secrets.token_hex(4)}.tmp"
    try:
        old = _existing(dir_fd, out, force)
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd
        )
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if old is None:
            _link_new(dir_fd, tmp, out)
        else:  # --force: still the regular file checked above, then replaced whole
            if _existing(dir_fd, out, force) != old:
                raise InvalidParams(f"{out} changed while the export was written: not replaced")
            os.replace(tmp, out.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        os.close(dir_fd)


def _existing(dir_fd: int, out: Path, force: bool) -> tuple[int, int] | None:
    """The identity of the file ``out`` names now (None: nothing), or InvalidParams."""
    try:
        st = os.stat(out.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise InvalidParams(
            f"{out} exists and is not a regular file ({_kind_of(st.st_mode)}): never replaced",
            {"param": "path"},
        )
    if not force:
        raise InvalidParams(
            f"{out} exists: nothing written (force, memctl export --force, replaces a file)",
            {"param": "path"},
        )
    return (st.st_dev, st.st_ino)


def _kind_of(mode: int) -> str:
    for test, kind in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a file"


def _link_new(dir_fd: int, tmp: str, out: Path) -> None:
    """Give the temp file the name ``out`` only if nothing took it meanwhile."""
    try:
        os.link(tmp, out.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise InvalidParams(f"{out} was created meanwhile: nothing written") from None
    except OSError as exc:  # no hard links here: reserve the name, then rename over it
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        try:
            os.close(os.open(out.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd))
        except FileExistsError:
            raise InvalidParams(f"{out} was created meanwhile: nothing written") from None
        os.replace(tmp, out.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _add(tar: tarfile.TarFile, name: str, data: bytes, stamp: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(stamp)
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))


@dataclass(frozen=True)
class Archive:
    workspace: str
    files: dict[str, bytes]  # memory files and the ledger, by workspace-relative path
    created_at: float = 0.0  # the manifest's


def read_archive(path: Path, dir_fd: int | None = None) -> Archive:
    """The archive at ``path`` (a name in folder ``dir_fd`` when given: not followed if a
    link), checked whole (see the module's rules). Only a regular file is read: a FIFO or
    a device named as the archive is refused, not waited on."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        if dir_fd is None:
            fd = os.open(path, flags)
        else:
            fd = os.open(path.name, flags | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        raise InvalidParams(f"cannot read {path}: {exc.strerror}", {"param": "path"}) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # checked before any read: a folder, a FIFO, a device
        os.close(fd)
        raise InvalidParams(f"{path} is not a regular file: nothing imported", {"param": "path"})
    with os.fdopen(fd, "rb") as handle:
        if st.st_size > MAX_IMPORT_BYTES:
            raise TooLarge(
                f"{path} is {st.st_size} bytes, over the import limit ({MAX_IMPORT_BYTES}): "
                "nothing imported",
                {"max_bytes": MAX_IMPORT_BYTES},
            )
        return _members(path, handle)


def _members(path: Path, handle: BinaryIO) -> Archive:
    """Read in a stream, every size bounded before it is held (tar_limits.py)."""
    members: dict[str, bytes] = {}
    gz = is_gzip(os.pread(handle.fileno(), 2, 0))
    # The members may unpack to MAX_IMPORT_BYTES; their headers and padding come on top.
    stream = Bounded(handle, MAX_IMPORT_BYTES + (MAX_MEMBERS + 2) * 2 * tarfile.BLOCKSIZE, gz)
    total = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|", tarinfo=HeaderBound) as tar:
            for count, info in enumerate(tar, 1):
                if count > MAX_MEMBERS:
                    raise TooLarge(f"more than {MAX_MEMBERS} members: nothing imported")
                _check_name(info.name)
                if info.isdir():
                    continue
                _check_member(info)
                total += info.size
                if total > MAX_IMPORT_BYTES:
                    raise TooLarge(
                        f"the archive unpacks to more than {MAX_IMPORT_BYTES} bytes: "
                        "nothing imported",
                        {"max_bytes": MAX_IMPORT_BYTES},
                    )
                member = tar.extractfile(info)
                assert member is not None  # a regular file
                members[info.name] = member.read()
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise InvalidParams(
            f"{path} is not a memoryd export (.tar.gz): {exc}", {"param": "path"}
        ) from None
    return _checked(path, members)


def _check_member(info: tarfile.TarInfo) -> None:
    if not info.isreg():
        raise InvalidParams(
            f"the archive's member {info.name!r} is a link or a special "
            "file, not a regular file: nothing imported",
            {"member": info.name},
        )
    if info.name != MANIFEST and not allowed_member(info.name):
        raise InvalidParams(
            f"the archive's member {info.name!r} is not a memory file: nothing imported",
            {"member": info.name},
        )


def _checked(path: Path, members: dict[str, bytes]) -> Archive:
    raw = members.pop(MANIFEST, None)
    try:
        manifest = json.loads(raw or b"")
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidParams(f"{path} has no memoryd manifest: nothing imported")
    listed = {
        str(f.get("path")): str(f.get("sha256"))
        for f in manifest.get("files", [])
        if isinstance(f, dict)
    }
    for name, data in members.items():
        if listed.get(name) != hashlib.sha256(data).hexdigest():
            raise InvalidParams(
                f"the archive's member {name!r} does not match its manifest hash: nothing imported",
                {"member": name},
            )
    missing = sorted(set(listed) - set(members))
    if missing:
        raise InvalidParams(f"the archive lacks {missing[0]!r} (in its manifest)")
    at = manifest.get("created_at")
    return Archive(
        str(manifest.get("workspace") or ""),
        members,
        float(at) if isinstance(at, int | float) else 0.0,
    )
