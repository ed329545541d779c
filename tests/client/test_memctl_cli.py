"""memctl as people and agents meet it: the real executable against a real ``memoryd run``
(keyword only), two workspaces registered, every outcome checked by exit code and output."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memoryd_client import DaemonNotRunning, MemoryClient
from memoryd_client.cli import EXIT_ERROR, EXIT_OK, EXIT_USAGE

pytestmark = pytest.mark.timeout(120)

MEMCTL = str(Path(sys.executable).parent / "memctl")
MEMORYD = str(Path(sys.executable).parent / "memoryd")


@dataclass
class Setup:
    root: Path
    env: dict[str, str]
    alice: Path
    bob: Path

    def run(
        self, *args: str, stdin: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MEMCTL, *args],
            env=self.env,
            cwd=cwd or self.root,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=60,
        )

    def json(self, *args: str, stdin: str | None = None) -> Any:
        proc = self.run(*args, "--json", stdin=stdin)
        assert proc.returncode == EXIT_OK, proc
        return json.loads(proc.stdout)


def workspace(root: Path, name: str, note: str) -> Path:
    ws = root / name
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(f"# Memory of {name}\n")
    (ws / "memory" / "2025-01-02.md").write_text(note)
    return ws


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    root = Path(tempfile.mkdtemp(prefix="mcli-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(root / "home"), MEMORYD_EMBEDDING_PROVIDER="none")
    log = open(root / "daemon.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [MEMORYD, "run"], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        sock = root / "home" / "run" / "memoryd.sock"
        deadline = time.monotonic() + 20
        while True:
            try:
                with MemoryClient(sock, timeout=5) as c:
                    c.connect()
                break
            except DaemonNotRunning:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    root / "daemon.log"
                ).read_text()
                time.sleep(0.05)
        s = Setup(
            root,
            env,
            workspace(root, "alice", "- Alice booked a flight to Lisbon in March.\n"),
            workspace(root, "bob", "- Bob keeps SQLite for the schema; Lisbon later.\n"),
        )
        for ws in (s.alice, s.bob):
            assert s.run("workspace", "add", str(ws)).returncode == EXIT_OK
            assert s.run("reindex", "-w", str(ws), "--wait").returncode == EXIT_OK
        yield s
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------- --json errors


def test_json_errors_are_json_on_stdout_with_the_same_exit_codes(setup: Setup) -> None:
    missing = setup.run("get", "memory/1999-01-01.md", "-w", "alice", "--json")
    assert missing.returncode == EXIT_ERROR and missing.stderr == ""
    error = json.loads(missing.stdout)["error"]
    assert error["code"] == "not_found" and "1999-01-01" in error["message"]
    assert isinstance(error["data"], dict)
    usage = setup.run("search", "--json", "-n", "0", "x")
    assert usage.returncode == EXIT_USAGE and usage.stderr == ""
    assert json.loads(usage.stdout)["error"]["code"] == "usage"
    plain = setup.run("get", "memory/1999-01-01.md", "-w", "alice")
    assert plain.returncode == EXIT_ERROR and plain.stdout == ""
    assert plain.stderr.startswith("memctl: error:") and plain.stderr.count("\n") == 1


# ---------------------------------------------------------------- the query


def test_the_query_as_words_as_one_option_or_from_stdin_finds_the_same(setup: Setup) -> None:
    by_words = setup.json("search", "-w", "alice", "flight", "to", "Lisbon")
    by_option = setup.json("search", "-w", "alice", "--query", "flight to Lisbon")
    by_stdin = setup.json("search", "-w", "alice", "-", stdin="flight to\nLisbon\n")
    assert by_words["results"] and by_words["results"] == by_option["results"]
    assert by_stdin["results"] == by_words["results"]


@pytest.mark.parametrize(
    "argv,stdin",
    [
        (["search", ""], None),
        (["search", "--query", "  "], None),
        (["search", "-"], " \n"),
        (["search"], None),
        (["search", "a", "--query", "b"], None),
    ],
)
def test_an_empty_or_doubled_query_is_a_usage_error(
    setup: Setup, argv: list[str], stdin: str | None
) -> None:
    proc = setup.run(*argv, "-w", "alice", stdin=stdin)
    assert proc.returncode == EXIT_USAGE, proc
    assert "query" in proc.stderr


def test_a_query_of_stop_words_says_so_instead_of_arbitrary_hits(setup: Setup) -> None:
    proc = setup.run("search", "-w", "alice", "the", "of", "to")
    assert proc.returncode == EXIT_OK
    assert proc.stdout == "(no results)\n"
    assert "only stop words" in proc.stderr
    data = setup.json("search", "-w", "alice", "to", "the")
    assert data["results"] == [] and "stop words" in data["notices"][0]


def test_sessions_while_transcripts_are_not_indexed_says_so(setup: Setup) -> None:
    proc = setup.run("search", "-w", "alice", "--source", "sessions", "lisbon")
    assert proc.returncode == EXIT_OK
    assert "index.sessions" in proc.stderr
    both = setup.json(
        "search", "-w", "alice", "--source", "memory", "--source", "sessions", "lisbon"
    )
    assert both["results"] and "index.sessions" in both["notices"][0]


# ---------------------------------------------------------------- several workspaces


def test_all_searches_every_workspace_and_each_hit_names_its_own(setup: Setup) -> None:
    data = setup.json("search", "--all", "lisbon")
    assert {hit["workspace"] for hit in data["results"]} == {"alice", "bob"}
    assert data["workspaces"] == ["alice", "bob"]
    # Outside every workspace and without -w, several registered: the same search.
    assert setup.json("search", "lisbon")["results"] == data["results"]
    human = setup.run("search", "lisbon")
    assert "alice:memory/2025-01-02.md:1-1" in human.stdout
    assert "bob:memory/2025-01-02.md:1-1" in human.stdout
    # Inside one workspace, that one.
    inside = setup.run("search", "lisbon", "--json", cwd=setup.bob / "memory")
    assert {h.get("workspace") for h in json.loads(inside.stdout)["results"]} == {None}


def test_the_error_listing_the_workspaces_names_the_option(setup: Setup) -> None:
    proc = setup.run("get", "MEMORY.md")
    assert proc.returncode == EXIT_ERROR
    assert "alice, bob" in proc.stderr and "-w/--workspace" in proc.stderr
    data = json.loads(setup.run("get", "MEMORY.md", "--json").stdout)["error"]
    assert data["code"] == "invalid_params" and data["data"]["workspaces"] == ["alice", "bob"]


# ---------------------------------------------------------------- workspace add


def test_workspace_add_warns_about_a_folder_without_notes_and_a_memory_folder(setup: Setup) -> None:
    empty = setup.root / "fresh"
    empty.mkdir()
    proc = setup.run("workspace", "add", str(empty))
    assert proc.returncode == EXIT_OK and "added workspace fresh" in proc.stdout
    assert "no MEMORY.md, memory/ or sessions/" in proc.stderr
    assert setup.run("workspace", "remove", "fresh").returncode == EXIT_OK
    other = workspace(setup.root, "carol", "- a note\n")
    proc = setup.run("workspace", "add", str(other / "memory"), "--name", "carolmem")
    assert f"memctl workspace add {other}" in proc.stderr
    assert setup.run("workspace", "remove", "carolmem").returncode == EXIT_OK


def test_a_workspace_inside_another_is_refused_with_the_reason(setup: Setup) -> None:
    inner = setup.alice / "agents" / "sub"
    inner.mkdir(parents=True)
    proc = setup.run("workspace", "add", str(inner))
    assert proc.returncode == EXIT_ERROR
    assert "inside workspace alice" in proc.stderr and "may not nest" in proc.stderr
    proc = setup.run("workspace", "add", str(setup.root))
    assert proc.returncode == EXIT_ERROR and "around workspace" in proc.stderr
    listed = {w["name"] for w in setup.json("workspace", "list")["workspaces"]}
    assert listed == {"alice", "bob"}


# ---------------------------------------------------------------- get, reindex


def test_get_from_past_the_end_says_so(setup: Setup) -> None:
    proc = setup.run("get", "MEMORY.md", "-w", "alice", "--from", "40")
    assert proc.returncode == EXIT_ERROR
    assert "MEMORY.md has 1 lines: --from 40 is past the end" in proc.stderr
    assert setup.run("get", "MEMORY.md", "-w", "alice", "--from", "1").returncode == EXIT_OK


def test_reindex_wait_when_the_work_was_done_says_what_the_index_holds(setup: Setup) -> None:
    proc = setup.run("reindex", "-w", "alice", "--wait")
    assert proc.returncode == EXIT_OK
    assert proc.stdout.startswith("already up to date (2 files, 2 chunks indexed")
    assert "0 chunks written" not in proc.stdout


def test_reindex_progress_without_a_terminal_is_json_lines_on_stderr(setup: Setup) -> None:
    proc = setup.run("reindex", "-w", "bob", "--full")
    assert proc.returncode == EXIT_OK
    events = [json.loads(line) for line in proc.stderr.splitlines()]
    assert events and all(e["event"] == "progress" for e in events)
    assert {"phase", "done", "total", "rate", "eta_s"} <= set(events[-1])
