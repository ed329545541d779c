"""``get``: line ranges of memory files, and nothing outside them (a layout read: no index)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from engine_util import IndexFactory
from memoryd.errors import ForbiddenPath, InvalidParams, NotFound
from memoryd.files.layout import Layout
from memoryd.files.reader import LinesRead, read_lines


@dataclass
class Reader:
    """``get`` over one workspace, as the method calls it."""

    layout: Layout
    max_bytes: int = 16 << 20

    @property
    def root(self):  # type: ignore[no-untyped-def]
        return self.layout.root

    def get(self, path: str, from_line: int | None = None, lines: int | None = None) -> LinesRead:
        return read_lines(self.layout, path, from_line, lines, self.max_bytes)


@pytest.fixture
def ix(make_index: IndexFactory) -> Reader:
    make_index.write("MEMORY.md", "one\ntwo\nthree\nfour\n")
    make_index.write("memory/2024-05-01.md", "a\nb\n")
    make_index.write("secret.txt", "api key\n")
    make_index.write("sessions/s1.jsonl", '{"type": "session"}\n')
    make_index.write("memory/qmd/current.json", '{"collection": "x"}\n')
    make_index.write("memory/.history/MEMORY.md.1", "old\n")
    make_index.write("memory/.hidden/note.md", "hidden\n")
    (make_index.tmp / "outside.md").write_text("outside\n")
    return Reader(Layout(make_index.ws.resolve()))


def test_reads_a_line_range(ix) -> None:  # type: ignore[no-untyped-def]
    got = ix.get("MEMORY.md", 2, 2)
    assert (got.path, got.from_line, got.lines, got.text, got.total_lines) == (
        "MEMORY.md",
        2,
        2,
        "two\nthree",
        4,
    )


def test_reads_whole_file_and_past_the_end(ix) -> None:  # type: ignore[no-untyped-def]
    assert ix.get("memory/2024-05-01.md").text == "a\nb"
    past = ix.get("MEMORY.md", 10, 5)
    assert (past.lines, past.text, past.total_lines) == (0, "", 4)


def test_absolute_path_inside_the_workspace_is_fine(ix) -> None:  # type: ignore[no-untyped-def]
    assert ix.get(str(ix.root / "MEMORY.md"), 1, 1).path == "MEMORY.md"


def test_absolute_path_through_a_link_to_the_workspace(ix, make_index: IndexFactory) -> None:  # type: ignore[no-untyped-def]
    link = make_index.tmp / "link-to-ws"
    os.symlink(make_index.ws, link)  # as /tmp is /private/tmp on macOS
    assert ix.get(str(link / "memory" / "2024-05-01.md")).text == "a\nb"
    with pytest.raises(ForbiddenPath):
        ix.get(str(link / "secret.txt"))
    with pytest.raises(ForbiddenPath):
        ix.get(str(link / ".." / "outside.md"))


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "memory/../../outside.md",
        "memory/../secret.txt",
        "secret.txt",
        "/etc/passwd",
        "sessions/s1.jsonl",
        "memory/qmd/current.json",  # not markdown: not indexed, so not read either
        "memory/.history/MEMORY.md.1",
        "memory/.hidden/note.md",
        "",
        "memory/\x00x.md",
    ],
)
def test_forbidden_paths(ix, path: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ForbiddenPath):
        ix.get(path)


def test_symlink_leaving_the_workspace_is_forbidden(ix, make_index: IndexFactory) -> None:  # type: ignore[no-untyped-def]
    os.symlink(make_index.tmp / "outside.md", make_index.ws / "memory" / "link.md")
    os.symlink(make_index.ws / "secret.txt", make_index.ws / "memory" / "inner.md")
    with pytest.raises(ForbiddenPath):
        ix.get("memory/link.md")
    with pytest.raises(ForbiddenPath):
        ix.get("memory/inner.md")  # inside the workspace, but not a memory file


def test_missing_file_is_not_found(ix) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(NotFound):
        ix.get("memory/2099-01-01.md")


@pytest.mark.parametrize(("start", "count"), [(0, None), (1, 0), (-3, 2)])
def test_bad_ranges_are_invalid(ix, start: int, count: int | None) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidParams):
        ix.get("MEMORY.md", start, count)


def test_sessions_are_readable_when_that_source_is_on(make_index: IndexFactory) -> None:
    make_index.write("sessions/s1.jsonl", '{"type": "session"}\n')
    ix = Reader(Layout(make_index.ws.resolve(), sessions=True))
    assert ix.get("sessions/s1.jsonl").text == '{"type": "session"}'


def test_a_file_over_max_file_bytes_is_read_for_the_asked_lines_only(
    make_index: IndexFactory,
) -> None:
    """``lines: 2`` of a file over index.max_file_bytes was invalid_params (the docs said
    to ask for fewer lines); the range is now read in a stream, the same as from a small
    file, and only the whole file or a range over the limit is refused."""
    body = "".join(f"line {i} é\r\n" if i % 3 else f"line {i}\n" for i in range(1, 200_001))
    for text in (body, body.rstrip("\n")):  # with and without a final newline
        make_index.write("memory/big.md", text)
        small = Reader(Layout(make_index.ws.resolve()), max_bytes=1 << 20)
        big = Reader(Layout(make_index.ws.resolve()), max_bytes=4096)
        assert len(text.encode()) > 2 << 20  # several blocks of the stream
        for start, count in [
            (1, 2),
            (2, 1),
            (80_123, 40),
            (199_999, 5),
            (200_000, 1),
            (200_001, 3),
        ]:
            assert big.get("memory/big.md", start, count) == small.get(
                "memory/big.md", start, count
            )
        got = big.get("memory/big.md", 1, 2)
        assert (got.text, got.total_lines) == ("line 1 é\r\nline 2 é\r", 200_000)
        with pytest.raises(InvalidParams, match="ask for a range") as whole:
            big.get("memory/big.md")
        assert whole.value.data == {"param": "lines"}
        with pytest.raises(InvalidParams, match="ask for fewer lines"):
            big.get("memory/big.md", 10, 1000)
