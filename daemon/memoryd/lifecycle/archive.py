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

import gzip
import hashlib
import io
import json
import os
import stat
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Final

from memoryd.errors import InvalidParams, TooLarge
from memoryd.files.beneath import open_beneath
from memoryd.files.fsutil import atomic_write
from memoryd.files.layout import MEMORY_DIR, MEMORY_FILES, NOTE_SUFFIX, Layout, day_of
from memoryd.files.provenance import LEDGER_REL

__all__ = [
    "FORMAT",
    "MAX_IMPORT_BYTES",
    "TOP_FILES",
    "Archive",
    "pack",
    "pack_members",
    "read_archive",
    "summary",
    "write_archive",
]

FORMAT: Final = "memoryd-export"
VERSION: Final = 1
MANIFEST: Final = "manifest.json"
MAX_IMPORT_BYTES: Final = 256 << 20  # packed, and again unpacked: a stated limit
MAX_MEMBERS: Final = 100_000
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
    ):
        raise InvalidParams(
            f"the archive's member {name[:200]!r} would land outside the workspace: "
            "nothing imported",
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


def write_archive(root: Path, name: str, out: Path, now: float | None = None) -> dict[str, Any]:
    """Export workspace ``root`` to ``out`` (a .tar.gz, replaced atomically)."""
    packed, held = pack(root, name, now)
    atomic_write(out, packed, mode=0o600)  # memory is private, whatever the umask
    return {"path": str(out), **held}


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
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidParams(f"{path} is not a regular file: nothing imported")
        if st.st_size > MAX_IMPORT_BYTES:
            raise TooLarge(
                f"{path} is {st.st_size} bytes, over the import limit ({MAX_IMPORT_BYTES}): "
                "nothing imported",
                {"max_bytes": MAX_IMPORT_BYTES},
            )
        return _members(path, handle)


def _members(path: Path, handle: BinaryIO) -> Archive:
    members: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=handle, mode="r:*") as tar:
            for count, info in enumerate(tar, 1):
                if count > MAX_MEMBERS:
                    raise TooLarge(f"more than {MAX_MEMBERS} members: nothing imported")
                _check_name(info.name)
                if info.isdir():
                    continue
                if not info.isreg():
                    raise InvalidParams(
                        f"the archive's member {info.name!r} is a link or a special "
                        "file, not a regular file: nothing imported",
                        {"member": info.name},
                    )
                total += info.size
                if total > MAX_IMPORT_BYTES:
                    raise TooLarge(
                        f"the archive unpacks to more than {MAX_IMPORT_BYTES} bytes: "
                        "nothing imported",
                        {"max_bytes": MAX_IMPORT_BYTES},
                    )
                if info.name != MANIFEST and not allowed_member(info.name):
                    raise InvalidParams(
                        f"the archive's member {info.name!r} is not a memory file: "
                        "nothing imported",
                        {"member": info.name},
                    )
                member = tar.extractfile(info)
                assert member is not None  # a regular file
                members[info.name] = member.read()
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
        raise InvalidParams(
            f"{path} is not a memoryd export (.tar.gz): {exc}", {"param": "path"}
        ) from None
    return _checked(path, members)


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
