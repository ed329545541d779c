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
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

from memoryd.errors import InvalidParams, TooLarge
from memoryd.files.beneath import open_beneath
from memoryd.files.fsutil import atomic_write
from memoryd.files.layout import MEMORY_DIR, MEMORY_FILES, NOTE_SUFFIX, Layout
from memoryd.files.provenance import LEDGER_REL

__all__ = ["FORMAT", "MAX_IMPORT_BYTES", "Archive", "read_archive", "write_archive"]

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


def write_archive(root: Path, name: str, out: Path, now: float | None = None) -> dict[str, Any]:
    """Export workspace ``root`` to ``out`` (a .tar.gz, replaced atomically)."""
    layout = Layout(root)
    files: list[dict[str, Any]] = []
    buf = io.BytesIO()
    stamp = time.time() if now is None else now
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel in _exportable(layout):
            try:
                data = _read(layout, rel)
            except OSError:
                continue  # gone meanwhile, or a link leading out: not exported
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
    atomic_write(out, packed, mode=0o600)  # memory is private, whatever the umask
    return {"path": str(out), "files": len(files), "bytes": len(packed)}


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


def read_archive(path: Path) -> Archive:
    """The archive at ``path``, checked whole (see the module's rules)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InvalidParams(f"cannot read {path}: {exc.strerror}", {"param": "path"}) from None
    if size > MAX_IMPORT_BYTES:
        raise TooLarge(
            f"{path} is {size} bytes, over the import limit ({MAX_IMPORT_BYTES}): nothing imported",
            {"max_bytes": MAX_IMPORT_BYTES},
        )
    members: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(path, mode="r:*") as tar:
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
                handle = tar.extractfile(info)
                assert handle is not None  # a regular file
                members[info.name] = handle.read()
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
    return Archive(str(manifest.get("workspace") or ""), members)
