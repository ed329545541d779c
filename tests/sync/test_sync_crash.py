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

from daemon_util import Proc, short_tmp
from memoryd_client import MemoryClient
from memoryd_client.errors import ClientError
from sync_util import host, lines_of, make_remote

pytestmark = pytest.mark.timeout(300)

ROUNDS = 6
FILES = 20


def laptop_home(remote: str) -> tuple[Path, Path]:
    home = short_tmp()
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    (home / "config.toml").write_text(
        f'[sync]\nhost = "laptop"\n\n[[workspaces]]\npath = "{ws}"\nname = "notes"\n'
        f'sync_remote = "{remote}"\n'
    )
    return home, ws


def client_of(home: Path) -> MemoryClient:
    return MemoryClient(socket_path=home / "run" / "memoryd.sock", autostart=False, timeout=120)


def day(i: int) -> str:
    return f"2026-02-{i % 28 + 1:02d}"


def test_kill_9_at_random_moments_of_a_sync(tmp_path: Path) -> None:
    rng = random.Random(36)
    remote = f"file://{make_remote(tmp_path)}"
    home, ws = laptop_home(remote)
    written: set[str] = set()
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

            def sync_a() -> None:
                try:
                    with client_of(home) as c:
                        c.sync_now(workspace="notes")
                except (ClientError, OSError):
                    pass  # killed under it

            t = threading.Thread(target=sync_a)
            t.start()
            time.sleep(rng.uniform(0.0, 1.5))
            proc.kill()
            t.join(60)
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
