"""A remote that is down for a while, a network remote (git daemon on loopback), and a
hand-written secret that is never pushed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from daemon_util import wait_for
from sync_util import (
    DAILY,
    git_daemon,
    host,
    lines_of,
    make_remote,
    remote_files,
    remote_history_text,
    settle,
    two_hosts,
)


def test_remote_down_writes_go_on_and_the_backlog_is_pushed_later(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        a.append("- before the outage")
        settle(a, b)
        away = bare.with_name("away.git")
        bare.rename(away)  # the remote is gone
        for i in range(5):
            a.append(f"- written while offline {i}")
            report = a.sync()
            assert report["offline"] and not report["pushed"]
        state = a.status()
        assert state["offline_since"] and state["failures"] >= 1
        assert state["waiting"]["commits"] >= 1 and state["waiting"]["oldest_at"]
        assert state["next_sync_at"]  # retried with backoff
        away.rename(bare)  # back
        report = a.sync()
        assert report["pushed"] and not report["offline"]
        assert a.status()["offline_since"] is None
        assert a.status()["waiting"]["commits"] == 0
        b.sync()
        assert sorted(lines_of(b.read(DAILY))) == sorted(lines_of(a.read(DAILY)))
        assert len(lines_of(b.read(DAILY))) == 6


def test_an_unreachable_remote_is_tried_again_after_a_doubling_wait(tmp_path: Path) -> None:
    """Scheduled tries against a remote that is not there: retry_min_seconds, doubling, up to
    retry_max_seconds (the daemon's fake clock moves them); appends are answered meanwhile."""
    sync = {"retry_min_seconds": 30, "retry_max_seconds": 100, "interval_seconds": 300}
    with host("laptop", sync, remote=f"file://{tmp_path / 'not-there.git'}") as a:
        waits: list[float] = []
        for tries in range(1, 5):
            assert wait_for(lambda n=tries: a.status()["failures"] == n, 30), a.status()
            state = a.status()
            assert state["offline_since"] and state["last_sync"]["ok"] is False
            at, due = (
                dt.datetime.fromisoformat(t)
                for t in (state["last_sync"]["at"], state["next_sync_at"])
            )
            waits.append((due - at).total_seconds())
            a.append(f"- written while the remote is away {tries}")
            a.advance(waits[-1])
        assert waits == [30, 60, 100, 100]
        assert a.status()["waiting"]["commits"] >= 1


def test_sync_over_git_daemon_on_loopback(tmp_path: Path) -> None:
    make_remote(tmp_path)
    with git_daemon(tmp_path) as url, two_hosts(f"{url}/remote.git") as (a, b):
        a.append("- sent over the network")
        b.append("- and back again")
        settle(a, b)
        for h in (a, b):
            text = h.read(DAILY)
            assert "sent over the network" in text and "and back again" in text


def test_a_hand_written_secret_is_not_pushed(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with host("laptop") as a:
        (a.ws / "MEMORY.md").write_text("# Memory\n\n- keep it short\n")
        with a.client() as c:
            c.sync_enable(f"file://{bare}", workspace="notes")
        (a.ws / "USER.md").write_text(f"# User\n\n- my github token is {token}\n")
        with open(a.ws / "MEMORY.md", "a") as f:
            f.write(f"- the CI token: {token}\n")
        a.append("- an ordinary note")
        report = a.sync()
        assert report["pushed"]  # the rest went
        held = {h["path"]: h["kinds"] for h in a.status()["held"]}
        assert set(held) == {"USER.md", "MEMORY.md"} and "github_token" in held["USER.md"]
        files = remote_files(bare)
        assert "USER.md" not in files
        assert files["MEMORY.md"] == "# Memory\n\n- keep it short\n"  # the version before
        assert "an ordinary note" in files[DAILY]
        assert token not in remote_history_text(bare)
        # The secret goes from the file: the file is pushed, and no longer held.
        (a.ws / "USER.md").write_text("# User\n\n- prefers short answers\n")
        a.sync()
        assert "prefers short answers" in remote_files(bare)["USER.md"]
        assert [h["path"] for h in a.status()["held"]] == ["MEMORY.md"]
