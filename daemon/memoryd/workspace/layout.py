"""Which files of a workspace are memory, how they are classified, and which may be read.

Indexed: MEMORY.md (or memory.md), memory/**/*.md (hidden folders such as memory/.history
are backups, not memory), sessions/*.jsonl when that source is on, and configured extra
paths (markdown files or folders, workspace-relative). ``resolve_readable`` is the gate for
``get``: no ``..``, nothing outside the workspace, no symlink that leaves it.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memoryd.errors import ForbiddenPath, NotFound

MEMORY_FILES = ("MEMORY.md", "memory.md")
# ASCII digits only: \d also takes other scripts' digits, which int() reads but which sort
# differently as strings (SQL compares days as strings, the vector mirror as numbers).
DAY_RE = re.compile(r"^([0-9]{4}-[0-9]{2}-[0-9]{2})")
ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # .match: a prefix; .fullmatch: a whole day
SOURCE_MEMORY = "memory"
SOURCE_SESSIONS = "sessions"


@dataclass(frozen=True)
class IndexedFile:
    rel: str  # workspace-relative, POSIX separators
    path: Path  # absolute
    source: str


@dataclass(frozen=True)
class Layout:
    root: Path  # resolved
    sessions: bool = False
    extra_paths: tuple[str, ...] = ()

    def rel(self, path: Path) -> str | None:
        """Workspace-relative POSIX path of an absolute path, or None when outside."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return None

    def classify(self, rel: str) -> str | None:
        """The source a workspace-relative path belongs to, or None when it is not indexed."""
        parts = PurePosixPath(rel).parts
        if not parts or any(p.startswith(".") for p in parts) or ".." in parts:
            return None
        if rel in MEMORY_FILES:
            return SOURCE_MEMORY
        if parts[0] == "memory" and rel.endswith(".md"):
            return SOURCE_MEMORY
        if self.sessions and len(parts) == 2 and parts[0] == "sessions" and rel.endswith(".jsonl"):
            return SOURCE_SESSIONS
        for extra in self.extra_paths:
            extra = extra.strip("/")
            if rel.endswith(".md") and (rel == extra or rel.startswith(extra + "/")):
                return SOURCE_MEMORY
        return None

    def iter_files(self) -> Iterator[IndexedFile]:
        """Every indexed file that exists now, each once, in a stable order."""
        seen: set[str] = set()
        inodes: set[tuple[int, int]] = set()  # MEMORY.md and memory.md are one file on macOS
        for rel in self._candidates():
            if rel in seen:
                continue
            source = self.classify(rel)
            path = self.root / rel
            if source is None or not self._inside(path) or not path.is_file():
                continue
            st = path.stat()
            if (st.st_dev, st.st_ino) in inodes:
                continue
            seen.add(rel)
            inodes.add((st.st_dev, st.st_ino))
            yield IndexedFile(rel, path, source)

    def _candidates(self) -> Iterator[str]:
        yield from MEMORY_FILES
        yield from self._walk("memory", ".md")
        if self.sessions:
            sessions = self.root / "sessions"
            if sessions.is_dir():
                yield from sorted(
                    f"sessions/{e.name}" for e in os.scandir(sessions) if e.name.endswith(".jsonl")
                )
        for extra in self.extra_paths:
            extra = extra.strip("/")
            if (self.root / extra).is_dir():
                yield from self._walk(extra, ".md")
            else:
                yield extra

    def watched_dirs(self) -> list[Path]:
        """The folders that hold indexed files below the root, to watch with their subfolders
        (the root itself is watched without them: an agent's workspace may hold a repository
        or a build tree, and every watched folder costs an inotify watch and its events)."""
        tops = ["memory", *(["sessions"] if self.sessions else [])]
        for extra in (e.strip("/") for e in self.extra_paths):
            if (self.root / extra).is_dir():
                tops.append(extra)
            elif "/" in extra:  # a file in a subfolder: its folder
                tops.append(extra.rsplit("/", 1)[0])
        out: list[Path] = []
        for rel in dict.fromkeys(tops):
            path = self.root / rel
            if path.is_dir() and self._inside(path):
                out.append(path)
        return out

    def links_outside(self) -> dict[str, str]:
        """The indexed places (MEMORY.md, memory/, sessions/, extra paths) that are links
        leaving the workspace, with why they are not indexed: said in status, not silent."""
        tops = [*MEMORY_FILES, "memory", *(["sessions"] if self.sessions else [])]
        out: dict[str, str] = {}
        for rel in [*tops, *(e.strip("/") for e in self.extra_paths)]:
            path = self.root / rel
            if path.is_symlink() and not self._inside(path):
                target = os.path.realpath(path)
                out[rel] = f"a link to {target}, outside the workspace: not indexed"
        return out

    def _walk(self, top: str, suffix: str) -> Iterator[str]:
        base = self.root / top
        if not base.is_dir() or not self._inside(base):
            return
        for dirpath, dirnames, filenames in os.walk(base):  # does not follow symlinked dirs
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel_dir = Path(dirpath).relative_to(self.root).as_posix()
            for name in sorted(filenames):
                if name.endswith(suffix) and not name.startswith("."):
                    yield f"{rel_dir}/{name}"

    def _inside(self, path: Path) -> bool:
        """True when the path's real location is inside the workspace (symlinks resolved)."""
        try:
            path.resolve().relative_to(self.root)
        except (ValueError, OSError):
            return False
        return True

    def resolve_readable(self, requested: str) -> tuple[str, Path]:
        """The (rel, absolute) path ``get`` may read, or ForbiddenPath / NotFound."""
        if not requested or "\x00" in requested:
            raise ForbiddenPath(f"invalid path {requested!r}")
        candidate = Path(requested)
        if candidate.is_absolute():
            plain = Path(os.path.normpath(candidate))
            rel = self.rel(plain)
            if rel is None:  # the workspace named through a link (macOS: /tmp is /private/tmp)
                with contextlib.suppress(OSError):
                    rel = self.rel(plain.parent.resolve() / plain.name)
            if rel is None:
                raise ForbiddenPath(f"{requested} is outside the workspace {self.root}")
        else:
            rel = PurePosixPath(requested.replace("\\", "/")).as_posix()
        if ".." in PurePosixPath(rel).parts:
            raise ForbiddenPath(f"{requested}: '..' is not allowed")
        if not self._readable(rel):
            raise ForbiddenPath(
                f"{requested}: only MEMORY.md, memory/** and configured extra paths can be read"
            )
        path = self.root / rel
        if not path.exists():
            raise NotFound(f"{rel} does not exist in {self.root}")
        real = path.resolve()
        real_rel = self.rel(real)
        if real_rel is None or not self._readable(real_rel):
            raise ForbiddenPath(f"{requested} is a link that leaves the readable memory files")
        if not real.is_file():
            raise NotFound(f"{rel} is not a file")
        return rel, real

    def _readable(self, rel: str) -> bool:
        parts = PurePosixPath(rel).parts
        if not parts:
            return False
        if rel in MEMORY_FILES or parts[0] == "memory":
            return True
        if self.sessions and parts[0] == "sessions" and rel.endswith(".jsonl"):
            return True
        return any(
            rel == e.strip("/") or rel.startswith(e.strip("/") + "/") for e in self.extra_paths
        )


def day_of(rel: str) -> str:
    """YYYY-MM-DD for daily files (memory/2024-05-01.md, memory/archive/2024/2024-05-01.md)."""
    m = DAY_RE.match(PurePosixPath(rel).name)
    return m.group(1) if m else ""
