"""Sync through the workspace's own repository, when the person chooses it: memoryd's
commits hold memory files only, the person's staging area and other files are left alone,
and a remote that changed their other files is theirs to pull."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sync_util import DAILY, host, make_remote, settle

WHO = {
    f"GIT_{r}_{k}": v
    for r in ("AUTHOR", "COMMITTER")
    for k, v in (("NAME", "person"), ("EMAIL", "person@example.org"))
}


def git(ws: Path, *args: str) -> str:
    env = {**os.environ, **WHO}
    out = subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_sync_through_the_workspaces_own_repository(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    remote = f"file://{bare}"
    with host("laptop") as a, host("desktop", remote=remote) as b:
        git(a.ws, "init", "-q", "-b", "main")
        (a.ws / "src").mkdir()
        (a.ws / "src" / "app.py").write_text("print('hello')\n")
        git(a.ws, "add", "src")
        git(a.ws, "commit", "-qm", "the person's code")
        (a.ws / "src" / "wip.py").write_text("x = 1\n")
        git(a.ws, "add", "src/wip.py")  # staged by the person: stays staged
        a.append("- a note from the laptop")
        with a.client() as c:
            run = c.sync_enable(remote, workspace="notes", repo="workspace")
        assert run.report["pushed"], run.report
        log = git(a.ws, "log", "--format=%an %s", "main")
        assert log.splitlines()[0].startswith("laptop memoryd") and "person" in log
        changed = git(a.ws, "show", "--name-only", "--format=", "main").split()
        assert set(changed) == {DAILY, "memory/.provenance.jsonl"}  # memory files only
        status = git(a.ws, "status", "--porcelain")
        assert status.strip() == "A  src/wip.py", status  # memory files clean, wip staged
        # The desktop's note arrives in the laptop's work tree and history.
        b.append("- a note from the desktop")
        settle(a, b)
        assert "a note from the desktop" in a.read(DAILY)
        assert git(a.ws, "status", "--porcelain").strip() == "A  src/wip.py"
        assert not (b.ws / "src").exists()  # never written into another workspace
        # Someone pushes a change to the person's code: memoryd does not merge it.
        clone = tmp_path / "clone"
        subprocess.run(["git", "clone", "-q", "-b", "main", str(bare), str(clone)], check=True)
        (clone / "src" / "app.py").write_text("print('changed elsewhere')\n")
        git(clone, "commit", "-qam", "code changed elsewhere")
        git(clone, "push", "-q", "origin", "main")
        a.append("- written after")
        with a.client() as c:
            runs = c.sync_now(workspace="notes")
        state = runs[0].status
        assert state is not None and not state.last_sync["ok"]
        assert (
            "outside memory" in state.last_sync["error"]
            and "src/app.py" in state.last_sync["error"]
        )
        assert (a.ws / "src" / "app.py").read_text() == "print('hello')\n"


def test_a_workspace_that_is_a_git_repository_gets_no_commit_by_default(tmp_path: Path) -> None:
    """Without ``repo = workspace`` (the person's consent) memoryd syncs through a repository
    of its own: the person's history, branches, staging area and config stay as they were."""
    bare = make_remote(tmp_path)
    with host("laptop") as a:
        git(a.ws, "init", "-q", "-b", "main")
        (a.ws / "README.md").write_text("my agent\n")
        git(a.ws, "add", "README.md")
        git(a.ws, "commit", "-qm", "the person's first commit")
        before = {
            "refs": git(a.ws, "for-each-ref"),
            "index": (a.ws / ".git" / "index").read_bytes(),
            "config": (a.ws / ".git" / "config").read_text(),
        }
        a.append("- a note that syncs")
        with a.client() as c:
            run = c.sync_enable(f"file://{bare}", workspace="notes")
        assert run.report["pushed"], run.report
        a.append("- and another")
        a.sync()
        assert git(a.ws, "log", "--format=%s", "--all").split("\n")[:-1] == [
            "the person's first commit"
        ]
        after = {
            "refs": git(a.ws, "for-each-ref"),
            "index": (a.ws / ".git" / "index").read_bytes(),
            "config": (a.ws / ".git" / "config").read_text(),
        }
        assert after == before
        repository = Path(a.status()["repository"])
        assert not repository.is_relative_to(a.ws)  # memoryd's own, in its state folder
        log = subprocess.run(
            ["git", "--git-dir", str(bare), "log", "--format=%an", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert set(log.split()) == {"laptop"}


def test_a_sync_that_cannot_run_answers_unavailable_and_says_why(tmp_path: Path) -> None:
    # The config asks for the workspace's own repository, and the folder is none: the
    # daemon serves on, and sync.now says why it cannot sync (not an internal error).
    from daemon_util import DaemonThread, RawConn, short_home

    bare = make_remote(tmp_path)
    with short_home() as home:
        ws = home / "ws"
        (ws / "memory").mkdir(parents=True)
        entry = {"path": str(ws), "name": "notes", "sync_remote": f"file://{bare}"}
        config = {"workspaces": [{**entry, "sync_repo": "workspace"}], "sync": {"host": "a"}}
        with DaemonThread(home, config) as d, RawConn(d.socket_path) as c:
            reply = c.call("sync.now", {"workspace": "notes"})
            assert reply is not None and reply["error"]["code"] == "unavailable", reply
            message = reply["error"]["message"]
            assert message.startswith("sync cannot run: ") and "not a git repository" in message
            assert c.result("sync.status", {"workspace": "notes"})["workspaces"][0]["problem"]
            assert c.result("search", {"query": "anything", "mode": "keyword"})["results"] == []
