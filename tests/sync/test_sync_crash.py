"""kill -9 at random moments of a sync: the next start finishes it or rolls it back.

Host A is a real ``memoryd run`` killed with SIGKILL at a random moment of ``sync now``
(while it commits, fetches, merges twenty files the other host changed, writes them, or
pushes), then started again; host B keeps writing and syncing. At the end every line either
host was told was written is on both hosts exactly once, the files are identical, no git
marker is anywhere, and A's repository is sound (git fsck).
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from pathlib import Path

import pytest

from daemon_util import Proc, short_tmp, wait_for
from memoryd.sync.settings import folder_of
from memoryd_client import MemoryClient
from memoryd_client.errors import ClientError
from memoryd_client.paths import default_paths
from sync_util import host, lines_of, make_remote

pytestmark = pytest.mark.timeout(300)

ROUNDS = 6
FILES = 20


def laptop_home(remote: str, sync: str = "") -> tuple[Path, Path]:
    """A home whose config syncs workspace "notes" to ``remote``; ``sync``: more [sync] keys."""
    home = short_tmp()
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    (home / "config.toml").write_text(
        f'[sync]\nhost = "laptop"\n{sync}\n[[workspaces]]\npath = "{ws}"\nname = "notes"\n'
        f'sync_remote = "{remote}"\n'
    )
    return home, ws


def client_of(home: Path) -> MemoryClient:
    return MemoryClient(socket_path=home / "run" / "memoryd.sock", autostart=False, timeout=120)


def sync_killed(home: Path, took: list[float] | None = None) -> None:
    """``sync now``, killed under it; ``took`` gets its duration if it ended first."""
    start = time.monotonic()
    try:
        with client_of(home) as c:
            c.sync_now(workspace="notes")
    except (ClientError, OSError):
        return
    if took is not None:
        took.append(time.monotonic() - start)


def day(i: int) -> str:
    return f"2026-02-{i % 28 + 1:02d}"


def test_kill_9_at_random_moments_of_a_sync(tmp_path: Path) -> None:
    rng = random.Random(36)
    remote = f"file://{make_remote(tmp_path)}"
    home, ws = laptop_home(remote)
    written: set[str] = set()
    # The kill comes within this many seconds of `sync now`: as long as the last sync the
    # kill missed took, so that it lands at a random moment of the sync, however fast
    # this machine runs one (a fixed 1.5 s mostly fell after the sync had ended).
    span = 1.5
    with host("desktop", remote=remote) as b:
        for r in range(ROUNDS):
            for i in range(FILES):
                line = f"- desktop round {r} file {i}"
                b.append(line, day=day(i))
                written.add(line)
            b.sync()
            proc = Proc(home)
            proc.ready()
            with client_of(home) as c:
                for i in range(3):
                    line = f"- laptop round {r} line {i}"
                    c.append(line, workspace="notes", date=day(rng.randrange(FILES)))
                    written.add(line)
            took: list[float] = []
            t = threading.Thread(target=sync_killed, args=(home, took))
            t.start()
            time.sleep(rng.uniform(0.0, span))
            proc.kill()
            t.join(60)
            span = took[0] if took else span
        proc = Proc(home)
        proc.ready()
        try:
            for _ in range(3):
                with client_of(home) as c:
                    c.sync_now(workspace="notes")
                b.sync()
            with client_of(home) as c:
                state = c.sync_status(workspace="notes").workspaces[0]
            repo = state.repository
        finally:
            proc.p.terminate()
            proc.wait()
        files_a = sorted(p.relative_to(ws).as_posix() for p in ws.glob("memory/*.md"))
        files_b = sorted(p.relative_to(b.ws).as_posix() for p in b.ws.glob("memory/*.md"))
        assert files_a == files_b
        seen: list[str] = []
        for rel in files_a:
            text_a, text_b = (ws / rel).read_text(), b.read(rel)
            assert text_a == text_b, rel
            assert "<<<<<<<" not in text_a and ">>>>>>>" not in text_a
            seen += lines_of(text_a)
        assert sorted(seen) == sorted(written)  # every line once, none lost
        assert repo is not None
        fsck = subprocess.run(
            ["git", "--git-dir", repo, "fsck", "--no-dangling"], capture_output=True, text=True
        )
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def test_kill_9_while_the_push_waits_on_the_remote(tmp_path: Path) -> None:
    """A kill at a known moment: the remote's pre-receive hook holds the push until the test
    has killed the daemon (its git push dies with it), then lets the remote finish on its own.
    The next start syncs as if nothing happened: every line once, on the remote and on the
    other host, and the repository is sound."""
    bare = make_remote(tmp_path)
    pushing, release = tmp_path / "pushing", tmp_path / "release"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        f'#!/bin/sh\ntouch "{pushing}"\ni=0\n'
        f'while [ ! -e "{release}" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n'
    )
    hook.chmod(0o755)
    # No schedule, and no commit on its own: only `sync now` pushes.
    home, ws = laptop_home(f"file://{bare}", "interval_seconds = 0\ndebounce_seconds = 3600\n")
    proc = Proc(home)
    proc.ready()
    try:
        with client_of(home) as c:
            c.append("- written before the kill", workspace="notes", date=day(0))
        t = threading.Thread(target=sync_killed, args=(home,))
        t.start()
        assert wait_for(pushing.exists, 60), proc.logs()
        proc.kill()
        t.join(60)
    finally:
        release.touch()
    proc = Proc(home)
    proc.ready()
    try:
        with client_of(home) as c:
            c.append("- written after the restart", workspace="notes", date=day(0))
            report = c.sync_now(workspace="notes")[0].report
            state = c.sync_status(workspace="notes").workspaces[0]
        assert report["error"] is None and not report["offline"], report
        assert state.waiting is not None and state.waiting["commits"] == 0, state.waiting
    finally:
        proc.p.terminate()
        proc.wait()
    with host("desktop", remote=f"file://{bare}") as b:
        b.sync()
        got = lines_of(b.read(f"memory/{day(0)}.md"))
    assert got == ["- written before the kill", "- written after the restart"]
    assert lines_of((ws / "memory" / f"{day(0)}.md").read_text()) == got
    fsck = subprocess.run(
        ["git", "--git-dir", state.repository or "", "fsck", "--no-dangling"],
        capture_output=True,
        text=True,
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def test_kill_9_while_the_first_sync_makes_its_repository(tmp_path: Path) -> None:
    """A kill at a named step: the moment the first sync's ``git init`` has written the
    repository's HEAD (before its objects folder: git's order), which left a folder git
    calls "not a git repository" and a sync that failed at every start. The next start
    makes the repository again and syncs."""
    for k in range(3):
        remote = f"file://{make_remote(tmp_path / str(k))}"
        home, ws = laptop_home(remote)
        state = default_paths({"MEMORYD_HOME": str(home)}).state_dir
        head = folder_of(state, ws) / "repo.git" / "HEAD"
        proc = Proc(home)
        proc.ready()
        t = threading.Thread(target=sync_killed, args=(home,))
        t.start()
        assert wait_for(head.exists, 60, interval=0), proc.logs()
        proc.kill()
        t.join(60)
        proc = Proc(home)
        proc.ready()
        try:
            with client_of(home) as c:
                c.append(f"- written after restart {k}", workspace="notes", date=day(0))
                report = c.sync_now(workspace="notes")[0].report
        finally:
            proc.p.terminate()
            proc.wait()
        assert report["error"] is None and report["pushed"], report
