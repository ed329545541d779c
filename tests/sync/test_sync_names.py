"""A file name that is not valid UTF-8 (Linux allows any bytes but ``/`` and NUL): git lists
it, sync commits, pushes, pulls and merges it under its own bytes, and every answer that
names it (a sync's report, ``sync.status``'s held files, conflicts and files waiting) shows
it as the rest of the daemon does (files/layout.display_name: each bad byte as ``\\xNN``),
where msgpack could not pack the name itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sync_util import host, make_remote, two_hosts

NOTE = b"memory/caf\xe9.md"  # Latin-1's e-acute: not UTF-8
SECRET = b"memory/cl\xe9s.md"
WAITING = b"memory/\xff.md"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
BASE = "# Caf\u00e9\n\n- opens at noon\n- closes at six\n"


def shown(name: bytes) -> str:
    return name.decode("utf-8", "backslashreplace")


def write(ws: Path, name: bytes, text: str) -> None:
    with open(os.path.join(os.fsencode(ws), name), "w") as f:
        f.write(text)


def read(ws: Path, name: bytes) -> str:
    with open(os.path.join(os.fsencode(ws), name)) as f:
        return f.read()


def remote_names(bare: Path) -> set[bytes]:
    out = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "-z", "--name-only", "main"],
        capture_output=True,
        check=True,
    ).stdout
    return {name for name in out.split(b"\0") if name}


def test_a_name_that_is_not_utf8_travels_and_every_answer_shows_it(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        write(a.ws, NOTE, BASE)
        assert a.sync()["pushed"]
        assert NOTE in remote_names(bare)  # its own bytes, not the shown name
        report = b.sync()
        assert report["written"] == [shown(NOTE)]
        assert read(b.ws, NOTE) == BASE

        # Both change the same line: the second to sync merges it with a conflict note.
        write(a.ws, NOTE, BASE.replace("noon", "one"))
        a.sync()
        write(b.ws, NOTE, BASE.replace("noon", "two"))
        report = b.sync()
        assert report["written"] == [shown(NOTE)] and report["conflicts"] == {shown(NOTE): 1}
        status = b.status()
        assert status["conflicts"] == [{"path": shown(NOTE), "line": 3}]

        # A secret in such a file holds it back; one not synced yet waits.
        write(b.ws, SECRET, f"- my token is {TOKEN}\n")
        report = b.sync()
        assert report["held"] == [{"path": shown(SECRET), "kinds": ["github_token"]}]
        write(b.ws, WAITING, "- not synced yet\n")
        status = b.status()
        assert status["held"] == [{"path": shown(SECRET), "kinds": ["github_token"]}]
        assert status["waiting"]["files"] == [shown(SECRET), shown(WAITING)]
        assert SECRET not in remote_names(bare)


def test_a_status_kept_from_before_shows_the_name_too(tmp_path: Path) -> None:
    """status.json keeps the last report across restarts: read back, it is shown alike."""
    bare = make_remote(tmp_path)
    with host("laptop") as a:
        with a.client() as c:
            c.sync_enable(f"file://{bare}", workspace="notes")
        write(a.ws, SECRET, f"- my token is {TOKEN}\n")
        a.sync()
        status = a.status()
        assert status["held"] == [{"path": shown(SECRET), "kinds": ["github_token"]}]
        assert status["last_sync"]["report"]["held"] == status["held"]
