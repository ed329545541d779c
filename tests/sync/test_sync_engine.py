"""The sync engine in process (two work trees, one bare remote, no daemon): the commit step
after a pull runs no git when nothing else wrote, and still commits what anyone else wrote."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterable
from pathlib import Path

from memoryd.sync.engine import Engine
from memoryd.sync.git import Git, Identity
from memoryd.sync.paths import Scope
from memoryd.sync.repo import Repo
from memoryd.sync.snapshot import UNKNOWN, seen_after_write, stamps

DAY = "memory/2026-03-02.md"


def _unlocked(paths: Iterable[Path]) -> contextlib.AbstractContextManager[object]:
    return contextlib.nullcontext()


def engine(tmp: Path, name: str, remote: Path) -> Engine:
    ws = tmp / name
    (ws / "memory").mkdir(parents=True)
    git = Git(tmp / f"{name}.git", ws, Identity(name, f"{name}@localhost", lambda: 1e9))
    repo = Repo(git, "main")
    repo.ensure(f"file://{remote}")
    return Engine(ws, repo, Scope(), name, _unlocked, lambda: 1e9)


def two(tmp: Path) -> tuple[Engine, Engine]:
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return engine(tmp, "laptop", remote), engine(tmp, "desktop", remote)


def test_the_step_after_a_pull_runs_no_git_and_still_sees_a_later_write(tmp_path: Path) -> None:
    a, b = two(tmp_path)
    (a.root / DAY).write_text("# 2026-03-02\n\n- from the laptop\n")
    a.sync()
    b.sync()
    assert b.sync().pulled == 0
    with open(a.root / DAY, "a") as f:
        f.write("- more from the laptop\n")
    a.sync()
    report = b.sync()
    assert report.pulled == 1 and report.written == [DAY]
    assert b.commit().skipped  # the merge wrote exactly the commit's bytes: no git run
    with open(b.root / DAY, "a") as f:
        f.write("- an agent on the desktop\n")
    snap = b.commit()
    assert not snap.skipped and snap.changed == [DAY]
    b.sync()
    a.sync()
    assert (a.root / DAY).read_text() == (b.root / DAY).read_text()
    assert "an agent on the desktop" in (a.root / DAY).read_text()


def test_a_file_that_is_not_what_the_merge_wrote_keeps_no_stamp(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / DAY).write_text("- merged\n- appended by an agent meanwhile\n")
    (ws / "MEMORY.md").write_text("- as merged\n")
    (ws / "USER.md").write_text("- holds a secret\n")
    seen = stamps(ws, Scope())
    written = {
        DAY: b"- merged\n",
        "MEMORY.md": b"- as merged\n",
        "USER.md": b"- holds a secret\n",
        "memory/gone.md": None,
    }
    after = seen_after_write(ws, seen, written, held={"USER.md"})
    assert after[DAY] == UNKNOWN  # someone else's bytes too: the next step commits them
    assert after["MEMORY.md"] == seen["MEMORY.md"]
    assert after["USER.md"] == UNKNOWN  # held back for a secret: the step decides again
    assert "memory/gone.md" not in after
    (ws / "memory" / "gone.md").write_text("- written again\n")
    assert seen_after_write(ws, seen, written, set())["memory/gone.md"] == UNKNOWN
