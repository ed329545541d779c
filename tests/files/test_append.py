"""append: daily-file blocks added atomically, existing bytes untouched, serialised per file."""

from __future__ import annotations

import datetime as dt
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon_util import DaemonThread, RawConn, error_code
from memoryd.errors import ForbiddenPath, InvalidParams, Unavailable
from memoryd.files.append import Appender, _last_heading, daily_path
from memoryd.files.fsutil import atomic_write

DAY = dt.date(2024, 3, 9)


def lines_of(path: Path, start: int, end: int) -> list[str]:
    return path.read_text().split("\n")[start - 1 : end]


def test_first_append_creates_the_daily_file(tmp_path: Path) -> None:
    res = Appender().append(tmp_path, "We chose postgres.\nBecause of JSONB.", DAY)
    path = tmp_path / "memory" / "2024-03-09.md"
    assert path.read_text() == "We chose postgres.\nBecause of JSONB.\n"
    assert (res.path, res.start_line, res.end_line, res.bytes) == (
        "memory/2024-03-09.md",
        1,
        2,
        len(path.read_bytes()),
    )


@pytest.mark.parametrize(
    "existing",
    [
        b"# 2024-03-09\n\nmorning notes\n",
        b"no trailing newline",
        b"ends with blank line\n\n",
        b"caf\xc3\xa9 \xe2\x80\x94 unicode \r\nand CRLF\r\n",
    ],
)
def test_existing_bytes_stay_identical_and_the_range_points_at_the_new_text(
    tmp_path: Path, existing: bytes
) -> None:
    path = daily_path(tmp_path, DAY)
    path.parent.mkdir()
    path.write_bytes(existing)
    res = Appender().append(tmp_path, "new fact one\nnew fact two\n", DAY)
    data = path.read_bytes()
    assert data.startswith(existing)
    assert lines_of(path, res.start_line, res.end_line) == ["new fact one", "new fact two"]
    assert res.bytes == len(data) - len(existing)
    assert data.endswith(b"\n\nnew fact one\nnew fact two\n")  # one blank line between blocks


def test_heading_is_written_once_for_consecutive_appends_under_it(tmp_path: Path) -> None:
    app = Appender()
    first = app.append(tmp_path, "alpha", DAY, heading="Decisions")
    second = app.append(tmp_path, "beta", DAY, heading="## Decisions")
    third = app.append(tmp_path, "gamma", DAY, heading="Open questions")
    path = daily_path(tmp_path, DAY)
    # a new daily file whose first block is a section starts with the day's title
    assert path.read_text() == (
        "# 2024-03-09\n\n## Decisions\n\nalpha\n\nbeta\n\n## Open questions\n\ngamma\n"
    )
    assert lines_of(path, first.start_line, first.end_line) == ["## Decisions", "", "alpha"]
    assert lines_of(path, second.start_line, second.end_line) == ["beta"]
    assert lines_of(path, third.start_line, third.end_line) == ["## Open questions", "", "gamma"]


def test_concurrent_appends_to_one_file_lose_nothing(tmp_path: Path) -> None:
    app = Appender()
    barrier = threading.Barrier(16)

    def worker(i: int) -> None:
        barrier.wait()
        for j in range(5):
            app.append(tmp_path, f"entry {i}-{j}", DAY)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    text = daily_path(tmp_path, DAY).read_text()
    entries = [line for line in text.split("\n") if line]
    assert sorted(entries) == sorted(f"entry {i}-{j}" for i in range(16) for j in range(5))


def test_append_keeps_the_file_mode_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = daily_path(tmp_path, DAY)
    path.parent.mkdir()
    path.write_text("x\n")
    os.chmod(path, 0o640)
    Appender().append(tmp_path, "y", DAY)
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in path.parent.iterdir()] == ["2024-03-09.md"]


def test_a_daily_file_symlinked_outside_the_workspace_is_forbidden(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside.md"
    (ws / "memory").mkdir(parents=True)
    outside.write_text("secret\n")
    daily_path(ws, DAY).symlink_to(outside)
    with pytest.raises(ForbiddenPath):
        Appender().append(ws, "leak", DAY)
    assert outside.read_text() == "secret\n"


def test_a_symlink_inside_the_workspace_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    real = tmp_path / "memory" / "real.md"
    real.write_text("start\n")
    daily_path(tmp_path, DAY).symlink_to(real)
    Appender().append(tmp_path, "more", DAY)
    assert daily_path(tmp_path, DAY).is_symlink()
    assert real.read_text() == "start\n\nmore\n"


def test_empty_text_and_multiline_heading_are_invalid(tmp_path: Path) -> None:
    with pytest.raises(InvalidParams, match="text"):
        Appender().append(tmp_path, " \n ", DAY)
    with pytest.raises(InvalidParams, match="heading"):
        Appender().append(tmp_path, "x", DAY, heading="a\nb")


def test_atomic_write_replaces_content_and_never_leaves_a_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    atomic_write(target, b"one\n")
    atomic_write(target, b"two\n")
    assert target.read_bytes() == b"two\n"
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]


def test_append_method_writes_and_reports_through_the_daemon(md_home: Path) -> None:
    ws = md_home / "ws"
    ws.mkdir()
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        res = c.result(
            "append", {"text": "remember the milk", "date": "2024-03-09", "heading": "Todo"}
        )
        assert res == {
            "path": "memory/2024-03-09.md",
            "start_line": 3,  # under the day's title, a new file's first two lines
            "end_line": 5,
            "bytes": len("# 2024-03-09\n\n## Todo\n\nremember the milk\n"),
            "origin": "agent",  # what the lines were recorded with
        }
        today = c.result("append", {"text": "today's note"})
        assert today["path"] == f"memory/{dt.date.today().isoformat()}.md"
        bad = c.call("append", {"text": "x", "workspace": "nope"})
        assert error_code(bad) == "unknown_workspace"
    assert (ws / "memory" / "2024-03-09.md").read_text() == (
        "# 2024-03-09\n\n## Todo\n\nremember the milk\n"
    )


def test_append_to_a_missing_workspace_folder_creates_nothing(tmp_path: Path) -> None:
    gone = tmp_path / "unmounted"
    with pytest.raises(Unavailable, match="missing"):
        Appender().append(gone, "x", DAY)
    assert not gone.exists()


def test_an_external_appender_loses_nothing_while_we_append(tmp_path: Path) -> None:
    """Another process appending (here: a thread holding the file open O_APPEND, like a
    shell's ``>>`` or an agent's log handle) keeps every line: we never rewrite the file."""
    app = Appender()
    path = daily_path(tmp_path, DAY)
    app.append(tmp_path, "first", DAY)
    stop = threading.Event()
    written: list[int] = []

    def external() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            n = 0
            # Bounded: unbounded, it grew the file to millions of lines under load (and
            # past index.max_file_bytes, where appends are refused).
            while (not stop.is_set() or n < 200) and n < 20_000:
                os.write(fd, f"ext {n}\n".encode())
                written.append(n)
                n += 1
        finally:
            os.close(fd)

    t = threading.Thread(target=external)
    t.start()
    try:
        results = [app.append(tmp_path, f"ours {i}", DAY) for i in range(200)]
    finally:
        stop.set()
        t.join()
    lines = path.read_text().split("\n")
    assert sorted(line for line in lines if line.startswith("ext ")) == sorted(
        f"ext {n}" for n in written
    )
    assert [line for line in lines if line.startswith("ours ")] == [f"ours {i}" for i in range(200)]
    for i, res in enumerate(results):  # each reported range points at its own block
        assert lines_of(path, res.start_line, res.end_line) == [f"ours {i}"]


def test_a_memory_folder_symlinked_outside_is_refused_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "elsewhere" / "memory"
    ws.mkdir()
    (ws / "memory").symlink_to(outside)  # dangling: the target does not exist yet
    with pytest.raises(ForbiddenPath):
        Appender().append(ws, "leak", DAY)
    assert not (tmp_path / "elsewhere").exists()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"## a", b"## b ", b"# top", b"text", b"", b"##", b"## c\r", b"x\r\n"]),
        max_size=40,
    ).map(b"\n".join),
    st.sampled_from([1, 2, 3, 7, 1 << 16]),
)
def test_the_last_heading_is_found_reading_from_the_end(content: bytes, block: int) -> None:
    # Read back a block at a time (a long day's log is not split whole at every append),
    # the answer is the whole file's.
    whole = None
    for line in reversed(content.splitlines()):
        if line.startswith((b"## ", b"# ")):
            whole = line[3:].strip() if line.startswith(b"## ") else None
            break
    assert _last_heading(content, block) == whole
