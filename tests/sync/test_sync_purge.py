"""A purge on a synced workspace: memoryd's history is rewritten without the lines and
force-pushed (said first, in the dry run); the other host drops them and its old history;
an unreachable remote gets the force-push at a later sync."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sync_util import DAILY, make_remote, remote_files, remote_history_text, settle, two_hosts

SECRET = "- the backup passphrase is correct horse battery staple"


def _all_objects_text(git_dir: str | Path) -> str:
    return remote_history_text(Path(git_dir))


def _reachable_text(git_dir: Path) -> str:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "log", "-p", "--all", "--format=%H"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def _purge(h: object, dry_run: bool) -> dict[str, object]:
    text = h.read(DAILY)  # type: ignore[attr-defined]
    n = text.split("\n").index(SECRET) + 1
    with h.client() as c:  # type: ignore[attr-defined]
        return c.call(
            "forget",
            {
                "workspace": "notes",
                "path": DAILY,
                "lines": str(n),
                "purge": True,
                "dry_run": dry_run,
            },
        )


def test_purge_rewrites_the_sync_history_and_force_pushes(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        a.append("- an ordinary note")
        a.append(SECRET)
        settle(a, b)
        b.append("- the desktop's note")
        settle(a, b)
        assert SECRET in _reachable_text(bare)
        preview = _purge(a, dry_run=True)
        assert preview["sync"]["remote"] == f"file://{bare}"
        assert "force-pushed" in preview["sync"]["history"]
        assert SECRET in a.read(DAILY)  # a dry run changes nothing
        answer = _purge(a, dry_run=False)
        assert answer["sync"]["done"] and answer["sync"]["force_pushed"], answer
        assert SECRET not in a.read(DAILY)
        assert SECRET not in _reachable_text(bare)  # every commit the remote serves
        subprocess.run(["git", "--git-dir", str(bare), "gc", "-q", "--prune=now"], check=True)
        assert SECRET not in _all_objects_text(bare)  # once the server collects
        assert "correct horse" not in _all_objects_text(a.status()["repository"])
        # The desktop adopts the rewritten history and drops the line and its old history.
        report = b.sync()
        assert report["rewritten"] and report["forgotten"] == {DAILY: 1}, report
        assert SECRET not in b.read(DAILY) and "the desktop's note" in b.read(DAILY)
        assert "correct horse" not in _all_objects_text(b.status()["repository"])
        changes = b.ws / "memory" / ".history" / "changes"
        kept = [p.read_text() for p in changes.rglob("*.before")] if changes.exists() else []
        assert not any("correct horse" in k for k in kept)  # no pre-image of a purge
        # Sync goes on as before.
        b.append("- after the purge")
        settle(a, b)
        assert "after the purge" in a.read(DAILY) and SECRET not in remote_files(bare)[DAILY]


def test_purge_with_the_remote_down_force_pushes_later(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        a.append(SECRET)
        settle(a, b)
        away = bare.with_name("away.git")
        bare.rename(away)
        answer = _purge(a, dry_run=False)
        assert not answer["sync"]["done"] and answer["sync"]["pending"]
        assert "correct horse" not in _all_objects_text(a.status()["repository"])
        assert a.status()["purge_pending"]["lines"] == 1
        away.rename(bare)
        # Meanwhile the desktop pushes on the old history; the laptop's next sync merges
        # it, keeps the line out, rewrites again and force-pushes.
        b.append("- pushed before the purge arrived")
        b.sync()
        a.sync()
        assert a.status()["purge_pending"] is None
        assert SECRET not in _reachable_text(bare)
        b.sync()
        for h in (a, b):
            assert SECRET not in h.read(DAILY) and "pushed before the purge" in h.read(DAILY)
