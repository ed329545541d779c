"""A git the daemon runs dies with it (kill -9): through util-linux's setpriv where there is
one (no fork of the daemon per git), else through a preexec function."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_util import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

# What the daemon does: one git through memoryd's Git, here an alias that says its pid and
# waits (its shell's parent is the git process itself).
CHILD = """
import sys, time
from pathlib import Path
from memoryd.sync.git import Git, Identity
git_dir, said, mv, sleep = Path(sys.argv[1]), *sys.argv[2:]
git = Git(git_dir, None, Identity("t", "t@example.org", time.time))
git.run("-c", f"alias.hang=!echo $PPID $$ > {said}.tmp; {mv} {said}.tmp {said}; exec {sleep} 60",
        "hang")
"""


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie nobody reaps counts as gone


@pytest.mark.parametrize("setpriv", [True, False], ids=["setpriv", "preexec"])
def test_a_git_child_is_killed_with_the_daemon(tmp_path: Path, setpriv: bool) -> None:
    if setpriv and shutil.which("setpriv") is None:
        pytest.skip("util-linux's setpriv is not installed")
    env = dict(os.environ)
    if not setpriv:  # a PATH where git is and setpriv is not
        only_git = tmp_path / "bin"
        only_git.mkdir()
        git = shutil.which("git")
        assert git is not None
        (only_git / "git").symlink_to(git)
        env["PATH"] = str(only_git)
    git_dir, said = tmp_path / "repo.git", tmp_path / "pids"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    tools = [shutil.which("mv"), shutil.which("sleep")]  # by their paths: PATH may lack them
    assert None not in tools
    daemon = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(git_dir), str(said), *map(str, tools)], env=env
    )
    pids: list[int] = []
    try:
        assert wait_for(said.exists, 60), "the git child did not start"
        pids = [int(p) for p in said.read_text().split()]
        git_pid = pids[0]
        assert Path(f"/proc/{git_pid}/comm").read_text().strip() == "git"
        daemon.kill()
        daemon.wait(30)
        assert wait_for(lambda: _gone(git_pid), 30), "git outlived the daemon"
    finally:
        daemon.kill()
        daemon.wait(30)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
