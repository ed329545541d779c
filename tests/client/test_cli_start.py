"""memctl's start does only what its command needs: ``--version`` loads no command module,
and a command of a group parses with that group's parser alone exactly as with the whole."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from memoryd_client.cli import build_parser, command_names, main
from memoryd_client.cli._parser import _GROUPS


def _loaded_after(code: str) -> set[str]:
    code += "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_version_loads_neither_the_parser_nor_the_client(
    capsys: pytest.CaptureFixture[str],
) -> None:
    loaded = _loaded_after("from memoryd_client.cli import main\nmain(['--version'])")
    assert loaded.isdisjoint(
        {"argparse", "memoryd_client.client", "memoryd_client.cli._parser", "dataclasses"}
    ), sorted(loaded)
    assert main(["--version"]) == 0
    fast = capsys.readouterr().out
    with pytest.raises(SystemExit):  # the parser's own --version (after another option)
        build_parser().parse_args(["-h", "--version"][1:])
    assert fast.startswith("memctl ") and capsys.readouterr().out == fast


def test_every_grouped_command_is_in_the_group_its_parser_builds() -> None:
    for name, _group in _GROUPS.items():
        assert any(c.split()[0] == name for c in command_names(build_parser(name)))


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "--json", "-w", "alice", "-n", "3", "lisbon", "flight"],
        ["search", "--all", "--mode", "keyword", "--since", "2024-01-01", "x"],
        ["status", "--json"],
        ["get", "memory/2024-05-01.md", "--from", "2"],
        ["append", "-w", "a", "a note"],
        ["reindex", "--wait"],
        ["workspace", "add", "/tmp/x", "--name", "x"],
        ["workspace", "list", "--json"],
        ["fleet", "status"],
        ["jobs", "run", "retention", "--dry-run"],
    ],
)
def test_a_group_alone_parses_as_the_whole_parser(argv: list[str]) -> None:
    alone = build_parser(argv[0]).parse_args(argv)
    whole = build_parser().parse_args(argv)
    assert vars(alone) == vars(whole)
    assert isinstance(alone, argparse.Namespace) and alone.handler is whole.handler


def test_an_unknown_command_is_refused_with_every_choice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serch", "x"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "search" in err and "workspace" in err
