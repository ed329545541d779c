"""A whole scan's listing (Layout.iter_files) takes a file ``_walk`` found with no link on its
way from the root as its own real path (one lstat), and every other one the long way
(``indexed``: realpath, readable by what it really is): the same files, names, sources and
order as asking ``indexed`` of each file os.walk finds, whatever links the workspace holds."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.files.layout import CURATED_FILES, IndexedFile, Layout
from memoryd.index.sync_targets import sync_targets

Listed = list[tuple[str, str, str, str | None]]


def long_way(lay: Layout) -> Listed:
    """The listing as it was before: os.walk's names, each through ``indexed`` and a stat."""

    def walk(top: str, suffix: str) -> Iterator[str]:
        base = lay.root / top
        if not base.is_dir() or not lay._inside(base):
            return
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel_dir = Path(dirpath).relative_to(lay.root).as_posix()
            for name in sorted(filenames):
                if name.endswith(suffix) and not name.startswith("."):
                    yield f"{rel_dir}/{name}"

    def candidates() -> Iterator[str]:
        yield from CURATED_FILES
        yield from walk("memory", ".md")
        yield from sorted(
            f"sessions/{e.name}"
            for e in os.scandir(lay.root / "sessions")
            if e.name.endswith(".jsonl")
        )
        for extra in lay.extra_paths:
            if (lay.root / extra).is_dir():
                yield from walk(extra, ".md")
            else:
                yield extra

    seen: set[str] = set()
    inodes: set[tuple[int, int]] = set()
    out: Listed = []
    for rel in candidates():
        if rel in seen:
            continue
        f = lay.indexed(rel)
        if f is None:
            continue
        try:
            st = f.path.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in inodes:
            continue
        seen.add(rel)
        inodes.add((st.st_dev, st.st_ino))
        out.append(shown(f))
    return out


def shown(f: IndexedFile) -> tuple[str, str, str, str | None]:
    return (f.rel, str(f.path), f.source, f.name_error)


def make(root: Path, rel: str, text: str = "- a note\n") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def link(root: Path, rel: str, to: str | Path) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(to, root / rel)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    outside = tmp_path / "outside"
    make(outside, "far.md")
    make(root, "MEMORY.md")
    for rel in (
        "memory/2024-05-01.md",
        "memory/b/2024-05-02.md",
        "memory/b/c/deep.md",
        "memory/.hidden.md",
        "memory/.h/in-hidden.md",
        "memory/notes.txt",
        "other/x.md",
        "store/mem/kept.md",
        "docs/d.md",
        "docs/sub/e.md",
        "sessions/s1.jsonl",
    ):
        make(root, rel)
    os.link(root / "memory/2024-05-01.md", root / "memory/2024-05-01-hard.md")  # one inode
    link(root, "memory/to-deep.md", "b/c/deep.md")  # inside, readable: indexed
    link(root, "memory/to-other.md", "../other/x.md")  # inside, not memory: not
    link(root, "memory/to-outside.md", outside / "far.md")  # leaves the workspace: not
    link(root, "memory/broken.md", "nowhere.md")
    link(root, "memory/dir-link", "../other")  # a folder link: not walked
    link(root, "linked-notes", "store/mem")  # an extra path that is a folder link
    (root / "memory" / "a-folder.md").mkdir()  # a folder named like a note
    bad = os.fsencode(str(root / "memory")) + b"/\xffbad.md"
    with open(bad, "wb") as out:
        out.write(b"- not valid UTF-8 in its name\n")
    return root


def layouts(root: Path) -> list[Layout]:
    extras = ("docs", "linked-notes", "store/mem/kept.md", "memory/b")
    return [Layout(root), Layout(root, True, extras)]


def test_the_listing_is_the_long_way_s_on_links_hidden_files_and_odd_names(
    workspace: Path,
) -> None:
    for lay in layouts(workspace):
        got = [shown(f) for f in lay.iter_files()]
        assert got == long_way(lay)
        names = [g[0] for g in got]
        assert "memory/to-deep.md" in names and "memory/b/c/deep.md" not in names  # one inode
        assert "memory/2024-05-01-hard.md" in names and "memory/2024-05-01.md" not in names
        assert any(g[3] for g in got)  # the name that is not UTF-8


def test_a_memory_folder_that_is_a_link_inside_the_workspace_is_listed_the_long_way(
    workspace: Path,
) -> None:
    (workspace / "memory").rename(workspace / "store" / "memory")
    link(workspace, "memory", "store/memory")
    for lay in layouts(workspace):
        assert [shown(f) for f in lay.iter_files()] == long_way(lay)


def test_a_whole_scan_s_listing_steps_aside_between_two_files(workspace: Path) -> None:
    """sync_targets calls its ``between`` (the Syncer's: a search being answered goes first,
    the deferred copies load once asked) once per file listed."""
    calls: list[None] = []
    lay = layouts(workspace)[1]
    targets = sync_targets(lay, {}, None, lambda: calls.append(None))
    assert [rel for rel, _ in targets] == [rel for rel, *_ in long_way(lay)]
    assert len(calls) == len(targets)
