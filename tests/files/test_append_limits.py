"""append at the edges: what it refuses at the door, and a full disk (issue 13, 3, 8, 9).

Each refusal leaves the daily file byte-identical; a failed write is whole or absent."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread, RawConn, error_code, wait_for
from memoryd.errors import MemorydError
from memoryd.files import append as append_module
from memoryd.files.append import Appender, daily_path

DAY = dt.date(2024, 3, 9)


def workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    daily_path(root, DAY).write_text("# 2024-03-09\n\nthe walrus protocol was agreed\n")
    return root


def append(c: RawConn, text: str, **params: Any) -> dict[str, Any] | None:
    return c.call("append", {"text": text, "date": DAY.isoformat(), **params})


def test_nul_bytes_in_text_or_heading_are_refused_and_nothing_is_written(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    before = daily_path(ws, DAY).read_bytes()
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        for params in ({"text": "a\x00b"}, {"text": "fine", "heading": "Log\x00"}):
            reply = append(c, **params)  # type: ignore[arg-type]
            assert error_code(reply) == "invalid_params", reply
            assert reply is not None and "NUL" in reply["error"]["message"]
        assert daily_path(ws, DAY).read_bytes() == before

        # The first scan runs in the background after workspace.add: wait for it, then the
        # daily file must still be searchable (a NUL would have made it "binary").
        def found() -> list[str]:
            hits = c.result("search", {"query": "walrus", "mode": "keyword"})["results"]
            return [r["path"] for r in hits]

        wait_for(found, timeout=10)
        assert found() == ["memory/2024-03-09.md"]


def test_one_append_is_bounded(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    before = daily_path(ws, DAY).read_bytes()
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        reply = append(c, "x" * (2 << 20))
        assert error_code(reply) == "too_large", reply
        assert reply is not None and reply["error"]["data"]["param"] == "text"
    assert daily_path(ws, DAY).read_bytes() == before


def test_an_append_that_would_cross_max_file_bytes_is_refused_and_the_day_stays_searchable(
    md_home: Path,
) -> None:
    ws = workspace(md_home / "ws")
    with (
        DaemonThread(md_home, {"index": {"max_file_bytes": 4096}}) as d,
        RawConn(d.socket_path) as c,
    ):
        c.result("workspace.add", {"path": str(ws)})
        refused = None
        for i in range(40):
            reply = append(c, f"note {i} " + "filler " * 20)
            if error_code(reply) is not None:
                refused = reply
                break
        assert error_code(refused) == "too_large", refused
        assert refused is not None and refused["error"]["data"]["path"] == "memory/2024-03-09.md"
        assert daily_path(ws, DAY).stat().st_size <= 4096
        found = c.result("search", {"query": "walrus", "mode": "keyword"})["results"]
        assert [r["path"] for r in found] == ["memory/2024-03-09.md"]
        [ws_status] = c.result("status")["workspaces"]
        assert ws_status["skipped"] == {}


class FullDisk:
    """os.write and os.fsync of one file as on a disk with ``room`` bytes left: a short
    write, then ENOSPC (the boundary the kernel draws; everything else is real)."""

    def __init__(self, target: Path, room: int) -> None:
        self.target = target
        self.room = room
        self.real_write = os.write

    def _ours(self, fd: int) -> bool:
        try:
            return os.readlink(f"/proc/self/fd/{fd}") == str(self.target)
        except OSError:
            return False

    def write(self, fd: int, data: Any) -> int:
        if not self._ours(fd):
            return self.real_write(fd, data)
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = self.real_write(fd, bytes(data[: self.room]))
        self.room -= n
        return n


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FullDisk]:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to tell the daily file's descriptor")
    disk = FullDisk(daily_path(tmp_path.resolve(), DAY), 1000)
    monkeypatch.setattr(append_module.os, "write", disk.write)
    yield disk


def test_a_full_disk_leaves_the_daily_file_as_it_was(tmp_path: Path, full_disk: FullDisk) -> None:
    workspace(tmp_path)
    before = daily_path(tmp_path, DAY).read_bytes()
    with pytest.raises(MemorydError) as err:
        Appender().append(tmp_path, "a long note " * 300, DAY)  # ~3.6 KB, 1000 bytes fit
    assert err.value.code == "disk_full"
    assert daily_path(tmp_path, DAY).read_bytes() == before  # whole or absent
    full_disk.room = 10_000  # space again: the retry writes the note once
    Appender().append(tmp_path, "a long note " * 300, DAY)
    assert daily_path(tmp_path, DAY).read_text().count("a long note") == 300


def test_a_full_disk_leaves_no_empty_new_daily_file(tmp_path: Path, full_disk: FullDisk) -> None:
    (tmp_path / "memory").mkdir()
    full_disk.room = 0
    with pytest.raises(MemorydError) as err:
        Appender().append(tmp_path, "first note of the day", DAY)
    assert err.value.code == "disk_full"
    assert not daily_path(tmp_path, DAY).exists()


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_really_full_small_filesystem_tears_no_note(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "fs", "64k") as fs:
        ws = workspace(fs / "ws")
        before = daily_path(ws, DAY).read_bytes()
        filler = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT)
        with contextlib.suppress(OSError):  # take every block left
            while True:
                os.write(filler, b"x" * 4096)
        os.close(filler)
        for text, day in (("a long note " * 1000, DAY), ("a new day", DAY.replace(day=10))):
            with pytest.raises(MemorydError) as err:
                Appender().append(ws, text, day)
            assert err.value.code == "disk_full"
        assert daily_path(ws, DAY).read_bytes() == before
        assert not daily_path(ws, DAY.replace(day=10)).exists()
