"""files/locks.py: one lock per file for every writer in the daemon, links included."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

from memoryd.files.append import Appender
from memoryd.files.locks import FileLocks


def test_a_link_and_its_target_share_one_lock(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    target.write_text("x\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    locks = FileLocks()
    assert locks.lock_for(link) is locks.lock_for(target)
    assert locks.lock_for(tmp_path / "a.md") is not locks.lock_for(target)


def test_the_appender_takes_its_locks_from_the_registry_it_is_given(tmp_path: Path) -> None:
    locks = FileLocks()
    appender = Appender(locks)
    assert appender.locks is locks
    day = tmp_path / "memory" / "2025-03-12.md"
    done = threading.Event()
    with locks.locked([day, tmp_path / "MEMORY.md"]):  # a forget holding the day's file
        t = threading.Thread(
            target=lambda: (
                appender.append(tmp_path, "late note", dt.date(2025, 3, 12)),
                done.set(),
            )
        )
        t.start()
        assert not done.wait(0.2)  # the append waits for the lock
        assert not day.exists() or "late note" not in day.read_text()
    t.join(10)
    assert done.is_set() and "late note" in day.read_text()


def test_locked_takes_locks_in_one_order_whatever_the_order_asked(tmp_path: Path) -> None:
    locks = FileLocks()
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    finished = []

    def worker(paths: list[Path]) -> None:
        for _ in range(2000):
            with locks.locked(paths):
                pass
        finished.append(paths)

    threads = [threading.Thread(target=worker, args=(p,)) for p in ([a, b], [b, a], [a, a, b])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(finished) == 3  # no deadlock
