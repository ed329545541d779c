"""A commit of one file when the workspace is a git repository (the ``git`` CLI, if any).

Only the named file goes into the commit (``git commit --only``): whatever else the person
has staged stays staged and uncommitted. Hooks and signing are skipped (a daemon cannot
answer a passphrase prompt), and the commit is authored by memoryd. Every failure becomes
a note for the run report; the ``memory/.history`` copy is the backup that must succeed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

TIMEOUT_S: Final = 30.0
_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "memoryd",
    "GIT_AUTHOR_EMAIL": "memoryd@localhost",
    "GIT_COMMITTER_NAME": "memoryd",
    "GIT_COMMITTER_EMAIL": "memoryd@localhost",
}


class GitError(Exception):
    pass


class Git:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.exe = shutil.which("git")

    def _run(self, *args: str) -> str:
        assert self.exe is not None
        env = {**os.environ, **_IDENTITY, "GIT_TERMINAL_PROMPT": "0"}
        try:
            proc = subprocess.run(
                [self.exe, "-C", str(self.root), "-c", "commit.gpgsign=false", *args],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                env=env,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitError(f"git {args[0]}: {exc}") from None
        if proc.returncode != 0:
            detail = " ".join((proc.stderr or proc.stdout).split())[:200]
            raise GitError(f"git {args[0]} failed: {detail}")
        return proc.stdout.strip()

    def repository(self) -> str | None:
        """None when the workspace is a git work tree's root, else why not (a note).

        A workspace inside a larger repository (a dotfiles repo holding the home folder)
        is not committed to: that history is not the workspace's.
        """
        if self.exe is None:
            return "git not found: kept memory/.history only"
        try:
            top = self._run("rev-parse", "--show-toplevel")
        except GitError:
            return "not a git repository"
        if Path(top).resolve() != self.root.resolve():
            return f"inside the git repository {top}, not its root: not committed"
        return None

    def commit_file(self, rel: str, message: str) -> str | None:
        """Commit ``rel`` as it is on disk; the short hash, or None when it had no change."""
        if not self._run("status", "--porcelain", "--", rel):
            return None
        self._run("add", "--", rel)
        self._run("commit", "--no-verify", "--only", "-m", message, "--", rel)
        return self._run("rev-parse", "--short", "HEAD")
