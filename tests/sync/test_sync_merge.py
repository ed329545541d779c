"""MEMORY.md edited on both hosts: nothing lost, supersession keys decide, and what they do
not decide is written twice under a visible note (never git's markers)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sync_util import make_remote, remote_files, settle, two_hosts

BASE = (
    "# Memory\n\n- the deploy target is blue <!-- key: deploy -->\n"
    "- lunch is at noon\n- standup at 9\n"
)


def test_both_hosts_edit_the_same_memory_line(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        (a.ws / "MEMORY.md").write_text(BASE)
        a.sync()
        b.sync()
        assert b.read("MEMORY.md") == BASE
        # Both change the keyed line and the same unkeyed line; the laptop first, the
        # desktop a minute later (by its clock: what its commit says).
        (a.ws / "MEMORY.md").write_text(BASE.replace("blue", "green").replace("noon", "one"))
        a.sync()
        b.advance(60)
        (b.ws / "MEMORY.md").write_text(
            BASE.replace("blue", "red").replace("noon", "half past twelve")
        )
        report = b.sync()
        assert report["conflicts"] == {"MEMORY.md": 1}
        settle(a, b)
        merged = b.read("MEMORY.md")
        assert a.read("MEMORY.md") == merged == remote_files(bare)["MEMORY.md"]
        assert "target is red" in merged and "target is green" not in merged  # newer key
        assert "lunch is at one" in merged and "lunch is at half past twelve" in merged
        assert "memoryd sync conflict" in merged and "<<<<<<<" not in merged
        assert "- standup at 9" in merged
        note_line = (
            merged.split("\n").index(
                next(x for x in merged.split("\n") if "memoryd sync conflict" in x)
            )
            + 1
        )
        for h in (a, b):
            assert h.status()["conflicts"] == [{"path": "MEMORY.md", "line": note_line}]
        with b.client() as c:  # the hippocampus report lists it too
            run = c.jobs_run("hippocampus", workspace="notes", dry_run=True)
        assert run.report["sync_conflicts"] == [note_line], run.report
        assert "## Sync conflicts to settle" in run.report["report"]
        # The person settles it: the note goes from status everywhere.
        (a.ws / "MEMORY.md").write_text(BASE.replace("blue", "red").replace("noon", "one"))
        settle(a, b)
        assert b.status()["conflicts"] == []
        assert b.read("MEMORY.md") == BASE.replace("blue", "red").replace("noon", "one")


def test_both_hosts_add_lines_to_memory_md_all_kept(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        (a.ws / "MEMORY.md").write_text(BASE)
        settle(a, b)
        (a.ws / "MEMORY.md").write_text(BASE + "- the laptop learned this\n")
        (b.ws / "MEMORY.md").write_text(BASE + "- the desktop learned that\n")
        settle(a, b)
        merged = a.read("MEMORY.md")
        assert merged == b.read("MEMORY.md")
        assert "the laptop learned this" in merged and "the desktop learned that" in merged
        assert "memoryd sync conflict" not in merged


def test_a_merge_by_hand_in_the_repository_uses_memoryds_rules(tmp_path: Path) -> None:
    """The merge drivers in the repository's own config: a person's `git merge` there
    merges a daily note as a union, without markers."""
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        a.append("- first line")
        settle(a, b)
        a.append("- from the laptop")
        a.sync()
        b.append("- from the desktop")
        repo = b.status()["repository"]
        git = ["git", "--git-dir", repo, "--work-tree", str(b.ws)]
        subprocess.run([*git, "fetch", "-q", "origin"], check=True)
        # Commit the desktop's line by hand, then merge the laptop's by hand.
        subprocess.run([*git, "add", "memory"], check=True)
        who = {"NAME": "person", "EMAIL": "person@example.org"}
        env = dict(os.environ)
        env.update({f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in who.items()})
        subprocess.run([*git, "commit", "-qm", "by hand"], check=True, env=env)
        merge = subprocess.run(
            [*git, "merge", "--no-edit", "origin/main"], capture_output=True, text=True, env=env
        )
        assert merge.returncode == 0, merge.stdout + merge.stderr
        day = b.read("memory/2026-03-02.md")
        assert "from the laptop" in day and "from the desktop" in day and "<<<<<<<" not in day
