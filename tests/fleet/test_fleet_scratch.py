"""The fleet tests' scratch Postgres says why it cannot start, and leaves nothing behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from scratch_postgres import PostgresUnavailable, ScratchPostgres, find_bin_dir


@pytest.mark.skipif(os.geteuid() != 0, reason="only as root does the server run as nobody")
def test_binaries_that_nobody_cannot_reach_make_it_unavailable_saying_why(tmp_path: Path) -> None:
    """A checkout under a 0700 folder (/root, mktemp -d) hid pgserver's binaries from the
    server's user: a PermissionError from subprocess, so the fleet tests errored instead of
    skipping, with no word of the cause."""
    try:
        real = find_bin_dir()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    hidden = tmp_path / "hidden"
    hidden.mkdir(mode=0o700)
    (hidden / "bin").symlink_to(real, target_is_directory=True)
    temp = Path(tempfile.gettempdir())
    before = set(temp.glob("memoryd-pg-*"))
    with (
        pytest.raises(PostgresUnavailable, match=r"user nobody cannot run .*initdb"),
        ScratchPostgres(hidden / "bin"),
    ):
        pass
    assert set(temp.glob("memoryd-pg-*")) == before  # its folder is removed
