"""``memoryd --version``, ``--help`` and ``stop`` answer without loading the daemon's
machinery: no asyncio, no structlog, no SQLite or numpy (only ``run`` and ``doctor`` need
them), so they start as fast as memctl does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = {"asyncio", "structlog", "apsw", "numpy", "watchfiles", "croniter", "openai"}


def loaded_by(argv: list[str], cwd: Path) -> tuple[set[str], str]:
    code = (
        "import json, sys\n"
        "from memoryd.cli import main\n"
        "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
        "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=True,
    )
    exit_code, modules = json.loads(done.stdout.splitlines()[-1])
    return set(modules), f"exit {exit_code}: {done.stdout}{done.stderr}"


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["stop", "--help"], ["stop"]])
def test_version_help_and_stop_load_nothing_heavy(argv: list[str], tmp_path: Path) -> None:
    # stop, with nothing listening on its socket: "not running", exit 0.
    if argv == ["stop"]:
        argv = ["stop", "--socket", str(tmp_path / "memoryd.sock")]
    loaded, said = loaded_by(argv, tmp_path)
    assert loaded.isdisjoint(HEAVY), (sorted(loaded & HEAVY), said)
    assert "exit 0" in said and "memoryd_client" in loaded  # the check sees our imports
