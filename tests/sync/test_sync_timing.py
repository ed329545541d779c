"""When sync runs, on the daemon's (fake) clock: a commit once writes settle, a pull and push
every interval, and with an interval of 0 a push after each commit."""

from __future__ import annotations

from pathlib import Path

from daemon_util import wait_for
from sync_util import DAILY, host, make_remote, remote_files


def _committed(h: object) -> bool:
    return bool(h.status()["last_commit_at"])  # type: ignore[attr-defined]


def test_commit_after_writes_settle_then_push_on_the_interval(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    sync = {"debounce_seconds": 5, "interval_seconds": 300}
    with host("laptop", sync, remote=f"file://{bare}") as a:
        assert wait_for(lambda: a.status()["last_sync"] is not None, 30)  # the start's sync
        pushes = a.status()["last_push_at"]
        a.append("- settles, then is committed")
        a.advance(1)
        assert DAILY in a.status()["waiting"]["files"]  # not yet: writes not settled
        a.advance(5)
        assert wait_for(lambda: a.status().get("waiting", {}).get("commits") == 1, 30)
        assert a.status()["waiting"]["files"] == []
        assert DAILY not in remote_files(bare)  # committed, not pushed: the interval decides
        a.advance(300)
        assert wait_for(lambda: DAILY in remote_files(bare), 30)
        assert wait_for(lambda: a.status()["last_push_at"] not in (None, pushes), 30)
        assert a.status()["waiting"]["commits"] == 0


def test_interval_zero_pushes_after_each_commit(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    sync = {"debounce_seconds": 5, "interval_seconds": 0}
    with host("laptop", sync, remote=f"file://{bare}") as a:
        a.append("- pushed as soon as it settles")
        a.advance(5)
        assert wait_for(lambda: DAILY in remote_files(bare), 30)
        assert a.status()["next_sync_at"] is None  # no schedule: on writes and on demand
