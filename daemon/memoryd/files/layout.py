"""The workspace file model: which files are memory, where each kind lives, which may be read.

A workspace holds MEMORY.md (or memory.md), daily files ``memory/YYYY-MM-DD.md`` (and any
other ``memory/**/*.md``; hidden folders such as ``memory/.history`` are backups, not
memory), transcripts ``sessions/<id>.jsonl`` (indexed when that source is on), and the
configured extra paths (markdown files or folders, workspace-relative). Every module that
names one of these places takes the name from here.

One rule decides both what is indexed and what ``get`` may read: a file is memory by its
own name, and what it really is (links resolved) must be readable memory too. A link in
``memory/`` to ``../.env`` is neither indexed nor read. Files are opened through
``beneath.open_beneath``, never by a path checked beforehand.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from memoryd.errors import ForbiddenPath, NotFound
from memoryd.files.beneath import Opened, open_beneath
from memoryd.records import Record
from memoryd_client.memory_files import CURATED_FILES as CURATED_FILES
from memoryd_client.memory_files import MEMORY_DIR as MEMORY_DIR
from memoryd_client.memory_files import MEMORY_FILES as MEMORY_FILES
from memoryd_client.memory_files import NOTE_SUFFIX as NOTE_SUFFIX
from memoryd_client.memory_files import USER_FILE as USER_FILE
from memoryd_client.memory_files import is_memory_note
from memoryd_client.search_terms import SOURCE_MEMORY, SOURCE_SESSIONS

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

TIER_CURATED, TIER_EPISODIC, TIER_SESSIONS = "curated", "episodic", "sessions"
SESSIONS_DIR = "sessions"  # transcripts
OPENCLAW_SESSIONS_DIR = "openclaw"  # sessions/openclaw/<agent>/<id>.jsonl: OpenClaw's stores
ARCHIVE_DIR = "archive"  # memory/archive/YYYY/ (old daily files), sessions/archive/YYYY-MM/
HISTORY_DIR = f"{MEMORY_DIR}/.history"  # MEMORY.md's previous versions (hidden: not memory)
CHANGES_DIR = f"{HISTORY_DIR}/changes"  # forgets and imports under way or kept (journal)
TRANSCRIPT_SUFFIX = ".jsonl"
# ASCII digits only: \d also takes other scripts' digits, which int() reads but which sort
# differently as strings (SQL compares days as strings, the vector mirror as numbers).
DAY_RE = re.compile(r"^([0-9]{4}-[0-9]{2}-[0-9]{2})")
ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # .match: a prefix; .fullmatch: a whole day


def daily_rel(day: dt.date) -> str:
    """The daily file of ``day``, workspace-relative."""
    return f"{MEMORY_DIR}/{day.isoformat()}{NOTE_SUFFIX}"


def daily_path(root: Path, day: dt.date) -> Path:
    return root / daily_rel(day)


def archived_daily_dir(root: Path, year: int) -> Path:
    """Where retention moves old daily files of ``year`` (still memory, still indexed)."""
    return root / MEMORY_DIR / ARCHIVE_DIR / f"{year:04d}"


def transcripts_dir(root: Path) -> Path:
    return root / SESSIONS_DIR


def transcript_dirs(root: Path) -> list[Path]:
    """The folders whose ``*.jsonl`` are the workspace's transcripts: ``sessions/`` and
    OpenClaw's copies, ``sessions/openclaw/<agent>/`` (real folders only, never links)."""
    top = transcripts_dir(root)
    out = [top]
    copies = top / OPENCLAW_SESSIONS_DIR
    if copies.is_dir() and not copies.is_symlink():
        out += sorted(Path(e.path) for e in os.scandir(copies) if e.is_dir(follow_symlinks=False))
    return out


def transcripts_in(root: Path) -> int:
    """How many transcripts the workspace holds (``*.jsonl`` in ``transcript_dirs``): what
    ``index.sessions = false`` leaves out of the index, for status to say."""
    count = 0
    for folder in transcript_dirs(root):
        try:
            entries = list(os.scandir(folder))
        except OSError:  # no sessions/ (most workspaces), or unreadable: nothing to say
            continue
        count += sum(
            1
            for e in entries
            if e.name.endswith(TRANSCRIPT_SUFFIX) and e.is_file(follow_symlinks=False)
        )
    return count


def transcript_archive_dir(root: Path, folder: Path, month: str) -> Path:
    """Where retention keeps old transcripts of ``folder`` (one of ``transcript_dirs``):
    ``sessions/archive/YYYY-MM/``, OpenClaw's copies under ``openclaw/<agent>/`` there."""
    top = transcripts_dir(root)
    return top / ARCHIVE_DIR / month / folder.relative_to(top)


def display_name(rel: str) -> str:
    """``rel`` as it can be stored and sent: a name that is not valid UTF-8 (its bytes
    decoded with surrogate escapes) shows those bytes as ``\\xNN``."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


@frozen_record(frozen=True, eq=False, repr=False)
class IndexedFile(Record):
    """A file the index holds (or lists as skipped), with its source tier."""

    rel: str  # workspace-relative, POSIX separators (display_name when name_error is set)
    path: Path  # absolute
    source: str
    name_error: str | None = None  # a name no index or client can hold: listed as skipped


@frozen_record(frozen=True, eq=False, repr=False)
class Layout(Record):
    """Which files of a workspace are memory: its folders, sessions and extra paths."""

    root: Path  # resolved
    sessions: bool = False
    extra_paths: tuple[str, ...] = ()

    def rel(self, path: Path) -> str | None:
        """Workspace-relative POSIX path of an absolute path, or None when outside."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return None

    def _extras(self) -> list[str]:
        return [e.strip("/") for e in self.extra_paths]

    def classify(self, rel: str) -> str | None:
        """The source a workspace-relative path belongs to, or None when it is not indexed."""
        parts = PurePosixPath(rel).parts
        if not parts or any(p.startswith(".") for p in parts) or ".." in parts:
            return None
        if is_memory_note(parts):  # MEMORY.md, USER.md, memory/**/*.md
            return SOURCE_MEMORY
        # sessions/<id>.jsonl, and OpenClaw's sessions copied from its stores:
        # sessions/openclaw/<agent>/<id>.jsonl (files/openclaw_mirror.py)
        if (
            self.sessions
            and parts[0] == SESSIONS_DIR
            and rel.endswith(TRANSCRIPT_SUFFIX)
            and (len(parts) == 2 or (len(parts) == 4 and parts[1] == OPENCLAW_SESSIONS_DIR))
        ):
            return SOURCE_SESSIONS
        for extra in self._extras():
            if rel.endswith(NOTE_SUFFIX) and (rel == extra or rel.startswith(extra + "/")):
                return SOURCE_MEMORY
        return None

    def readable(self, rel: str) -> bool:
        """Whether ``get`` may read ``rel`` (and a link may lead there to be indexed): exactly
        what is indexed by name (``classify``), so a ``memory/qmd/current.json`` or a backup
        in ``memory/.history`` is neither."""
        return self.classify(rel) is not None

    def indexed(self, rel: str) -> IndexedFile | None:
        """The indexed file at ``rel`` if there is one now: memory by its name, and by what
        it really is (a link to a non-memory file of the workspace is not)."""
        source = self.classify(rel)
        if source is None:
            return None
        path = self.root / rel
        try:
            if not path.is_file():
                return None
            real = self.rel(path.resolve())
        except (OSError, RuntimeError):  # a link loop
            return None
        if real is None or not self.readable(real):
            return None
        return self._file(rel, path, source)

    @staticmethod
    def _file(rel: str, path: Path, source: str) -> IndexedFile:
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            return IndexedFile(
                display_name(rel),
                path,
                source,
                "the file name is not valid UTF-8: rename it to index it",
            )
        return IndexedFile(rel, path, source)

    def iter_files(self) -> Iterator[IndexedFile]:
        """Every indexed file that exists now, each once, in a stable order."""
        seen: set[str] = set()
        inodes: set[tuple[int, int]] = set()  # MEMORY.md and memory.md are one file on macOS
        for rel, f, st in self._found():
            if rel in seen or (st.st_dev, st.st_ino) in inodes:
                continue
            seen.add(rel)
            inodes.add((st.st_dev, st.st_ino))
            yield f

    def _found(self) -> Iterator[tuple[str, IndexedFile, os.stat_result]]:
        """Each candidate that is an indexed file now, with its stat. A file ``_walk`` found
        with no link between it and the root is its own real path: one lstat stands for
        ``indexed``'s stat, realpath's lstat of every folder up to / and a stat for its inode
        (a restart's scan of 27k files spent most of its time on those, holding the GIL
        searches wait for)."""
        for rel, entry in self._candidates():
            if entry is not None:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:  # gone since its folder was read
                    continue
                if not stat.S_ISLNK(st.st_mode):  # a link: where it leads, the long way
                    source = self.classify(rel)
                    if source is not None and stat.S_ISREG(st.st_mode):
                        yield rel, self._file(rel, self.root / rel, source), st
                    continue
            f = self.indexed(rel)
            if f is None:
                continue
            try:
                st = f.path.stat()
            except OSError:
                continue
            yield rel, f, st

    def _candidates(self) -> Iterator[tuple[str, os.DirEntry[str] | None]]:
        """Workspace-relative paths that may be indexed, with the folder entry ``_walk`` found
        for those with no link between them and the root (None: ask ``indexed``)."""
        for rel in CURATED_FILES:
            yield rel, None
        yield from self._walk(MEMORY_DIR, NOTE_SUFFIX)
        if self.sessions:
            sessions = transcripts_dir(self.root)
            if sessions.is_dir():
                for rel in sorted(
                    f"{SESSIONS_DIR}/{e.name}"
                    for e in os.scandir(sessions)
                    if e.name.endswith(TRANSCRIPT_SUFFIX)
                ):
                    yield rel, None
                copies = sessions / OPENCLAW_SESSIONS_DIR
                if copies.is_dir() and not copies.is_symlink():
                    top = f"{SESSIONS_DIR}/{OPENCLAW_SESSIONS_DIR}"
                    yield from self._walk(top, TRANSCRIPT_SUFFIX)
        for extra in self._extras():
            if (self.root / extra).is_dir():
                yield from self._walk(extra, NOTE_SUFFIX)
            else:
                yield extra, None

    def watched_dirs(self) -> list[Path]:
        """The folders that hold indexed files below the root, to watch with their subfolders
        (the root itself is watched without them: an agent's workspace may hold a repository
        or a build tree, and every watched folder costs an inotify watch and its events)."""
        tops = [MEMORY_DIR, *([SESSIONS_DIR] if self.sessions else [])]
        for extra in self._extras():
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
        tops = [*CURATED_FILES, MEMORY_DIR, *([SESSIONS_DIR] if self.sessions else [])]
        out: dict[str, str] = {}
        for rel in [*tops, *self._extras()]:
            path = self.root / rel
            if path.is_symlink() and not self._inside(path):
                target = os.path.realpath(path)
                out[rel] = f"a link to {target}, outside the workspace: not indexed"
        return out

    def _walk(self, top: str, suffix: str) -> Iterator[tuple[str, os.DirEntry[str] | None]]:
        """The ``suffix`` files below ``top`` (not hidden, not in hidden folders), as os.walk
        finds them top-down, in name order, links to folders not followed; with each file's
        entry when no link leads from the root to its folder (``_found``)."""
        base = self.root / top
        if not base.is_dir() or not self._inside(base):
            return
        plain = os.path.realpath(base) == str(base)  # no link on the way (the root is resolved)
        yield from self._walk_dir(str(base), base.relative_to(self.root).as_posix(), suffix, plain)

    def _walk_dir(
        self, path: str, rel_dir: str, suffix: str, plain: bool
    ) -> Iterator[tuple[str, os.DirEntry[str] | None]]:
        """One folder of ``_walk``, then its subfolders: os.walk's steps without onerror (a
        folder that cannot be read, even partway, gives nothing), keeping the entries."""
        dirs: list[str] = []
        files: list[os.DirEntry[str]] = []
        try:
            with os.scandir(path) as it:
                for entry in it:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        dirs.append(entry.name)
                    else:
                        files.append(entry)
        except OSError:
            return
        for entry in sorted(files, key=lambda e: e.name):
            name = entry.name
            if name.endswith(suffix) and not name.startswith("."):
                yield f"{rel_dir}/{name}", entry if plain else None
        for name in sorted(d for d in dirs if not d.startswith(".")):
            sub = os.path.join(path, name)
            if not os.path.islink(sub):
                yield from self._walk_dir(sub, f"{rel_dir}/{name}", suffix, plain)

    def _inside(self, path: Path) -> bool:
        """True when the path's real location is inside the workspace (symlinks resolved)."""
        try:
            path.resolve().relative_to(self.root)
        except (ValueError, OSError, RuntimeError):
            return False
        return True

    def requested_rel(self, requested: str) -> str:
        """The workspace-relative path a ``get`` names (relative, or absolute inside the
        workspace), if ``get`` may read it by name; ForbiddenPath otherwise."""
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
        if not self.readable(rel):
            raise ForbiddenPath(
                f"{requested}: only MEMORY.md, memory/**/*.md, the configured extra paths' "
                "markdown and (when indexed) sessions/*.jsonl and sessions/openclaw/*/*.jsonl "
                "can be read"
            )
        return rel

    def open_file(self, path: Path) -> BinaryIO:
        """Memory file ``path`` (absolute, in the workspace) opened for reading beneath the
        root, by the reading rule (``open_memory``)."""
        rel = self.rel(path)
        if rel is None:
            raise ForbiddenPath(f"{path} is outside the workspace {self.root}")
        return os.fdopen(self.open_memory(rel).fd, "rb")

    def open_dir(self, rel: str, *, make: bool = False) -> int:
        """A descriptor of folder ``rel`` (``""``: the root) beneath the root, links inside
        the workspace followed; ``make`` creates it (and its parents) when missing."""
        if rel in ("", "."):
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        flags = os.O_RDONLY | os.O_DIRECTORY
        try:
            return open_beneath(self.root, rel, flags, make_dirs=make).fd
        except FileNotFoundError:
            if not make:
                raise
        parent, _, name = rel.rpartition("/")
        parent_fd = self.open_dir(parent, make=True)
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=parent_fd)
        finally:
            os.close(parent_fd)
        return open_beneath(self.root, rel, flags).fd

    def open_memory(
        self, rel: str, flags: int = os.O_RDONLY, mode: int = 0o666, *, make_dirs: bool = False
    ) -> Opened:
        """Open memory file ``rel`` beneath the root, links inside the workspace followed;
        ForbiddenPath when what it really is may not be read, NotFound when missing."""
        try:
            opened = open_beneath(self.root, rel, flags, mode, make_dirs=make_dirs)
        except FileNotFoundError:
            raise NotFound(f"{rel} does not exist in {self.root}") from None
        except (NotADirectoryError, IsADirectoryError):
            raise NotFound(f"{rel} is not a file") from None
        if not self.readable(opened.rel):
            os.close(opened.fd)
            raise ForbiddenPath(f"{rel} is a link that leaves the readable memory files")
        return opened


def tier_of(rel: str, source: str) -> str:
    """A file's tier: MEMORY.md and USER.md are curated, transcripts are sessions, every
    other memory file (daily notes, memory/**, extra paths) is episodic."""
    if source == SOURCE_SESSIONS:
        return TIER_SESSIONS
    return TIER_CURATED if rel in CURATED_FILES else TIER_EPISODIC


def day_of(rel: str) -> str:
    """YYYY-MM-DD for daily files (memory/2024-05-01.md, memory/archive/2024/2024-05-01.md)."""
    m = DAY_RE.match(PurePosixPath(rel).name)
    return m.group(1) if m else ""
