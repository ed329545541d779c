"""memoryd's own repository cut short while it was being made (a kill -9 during the first
sync set-up) is made again at the next start, never left for the person to repair.

``git init`` writes the templates, ``refs/``, HEAD, then ``config``, and ``objects/`` last; a
kill in between leaves a HEAD in a folder git does not call a repository ("not a git
repository"). Each state below is such a kill's (or one during memoryd's own set-up after
it); the next ``ensure`` makes the repository whole and the sync works.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

from memoryd.sync.engine import Engine
from memoryd.sync.git import Git, Identity
from memoryd.sync.paths import Scope
from memoryd.sync.repo import MADE, Repo

DAY = "memory/2026-03-02.md"
# What a kill at each step of `git init --bare` (then of memoryd's set-up) leaves out.
CUT_SHORT = {
    "templates only": ("HEAD", "refs", "config", "objects"),
    "HEAD, no config, no objects": ("config", "objects"),
    "HEAD and config, no objects": ("objects",),
    "git init done, memoryd's config not": (),
}


def _unlocked(paths: Iterable[Path]) -> contextlib.AbstractContextManager[object]:
    return contextlib.nullcontext()


def _engine(tmp: Path, remote: Path) -> Engine:
    ws = tmp / "ws"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    git = Git(tmp / "sync" / "repo.git", ws, Identity("laptop", "laptop@localhost", lambda: 1e9))
    repo = Repo(git, "main")
    repo.clear_stale_locks()
    repo.ensure(f"file://{remote}")
    return Engine(ws, repo, Scope(), "laptop", _unlocked, lambda: 1e9)


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=False
    )


def _remote(tmp: Path) -> Path:
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return remote


@pytest.mark.parametrize("state", sorted(CUT_SHORT))
def test_a_repository_cut_short_while_made_is_made_again(tmp_path: Path, state: str) -> None:
    remote = _remote(tmp_path)
    gd = tmp_path / "sync" / "repo.git"
    gd.parent.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(gd)], check=True)
    for name in CUT_SHORT[state]:
        path = gd / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    (gd / "config.lock").write_text("")  # the killed git's lock, too
    e = _engine(tmp_path, remote)
    (e.root / DAY).write_text("# 2026-03-02\n\n- written before the sync\n")
    report = e.sync()
    assert report.pushed and report.error is None and report.offline is None, report
    assert (gd / MADE).exists()
    assert _git(gd, "config", "core.bare").stdout.strip() == "false"
    assert _git(gd, "config", "core.worktree").stdout.strip() == str(e.root)
    fsck = _git(gd, "fsck", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    shown = _git(remote, "show", f"main:{DAY}")
    assert shown.stdout.endswith("- written before the sync\n"), shown.stderr


def test_a_repository_made_whole_keeps_its_history_and_is_not_made_again(
    tmp_path: Path,
) -> None:
    """Made whole (by this version, or by an earlier one that wrote no ``MADE`` file): the
    next start keeps its branch; once ``MADE`` is there, no ``git init`` runs again."""
    remote = _remote(tmp_path)
    e = _engine(tmp_path, remote)
    (e.root / DAY).write_text("# 2026-03-02\n\n- synced once\n")
    e.sync()
    gd, head = e.repo.git.git_dir, e.repo.head()
    assert head is not None
    (gd / MADE).unlink()  # as an earlier version left it
    assert _engine(tmp_path, remote).repo.head() == head
    (gd / "description").unlink()  # `git init` would write it again
    assert _engine(tmp_path, remote).repo.head() == head
    assert not (gd / "description").exists()


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_private_indexes_a_killed_daemon_left_are_removed_at_start_and_no_live_ones(
    tmp_path: Path,
) -> None:
    import os

    remote = _remote(tmp_path)
    e = _engine(tmp_path, remote)
    (e.root / DAY).write_text("# 2026-03-02\n\n- synced once\n")
    e.sync()
    gd = e.repo.git.git_dir
    live = subprocess.Popen(["sleep", "60"])  # another daemon's, still running
    try:
        dead, names = _dead_pid(), {}
        for who, pid in (("dead", dead), ("live", live.pid), ("own", os.getpid())):
            names[who] = f"memoryd-index-{pid}"
            (gd / names[who]).write_bytes(b"DIRC half written")
            (gd / f"{names[who]}.lock").write_bytes(b"")
        (gd / "memoryd-index-notapid").write_bytes(b"")  # not memoryd's pattern: kept
        e = _engine(tmp_path, remote)  # a start
        left = {p.name for p in gd.iterdir() if p.name.startswith("memoryd-index-")}
        live_name = names["live"]
        assert left == {live_name, f"{live_name}.lock", "memoryd-index-notapid"}
        (e.root / DAY).write_text("# 2026-03-02\n\n- synced once\n- and twice\n")
        report = e.sync()
        assert report.pushed and report.error is None, report
        assert {p.name for p in gd.iterdir() if p.name.startswith("memoryd-index-")} == left
    finally:
        live.kill()
        live.wait()


def test_the_merge_attributes_are_written_whole_beside_the_persons_own(tmp_path: Path) -> None:
    from memoryd.sync.workspace_repo import ATTRIBUTES, _merge_drivers

    remote = _remote(tmp_path)
    e = _engine(tmp_path, remote)
    info = e.repo.git.git_dir / "info"
    info.mkdir(exist_ok=True)
    # The person's own line, and half of ours as an earlier version's kill left it.
    (info / "attributes").write_text("*.png binary\n" + ATTRIBUTES[: len(ATTRIBUTES) // 2])
    before = (info / "attributes").stat().st_ino
    _merge_drivers(e.repo.git)
    text = (info / "attributes").read_text()
    assert text.startswith("*.png binary\n") and text.endswith(ATTRIBUTES)
    assert (info / "attributes").stat().st_ino != before  # replaced, never written in place
    assert sorted(p.name for p in info.iterdir()) == ["attributes", "exclude"]
    _merge_drivers(e.repo.git)  # there already: left as it is
    assert (info / "attributes").read_text() == text
