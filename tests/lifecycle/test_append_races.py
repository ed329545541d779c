"""Appends racing each other and the writers that replace a day's note (forget, import):
every line lands exactly once, never twice and never into a replaced file."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest

from daemon_util import DaemonThread
from memoryd.files.append import Appender
from memoryd_client import MemoryClient, RemoteError

pytestmark = pytest.mark.timeout(120)

DATE = "2025-03-12"
DAILY = f"memory/{DATE}.md"
DAY = dt.date(2025, 3, 12)
SHARED = "- The shared racing fact."


def test_concurrent_appends_of_one_line_write_it_once_while_forgets_replace_the_day(
    md_home: Path,
) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    day = ws / DAILY
    day.write_text("".join(f"- filler line {i}\n" for i in range(3000)))
    writers, rounds = 8, 10
    answered: list[str] = []
    with DaemonThread(md_home, {"workspaces": [{"path": str(ws), "name": "ws"}]}) as d:
        stop = threading.Event()
        forgets = 0

        def forgetter() -> None:  # each forget replaces the day's note by a rename
            nonlocal forgets
            with MemoryClient(d.socket_path) as c:
                while not stop.is_set():
                    try:
                        c.forget(workspace="ws", path=DAILY, lines="1", purge=True)
                        forgets += 1
                    except RemoteError:  # the line changed under it: an append won
                        pass

        def writer(i: int, start: threading.Barrier) -> None:
            with MemoryClient(d.socket_path) as c:
                start.wait()
                for r in range(rounds):
                    c.append(SHARED, workspace="ws", date=DATE)
                    res = c.append(f"- Fact {i}-{r} from writer {i}.", workspace="ws", date=DATE)
                    assert not res.duplicate
                    answered.append(f"- Fact {i}-{r} from writer {i}.")

        start = threading.Barrier(writers)
        threads = [threading.Thread(target=writer, args=(i, start)) for i in range(writers)]
        remover = threading.Thread(target=forgetter)
        remover.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        remover.join()
    lines = day.read_text().splitlines()
    assert forgets > 0
    assert len(answered) == writers * rounds
    assert [line for line in answered if lines.count(line) != 1] == []
    assert lines.count(SHARED) == 1


def test_a_note_replaced_by_a_rename_is_keyed_again(tmp_path: Path) -> None:
    """The duplicate check's cache belongs to one file (inode): a note replaced by a rename
    that is longer than what was keyed is keyed again whole, not from the old length."""
    appender = Appender()
    appender.append(tmp_path, "- aaaa", DAY)
    appender.append(tmp_path, "- bbbb", DAY)  # the check before it keyed "- aaaa\n"
    path = tmp_path / DAILY
    swap = tmp_path / "memory" / ".swap"
    swap.write_text("- A longer first line, now.\n- another line\n")
    swap.replace(path)
    res = appender.append(tmp_path, "- A longer first line, now.", DAY)
    assert res.duplicate and (res.path, res.start_line) == (DAILY, 1)
    assert path.read_text() == "- A longer first line, now.\n- another line\n"
