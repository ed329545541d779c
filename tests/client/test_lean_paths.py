"""memctl's lean paths: ``memctl search --json`` and ``memctl hook`` run without the parser,
the result types, dataclasses, pathlib or typing, and answer exactly what the full path
(the parser and the typed client) answers, against a real daemon."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import DaemonThread
from memoryd_client import MemoryClient
from memoryd_client.agents.project import project_key
from memoryd_client.cli._main import run_parsed
from memoryd_client.cli._search_json import search_json

pytestmark = pytest.mark.timeout(120)

# What the parser and the typed client load; a lean path that loads one of them pays for it.
HEAVY = {
    "argparse",
    "typing",
    "dataclasses",
    "inspect",
    "pathlib",
    "platformdirs",
    "memoryd_client.types",
    "memoryd_client._wire",
    "memoryd_client.client",
    "memoryd_client.cli._parser",
    "memoryd_client.cli._commands",
}


@pytest.fixture
def two(md_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[DaemonThread, Path]]:
    """A daemon with workspaces alpha and beta; memctl's environment points at it."""
    for name, lines in {
        "alpha": ["- The billing schema keeps invoices immutable.", "- Priya cuts releases."],
        "beta": ["- Billing moved to the new schema in March.", "- Dana owns billing."],
    }.items():
        ws = md_home / name
        (ws / "memory").mkdir(parents=True)
        (ws / "MEMORY.md").write_text(f"# Memory of {name}\n\n" + "\n".join(lines) + "\n")
        (ws / "memory" / "2025-03-12.md").write_text("# 2025-03-12\n\n- Billing review.\n")
    for key in [k for k in os.environ if k.startswith(("MEMORYD_", "MEMCTL_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("MEMORYD_HOME", str(md_home))
    monkeypatch.chdir(md_home)  # in no workspace: a search without -w spans both
    with DaemonThread(md_home) as d:
        with MemoryClient(d.socket_path) as c:
            for name in ("alpha", "beta"):
                c.workspace_add(md_home / name, name, wait=True)
        yield d, md_home


def _both(argv: list[str]) -> tuple[tuple[int | None, str, str], tuple[int, str, str]]:
    """(exit code, stdout, stderr) of the lean path and of the full path for ``argv``."""
    outs = [io.StringIO() for _ in range(4)]
    lean = search_json(argv, outs[0], outs[1])
    full = run_parsed(argv, outs[2], outs[3])
    return (lean, outs[0].getvalue(), outs[1].getvalue()), (
        full,
        outs[2].getvalue(),
        outs[3].getvalue(),
    )


def _without_timings(out: str) -> object:
    """The JSON printed, without what differs from one search to the next."""
    obj = json.loads(out)
    if isinstance(obj, dict):
        for key in ("took_ms", "waited_ms"):
            obj.pop(key, None)
    return obj


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "--json", "-w", "alpha", "billing", "schema"],
        ["search", "billing", "schema", "--json", "--workspace=alpha"],
        ["search", "--json", "-n", "1", "--mode", "keyword", "-w", "beta", "billing"],
        ["search", "--json", "--min-score", "0.2", "--source", "memory", "-w", "alpha", "billing"],
        [
            "search",
            "--json",
            "--since",
            "2025-03-01",
            "--until=2025-03-31",
            "-w",
            "alpha",
            "review",
        ],
        ["search", "--json", "--project", "github.com/acme/app", "--include-superseded", "billing"],
        ["search", "--json", "--query", "who owns billing", "--fusion", "rrf", "--timeout", "9"],
        ["search", "--json", "billing"],  # no -w, the cwd in neither: both workspaces merged
        ["search", "--json", "-n", "2", "billing", "schema"],
        ["search", "--json", "-w", "alpha", "the", "and", "of"],  # stop words: a notice
        ["search", "--json", "-w", "nosuch", "billing"],  # the daemon's error, exit 1
        ["search", "--json", "--socket", "/tmp/no-such-memoryd.sock", "billing"],  # exit 3
    ],
)
def test_search_json_prints_what_the_full_path_prints(
    two: tuple[DaemonThread, Path], argv: list[str]
) -> None:
    (code, out, err), (full_code, full_out, full_err) = _both(argv)
    assert code is not None, "the lean path left this to the parser"
    assert (code, err) == (full_code, full_err)
    assert _without_timings(out) == _without_timings(full_out)
    assert out.endswith("}\n") and json.loads(out)


def test_search_json_in_a_workspace_folder_searches_that_workspace(
    two: tuple[DaemonThread, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(two[1] / "beta" / "memory")
    (code, out, err), full = _both(["search", "--json", "billing"])
    assert (code, out and _without_timings(out), err) == (
        full[0],
        _without_timings(full[1]),
        full[2],
    )
    assert {hit["path"] for hit in json.loads(out)["results"]} and "workspaces" not in out


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "--json", "-h"],
        ["search", "--json", "--all", "billing"],
        ["search", "--json", "--fleet", "billing"],
        ["search", "--json", "-"],  # the query from stdin
        ["search", "--json"],  # no query: the parser's usage error
        ["search", "--json", "billing", "-n", "3", "schema"],  # words split by an option
        ["search", "--json", "--max", "3", "billing"],  # an abbreviation the parser allows
        ["search", "--json", "-n3", "billing"],
        ["search", "--json", "-n", "0", "billing"],
        ["search", "--json", "--min-score", "2", "billing"],
        ["search", "--json", "--mode", "fuzzy", "billing"],
        ["search", "--json", "--since", "March", "billing"],
        ["search", "--json", "-w", "--mode", "keyword", "billing"],
        ["search", "--json", "-q", "billing", "schema"],  # the query twice
        ["search", "--json=yes", "billing"],
    ],
)
def test_what_the_lean_path_does_not_read_as_the_parser_goes_to_the_parser(
    argv: list[str],
) -> None:
    assert search_json(argv, io.StringIO(), io.StringIO()) is None


def _loaded_by(
    argv: list[str], env: dict[str, str], stdin: str = "", cwd: Path | None = None
) -> set[str]:
    """The modules a fresh ``memctl ARGV`` process holds when it ends."""
    code = (
        "import sys\n"
        "from memoryd_client._memctl import main\n"
        f"main({argv!r})\n"
        "sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert proc.stdout, proc.stderr  # it answered (the check sees a served request)
    return set(proc.stderr.rsplit("MODULES ", 1)[1].split())


def test_search_json_and_the_prompt_hook_load_neither_the_parser_nor_the_result_types(
    two: tuple[DaemonThread, Path],
) -> None:
    env = dict(os.environ)
    searched = _loaded_by(["search", "--json", "-w", "alpha", "billing", "schema"], env)
    assert searched.isdisjoint(HEAVY), sorted(searched & HEAVY)
    event = {"session_id": "s", "cwd": str(two[1] / "alpha"), "prompt": "billing schema"}
    hooked = _loaded_by(
        ["hook", "claude-code", "user-prompt-submit"], env, json.dumps(event), cwd=two[1]
    )
    assert hooked.isdisjoint(HEAVY), sorted(hooked & HEAVY)
    # the check sees what the paths do load
    assert {"msgpack", "memoryd_client._connection"} <= searched & hooked


def test_the_prompt_hook_adds_what_the_typed_clients_recall_answers(
    two: tuple[DaemonThread, Path],
) -> None:
    d, home = two
    cwd = home / "beta"
    event = {"session_id": "s", "cwd": str(cwd), "prompt": "who owns billing"}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "memctl"), "hook", "claude-code", "user-prompt-submit"],
        input=json.dumps(event),
        env={**os.environ, "MEMCTL_NO_AUTOSTART": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    with MemoryClient(d.socket_path) as c:
        block = c.recall("who owns billing", workspace=str(cwd), project=project_key(cwd)).markdown
    assert block and "Dana owns billing" in block
    added = json.loads(proc.stdout)["hookSpecificOutput"]
    assert added == {"hookEventName": "UserPromptSubmit", "additionalContext": block}
