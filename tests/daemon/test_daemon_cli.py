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
    assert "exit 0" in said and "memoryd" in loaded  # the check sees our imports


RUN_ARGV = [
    ["run"],
    ["run", "--socket", "/x/memoryd.sock"],
    ["run", "--socket=/x/memoryd.sock", "--config", "c.toml"],
    ["run", "--config=c.toml", "--log-level", "debug", "--socket", "s"],
    ["run", "--log-level=critical"],
]
# argparse's, each: an abbreviation, a repeat, a missing or empty value, a value that looks
# like an option, a bad level, another command, help, a stray word.
ARGPARSE_ARGV = [
    ["run", "--sock", "s"],
    ["run", "--socket", "a", "--socket", "b"],
    ["run", "--socket"],
    ["run", "--socket="],
    ["run", "--socket", "-5"],
    ["run", "--socket=--x"],
    ["run", "--log-level", "DEBUG"],
    ["run", "--log-level", "loud"],
    ["run", "--help"],
    ["run", "x"],
    ["run", "--"],
    ["stop"],
    ["--version"],
    [],
]


@pytest.mark.parametrize("argv", RUN_ARGV + ARGPARSE_ARGV)
def test_run_is_read_without_argparse_as_argparse_reads_it(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd import cli

    monkeypatch.setenv("MEMORYD_LOG_LEVEL", "error")
    plain = cli._plain_run(argv)
    assert (plain is not None) == (argv in RUN_ARGV)
    if plain is not None:
        assert vars(plain) == vars(cli._parser().parse_args(argv))


def test_a_plain_run_imports_no_argparse(tmp_path: Path) -> None:
    # A config file that does not exist: the run stops before the daemon starts.
    argv = ["run", "--config", str(tmp_path / "none.toml"), "--socket", str(tmp_path / "s")]
    loaded, said = loaded_by(argv, tmp_path)
    assert "exit 3" in said and "memoryd_client" in loaded, said
    assert "argparse" not in loaded, said
