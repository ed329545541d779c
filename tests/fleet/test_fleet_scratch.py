"""The fleet tests' scratch Postgres says why it cannot start, and leaves nothing behind."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import psycopg
import pytest

from scratch_postgres import PostgresUnavailable, ScratchPostgres, find_bin_dir


@pytest.mark.skipif(os.geteuid() != 0, reason="only as root does the server run as nobody")
def test_binaries_that_nobody_can_reach_only_through_a_closed_folder_run_from_a_copy(
    tmp_path: Path,
) -> None:
    """A checkout under a 0700 folder (/root, mktemp -d) hid pgserver's binaries from the
    server's user: the fleet tests failed from such a clone. Now the install is copied to a
    temp folder open to that user, and the server runs."""
    try:
        real = find_bin_dir()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    hidden = tmp_path / "hidden"
    hidden.mkdir(mode=0o700)
    wheel = real.resolve().parent.parent  # site-packages/pgserver, as a clone's venv has it
    install = hidden / wheel.name / "pginstall"
    for part in ("bin", "lib", "share"):
        shutil.copytree(wheel / "pginstall" / part, install / part, symlinks=True)
    libs = wheel.parent / f"{wheel.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, hidden / libs.name, symlinks=True)
    with ScratchPostgres(install / "bin") as pg:
        assert pg.bin.is_relative_to(pg.folder)  # the copy lives in the server's folder
        dsn = pg.create_database("closed_checkout")
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert not pg.folder.exists()  # removed, the copy with it (no worker's atexit needed)
