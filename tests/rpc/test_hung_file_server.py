"""A workspace whose file server stops answering holds up nothing else: on a real FUSE mount
whose server hangs (tests/fakes/slow_fs.py: a stat there waits in the kernel, as on NFS or
sshfs when the server is gone), read-your-writes' stats and statfs give the interpreter lock
up, so the daemon's other threads (other clients, the watcher, the writers) go on. Needs root
and /dev/fuse to mount; skipped elsewhere (test_search_threads.py has the same at the level
of a fake stat)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread, RawConn, wait_for
from fakes.slow_fs import MountRefused, SlowFs
from memoryd.index import filesystems
from memoryd.index.freshness import py_stat_many

pytestmark = pytest.mark.skipif(
    not SlowFs.available(), reason="mounting a FUSE file system needs root and /dev/fuse"
)


@contextlib.contextmanager
def slow_fs(mountpoint: Path) -> Iterator[SlowFs]:
    try:
        fs = SlowFs(mountpoint).__enter__()
    except MountRefused as exc:
        pytest.skip(str(exc))
    try:
        yield fs
    finally:
        fs.__exit__(None, None, None)


def test_statfs_and_the_released_stats_let_other_threads_run_while_the_server_hangs(
    tmp_path: Path,
) -> None:
    mnt = tmp_path / "mnt"
    with slow_fs(mnt) as fs:
        assert filesystems.name_at(str(mnt)) == "fuse"
        assert filesystems.py_fs_type(str(mnt)) == "fuse.slowfs"
        assert not filesystems.is_local(filesystems.fs_type(str(mnt)))
        target = str(mnt / "x.md")
        for call in (lambda: filesystems.fs_type(target), lambda: py_stat_many([target])):
            fs.hang()
            got: list[Any] = []

            def wait(call: Any = call, got: list[Any] = got) -> None:
                got.append(call())

            waiting = threading.Thread(target=wait)
            waiting.start()
            # This thread runs while the other waits in the kernel: the lock was given up.
            assert wait_for(fs.asked.exists, 10)
            assert waiting.is_alive() and got == []
            fs.answer()
            assert not fs.gave_up.exists()  # it was let go by the answer, not by the time
            waiting.join(30)
            assert got in ([None], [[None]])


def test_a_workspace_on_a_hung_server_answers_stale_and_stops_no_other(
    md_home: Path, tmp_path: Path
) -> None:
    mnt = tmp_path / "mnt"
    roots = {name: md_home / name for name in ("far", "near")}
    for name, root in roots.items():
        (root / "memory").mkdir(parents=True)
        (root / "MEMORY.md").write_text(f"# Memory\n\nThe deploy target of {name} is nomad.\n")
    # far's USER.md (a hot file: stat'ed before every search) is a link into the mount
    (roots["far"] / "USER.md").symlink_to(mnt / "USER.md")
    config = {"server": {"read_your_writes_ms": 300}}
    with slow_fs(mnt) as fs, DaemonThread(md_home, config=config) as d:
        with RawConn(d.socket_path, timeout=30) as c:
            for root in roots.values():
                c.result("workspace.add", {"path": str(root)})
            assert wait_for(
                lambda: all(
                    w["keyword_scan"] == "memory" for w in c.result("status")["workspaces"]
                ),
                10,
            )
        assert d.daemon is not None
        far = d.daemon.registry.resolve("far").usable_index().freshness
        near = d.daemon.registry.resolve("near").usable_index().freshness
        assert far.not_local == (str(roots["far"] / "USER.md"), "fuse")
        assert not far.may_hold_lock() and near.may_hold_lock()

        def search(conn: RawConn, ws: str, query: str = "nomad") -> dict[str, Any]:
            params = {"query": query, "mode": "keyword", "workspace": ws}
            result: dict[str, Any] = conn.result("search", params)
            return result

        answers: list[dict[str, Any]] = []
        fs.hang()
        try:

            def ask_far() -> None:
                with RawConn(d.socket_path, timeout=30) as c2:
                    answers.append(search(c2, "far"))

            asking = threading.Thread(target=ask_far)
            asking.start()
            assert wait_for(fs.asked.exists, 10)  # far's check waits for the server
            with RawConn(d.socket_path, timeout=30) as c3:
                c3.result("hello", {})
                assert search(c3, "near")["results"]
                (roots["near"] / "memory" / "2024-05-01.md").write_text("- now zanzibar\n")
                found = search(c3, "near", "zanzibar")  # the watcher, the writer
                assert [r["path"] for r in found["results"]] == ["memory/2024-05-01.md"]
                asking.join(30)  # far's answer: without the check, once its budget is spent
                assert answers and answers[0].get("stale") is True
                assert [r["path"] for r in answers[0]["results"]] == ["MEMORY.md"]
                assert fs.control.exists()  # all of it while the server still hangs
        finally:
            fs.answer()
        assert not fs.gave_up.exists()
        with RawConn(d.socket_path, timeout=30) as c4:
            assert wait_for(lambda: "stale" not in search(c4, "far"), 10)


def test_the_daemon_stops_while_a_stat_waits_for_the_hung_server_and_that_thread_ends_after(
    md_home: Path, tmp_path: Path
) -> None:
    mnt = tmp_path / "mnt"
    root = md_home / "far"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nThe deploy target is nomad.\n")
    (root / "USER.md").symlink_to(mnt / "USER.md")  # a hot file in the mount

    def stat_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("memoryd-stat")]

    before = set(stat_threads())
    with slow_fs(mnt) as fs:
        try:
            with (
                DaemonThread(md_home, config={"server": {"read_your_writes_ms": 100}}) as d,
                RawConn(d.socket_path, timeout=30) as c,
            ):
                c.result("workspace.add", {"path": str(root), "wait": True})
                fs.hang()
                answer = c.result("search", {"query": "nomad", "mode": "keyword"})
                assert answer["stale"] is True and wait_for(fs.asked.exists, 10)
            # Stopped, while that stat still waits in the kernel (the server never gave up)
            assert fs.control.exists() and not fs.gave_up.exists()
            assert set(stat_threads()) - before
        finally:
            fs.answer()
        assert wait_for(lambda: not set(stat_threads()) - before, 10)
        assert not fs.gave_up.exists()
