"""memctl: parsing, shared options, exit codes, output formats, against a scripted daemon."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.memoryd_server import Fail, FakeMemoryd, FakeRequest, stale_socket_file
from memoryd_client import cli
from memoryd_client.cli import (
    EXIT_ERROR,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    _commands,
    _doctor,
    build_parser,
    command_names,
)

pytestmark = pytest.mark.timeout(30)

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

# The positional arguments each command needs; a new command must be added here.
REQUIRED_ARGS: dict[str, list[str]] = {
    "status": [],
    "search": ["some", "words"],
    "get": ["MEMORY.md"],
    "append": ["a note"],
    "reindex": [],
    "workspace add": ["/tmp"],
    "workspace remove": ["ws"],
    "workspace list": [],
    "jobs list": [],
    "jobs run": ["hippocampus"],
    "doctor": [],
    "fleet status": [],
    "completion": ["bash"],
    "mcp": [],
    "recall": ["a prompt"],
    "flush": ["/tmp/session.jsonl"],
    "hook": ["claude-code", "session-start"],
    "setup": ["skill"],
    "forget": ["--query", "old fact"],
    "export": ["-o", "/tmp/x.tar.gz"],
    "import": ["/tmp/x.tar.gz"],
    "sync enable": ["--remote", "file:///tmp/memory.git"],
    "sync status": [],
    "sync now": [],
    "sync disable": [],
    "review list": [],
    "review approve": ["3fa9c2d1"],
    "review reject": ["3fa9c2d1"],
    "stats": [],
}
ONE_WORKSPACE_COMMANDS = {
    "status",
    "search",
    "get",
    "append",
    "reindex",
    "jobs list",
    "jobs run",
    "mcp",
    "recall",
    "flush",
    "forget",
    "export",
    "import",
    "hook",
    "setup",
    "sync enable",
    "sync status",
    "sync now",
    "sync disable",
    "review list",
    "review approve",
    "review reject",
    "stats",
}
# Commands that do not exit 3 without a daemon: an MCP server answers tool errors until it
# is back, a hook never breaks the agent, setup only writes files (tests/test_agents_*.py).
SERVES_WITHOUT_DAEMON = {"doctor", "completion", "mcp", "hook", "setup"}


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        old, sys.stdin = sys.stdin, io.StringIO(stdin)
    try:
        code = cli.main(argv, stdout=out, stderr=err)
    finally:
        if stdin is not None:
            sys.stdin = old
    return code, out.getvalue(), err.getvalue()


def run_on(fake: FakeMemoryd, argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    return run([*argv, "--socket", str(fake.path)], stdin)


def parse(words: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(words)


# ---------------------------------------------------------------- parsing and options


def test_command_list_is_the_documented_set() -> None:
    assert sorted(command_names()) == sorted(REQUIRED_ARGS)


@pytest.mark.parametrize("command", command_names())
def test_every_command_takes_the_shared_options(command: str) -> None:
    args = parse(
        [
            *command.split(),
            *REQUIRED_ARGS[command],
            "--json",
            "--socket",
            "/s.sock",
            "--timeout",
            "2.5",
        ]
    )
    assert (args.json, args.socket, args.timeout) == (True, "/s.sock", 2.5)
    assert callable(args.handler)
    has_workspace = hasattr(args, "workspace")
    assert has_workspace == (command in ONE_WORKSPACE_COMMANDS)


def _subparsers(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found[f"{prefix}{name}"] = child
                found.update(_subparsers(child, f"{prefix}{name} "))
    return found


def test_shared_options_are_identical_across_commands() -> None:
    parsers = _subparsers(build_parser())
    shapes: dict[str, set[tuple[Any, ...]]] = {}
    for name in command_names():
        for action in parsers[name]._actions:
            if {"--json", "--socket", "--timeout", "--workspace"} & set(action.option_strings):
                key = action.option_strings[-1]
                shapes.setdefault(key, set()).add(
                    (tuple(action.option_strings), action.dest, action.help, action.default)
                )
    assert set(shapes) == {"--json", "--socket", "--timeout", "--workspace"}
    assert all(len(variants) == 1 for variants in shapes.values()), shapes


def test_search_options_parse() -> None:
    args = parse(
        [
            "search",
            "what",
            "did",
            "we",
            "decide",
            "-n",
            "5",
            "--min-score",
            "0.25",
            "--mode",
            "keyword",
            "--fusion",
            "rrf",
            "--source",
            "memory",
            "--source",
            "sessions",
            "--path-prefix",
            "memory/",
            "--since",
            "2025-01-01",
            "--until",
            "2025-02-01",
            "-w",
            "ws",
        ]
    )
    assert args.query == ["what", "did", "we", "decide"]
    assert (args.max_results, args.min_score, args.mode, args.fusion) == (5, 0.25, "keyword", "rrf")
    assert args.sources == ["memory", "sessions"]
    assert (args.path_prefix, args.since, args.until, args.workspace) == (
        "memory/",
        "2025-01-01",
        "2025-02-01",
        "ws",
    )


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="no-command"),
        pytest.param(["frobnicate"], id="unknown-command"),
        pytest.param(["search"], id="no-query"),
        pytest.param(["search", "q", "-n", "0"], id="max-results-zero"),
        pytest.param(["search", "q", "--min-score", "2"], id="score-out-of-range"),
        pytest.param(["search", "q", "--mode", "psychic"], id="bad-mode"),
        pytest.param(["search", "q", "--since", "yesterday"], id="bad-date"),
        pytest.param(["get", "MEMORY.md", "--from", "x"], id="bad-from"),
        pytest.param(["workspace"], id="workspace-without-action"),
        pytest.param(["append", "--date", "2025-13-01", "x"], id="bad-append-date"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], short_tmp: Path) -> None:
    code, _, _ = run([*argv, "--socket", str(short_tmp / "none.sock")] if argv else argv)
    assert code == EXIT_USAGE


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == EXIT_OK
    assert re.fullmatch(r"memctl \S+ \(protocol 1\)\n", capsys.readouterr().out)


def test_version_matches_the_installed_distribution() -> None:
    from importlib.metadata import version

    import memoryd_client

    assert memoryd_client.__version__ == version("memoryd")


def test_workspace_param_makes_paths_absolute_and_keeps_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.workspace_param("agent-one") == "agent-one"
    assert cli.workspace_param("./agent-one") == str(tmp_path / "agent-one")
    assert cli.workspace_param("../x/conv-26") == str(tmp_path.parent / "x" / "conv-26")
    assert cli.workspace_param("/abs/ws") == "/abs/ws"


# ---------------------------------------------------------------- daemon not running


# doctor reports its checks instead: see test_doctor_without_daemon_*
@pytest.mark.parametrize("command", [c for c in command_names() if c not in SERVES_WITHOUT_DAEMON])
def test_no_daemon_exits_3_with_one_line(command: str, short_tmp: Path) -> None:
    argv = [*command.split(), *REQUIRED_ARGS[command], "--socket", str(short_tmp / "d.sock")]
    code, out, err = run(argv)
    assert code == EXIT_NOT_RUNNING
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("memctl: error: memoryd is not running")


def test_stale_socket_exits_3_and_says_stale(short_tmp: Path) -> None:
    path = stale_socket_file(short_tmp / "d.sock")
    code, _, err = run(["search", "q", "--socket", str(path)])
    assert code == EXIT_NOT_RUNNING
    assert err.count("\n") == 1 and "stale" in err


def test_console_script_exits_3_without_a_traceback(short_tmp: Path) -> None:
    memctl = Path(sys.executable).parent / "memctl"
    proc = subprocess.run(
        [str(memctl), "status", "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "MEMORYD_HOME": str(short_tmp), "MEMORYD_SOCKET": ""},
    )
    assert proc.returncode == EXIT_NOT_RUNNING
    assert json.loads(proc.stdout)["error"]["code"] == "not_running"  # --json: JSON, always
    assert proc.stderr == ""
    proc = subprocess.run(
        [str(memctl), "status"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "MEMORYD_HOME": str(short_tmp), "MEMORYD_SOCKET": ""},
    )
    assert proc.returncode == EXIT_NOT_RUNNING
    assert proc.stdout == ""
    assert proc.stderr.startswith("memctl: error:") and proc.stderr.count("\n") == 1


# ---------------------------------------------------------------- against a daemon


def test_search_human_output(fake_memoryd: FakeMemoryd) -> None:
    code, out, err = run_on(fake_memoryd, ["search", "line", "one"])
    assert code == EXIT_OK
    assert out == "memory/2025-01-02.md:3-9  0.812\n    - [D1:3] line one\n    line two\n"
    assert "vectors off" in err  # degraded is said on stderr, not mixed into results
    assert fake_memoryd.calls("search")[0].params["query"] == "line one"


def test_search_json_passes_the_daemons_result_through(fake_memoryd: FakeMemoryd) -> None:
    code, out, _ = run_on(fake_memoryd, ["search", "q", "--json", "-n", "3", "-w", "ws"])
    assert code == EXIT_OK
    data = json.loads(out)
    assert data == fake_memoryd.results["search"]
    assert {"path", "start_line", "end_line", "score", "snippet", "source"} <= set(
        data["results"][0]
    )
    assert fake_memoryd.calls("search")[0].params == {
        "query": "q",
        "max_results": 3,
        "workspace": "ws",
    }


def test_search_sends_the_active_projects_and_the_day_time_words_count_from(
    fake_memoryd: FakeMemoryd,
) -> None:
    argv = ["search", "deploy", "last", "week", "-w", "ws", "--project", "github.com/a/b"]
    code, _, _ = run_on(fake_memoryd, [*argv, "--project", "/srv/c", "--now", "2025-03-12"])
    assert code == EXIT_OK
    params = fake_memoryd.calls("search")[0].params
    assert (params["project"], params["now"]) == (["github.com/a/b", "/srv/c"], "2025-03-12")


def test_default_workspace_is_the_current_directory_inside_a_registered_one(
    fake_memoryd: FakeMemoryd, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = short_tmp / "agent"
    (ws / "memory").mkdir(parents=True)
    fake_memoryd.results["workspace.list"] = {
        "workspaces": [{"name": "agent", "path": str(ws), "source": "registry"}]
    }
    monkeypatch.chdir(ws / "memory")
    run_on(fake_memoryd, ["search", "q"])
    monkeypatch.chdir(short_tmp)
    run_on(fake_memoryd, ["search", "q"])
    inside, outside = fake_memoryd.calls("search")
    assert inside.params["workspace"] == str(ws / "memory")
    assert "workspace" not in outside.params


def test_get_prints_the_text(fake_memoryd: FakeMemoryd) -> None:
    code, out, _ = run_on(fake_memoryd, ["get", "MEMORY.md", "--from", "2", "--lines", "1"])
    assert (code, out) == (EXIT_OK, "# Memory\nhello\n")
    params = fake_memoryd.calls("get")[0].params
    assert (params["from"], params["lines"]) == (2, 1)


def test_append_reads_stdin_for_dash(fake_memoryd: FakeMemoryd) -> None:
    code, out, _ = run_on(
        fake_memoryd, ["append", "-", "--heading", "Notes"], stdin="from a pipe\n"
    )
    assert code == EXIT_OK
    assert out == "appended to memory/2025-01-02.md:10-11\n"
    # Piped: a program wrote it, not the person at a terminal (docs/provenance.md).
    assert fake_memoryd.calls("append")[0].params == {
        "text": "from a pipe\n",
        "heading": "Notes",
        "origin": "agent",
    }


def test_append_typed_at_a_terminal_is_the_owners_and_origin_can_be_given(
    fake_memoryd: FakeMemoryd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", TTY())
    code, _, _ = run_on(fake_memoryd, ["append", "Decided: keep SQLite"])
    assert code == EXIT_OK
    assert fake_memoryd.calls("append")[0].params["origin"] == "owner"
    argv = ["append", "from the web", "--origin", "untrusted", "--session-id", "s1"]
    code, _, _ = run_on(fake_memoryd, [*argv, "--session-kind", "cron"])
    assert code == EXIT_OK
    params = fake_memoryd.calls("append")[1].params
    assert (params["origin"], params["session_id"], params["session_kind"]) == (
        "untrusted",
        "s1",
        "cron",
    )


def test_append_of_nothing_is_a_usage_error(fake_memoryd: FakeMemoryd) -> None:
    code, _, err = run_on(fake_memoryd, ["append", "-"], stdin="  \n")
    assert code == EXIT_USAGE and "empty" in err
    assert not fake_memoryd.calls("append")


def test_reindex_draws_a_progress_bar_on_a_terminal(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("reindex")
    async def reindex(req: FakeRequest) -> Any:
        await req.progress(1, 2, "chunking")
        await req.progress(2, 2, "chunking")
        return {"files_scanned": 2, "files_changed": 2, "seconds": 0.5}

    out, err = io.StringIO(), TTY()
    code = cli.main(
        ["reindex", "--wait", "--full", "--socket", str(fake_memoryd.path)], stdout=out, stderr=err
    )
    assert code == EXIT_OK
    assert "[###############---------------] 1/2" in err.getvalue()
    assert err.getvalue().endswith("\r\x1b[K")  # the bar is cleared before the summary
    assert out.getvalue().startswith("reindexed in 0.50s: 2 files scanned, 2 changed")
    assert fake_memoryd.calls("reindex")[0].params == {"full": True, "wait": True}


def test_reindex_progress_is_json_lines_when_not_a_terminal(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("reindex")
    async def reindex(req: FakeRequest) -> Any:
        await req.progress(1, 2, "chunking")
        await req.progress(2, 2, "chunking")
        return {"files_changed": 2, "chunks_written": 2}

    code, _, err = run_on(fake_memoryd, ["reindex"])
    assert code == EXIT_OK
    lines = [json.loads(line) for line in err.splitlines()]
    assert [(e["event"], e["phase"], e["done"], e["total"]) for e in lines] == [
        ("progress", "chunking", 1, 2),
        ("progress", "chunking", 2, 2),
    ]
    assert {"rate", "eta_s"} <= set(lines[0])


def test_json_progress_writes_a_line_only_when_the_count_moves() -> None:
    from memoryd_client.cli._progress import JsonProgress
    from memoryd_client.types import Progress

    now = [0.0]
    err = io.StringIO()
    progress = JsonProgress(err, clock=lambda: now[0])
    # The daemon's heartbeat: the same count every second while the model loads (95 s).
    events = [("scanning", 3, 3)] + [("vectors", 0, 40)] * 95 + [("vectors", 40, 40)]
    for phase, done, total in events:
        progress(Progress(phase=phase, done=done, total=total))
        now[0] += 1.0
    progress.finish()
    lines = [json.loads(line) for line in err.getvalue().splitlines()]
    assert [(e["phase"], e["done"]) for e in lines] == [
        ("scanning", 3),
        ("vectors", 0),
        ("vectors", 40),
    ]


def test_workspace_add_wait_gives_the_whole_wait_with_keyword_and_vectors_apart(
    fake_memoryd: FakeMemoryd, short_tmp: Path
) -> None:
    @fake_memoryd.handle("workspace.add")
    async def add(req: FakeRequest) -> Any:
        for _ in range(5):  # heartbeats while the model loads
            await req.progress(0, 4, "vectors")
        await req.progress(4, 4, "vectors")
        indexed = {"files_scanned": 4, "seconds": 0.46, "vectors_seconds": 94.7}
        return {"name": "ws", "path": str(short_tmp), "added": True, "indexed": indexed}

    code, out, err = run_on(fake_memoryd, ["workspace", "add", str(short_tmp), "--wait"])
    assert code == EXIT_OK
    assert [json.loads(line)["done"] for line in err.splitlines() if "progress" in line] == [0, 4]
    assert re.fullmatch(
        rf"added workspace ws at {short_tmp} \(indexed in \d+\.\ds: keyword 0\.46s, "
        r"vectors 94\.70s\)\n",
        out,
    ), out


def test_workspace_add_sends_an_absolute_path(
    fake_memoryd: FakeMemoryd, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (short_tmp / "agent").mkdir()
    monkeypatch.chdir(short_tmp)
    code, out, _ = run_on(fake_memoryd, ["workspace", "add", "agent", "--name", "a1"])
    assert code == EXIT_OK and out.startswith("added workspace ws")
    assert fake_memoryd.calls("workspace.add")[0].params == {
        "path": str(short_tmp / "agent"),
        "name": "a1",
    }


def test_workspace_add_of_a_missing_directory_fails_locally(fake_memoryd: FakeMemoryd) -> None:
    code, _, err = run_on(fake_memoryd, ["workspace", "add", "/no/such/dir"])
    assert code == EXIT_ERROR and "not a directory" in err
    assert not fake_memoryd.calls("workspace.add")


def test_workspace_remove_and_list(fake_memoryd: FakeMemoryd) -> None:
    code, out, _ = run_on(fake_memoryd, ["workspace", "remove", "ws", "--delete-index"])
    assert code == EXIT_OK and "files are untouched" in out
    assert fake_memoryd.calls("workspace.remove")[0].params == {
        "workspace": "ws",
        "delete_index": True,
    }
    code, out, _ = run_on(fake_memoryd, ["workspace", "list"])
    assert (code, out) == (EXIT_OK, "ws  /w/ws  (registry)\n")
    code, out, _ = run_on(fake_memoryd, ["workspace", "list", "--json"])
    assert json.loads(out) == {
        "workspaces": [{"name": "ws", "path": "/w/ws", "source": "registry"}]
    }


def test_status_human_and_json(fake_memoryd: FakeMemoryd) -> None:
    code, out, _ = run_on(fake_memoryd, ["status"])
    assert code == EXIT_OK
    assert out.splitlines()[0].startswith("memoryd 0.0-fake  pid")
    assert "workspace ws  /w/ws" in out and "degraded: keyword only" in out
    code, out, _ = run_on(fake_memoryd, ["status", "--json"])
    assert json.loads(out) == fake_memoryd.results["status"]


def test_status_says_where_the_knn_and_bm25_run(fake_memoryd: FakeMemoryd) -> None:
    import copy

    from memoryd_client.cli._format import format_status
    from memoryd_client.types import Status

    wire = copy.deepcopy(fake_memoryd.results["status"])
    wire["workspaces"][0].update(vector_ready=True, vector_scan="memory", keyword_scan="fts5")
    shown = "\n".join(format_status(Status.from_wire(wire)))
    assert "vectors ready (KNN: memory)  BM25: fts5" in shown


def test_status_says_once_which_transcripts_are_left_out_and_how_to_index_them(
    fake_memoryd: FakeMemoryd,
) -> None:
    import copy

    from memoryd_client.cli._format import format_status
    from memoryd_client.types import Status

    wire = copy.deepcopy(fake_memoryd.results["status"])
    first = wire["workspaces"][0]
    wire["workspaces"] = [
        {**first, "sessions_left_out": 13},
        {**first, "name": "ws2", "sessions_left_out": 2},
    ]
    shown = format_status(Status.from_wire(wire))
    assert "  sessions: 13 transcript(s) in sessions/ not indexed (index.sessions = false)" in shown
    assert [line for line in shown if "sessions = true" in line] == [
        f"to search transcripts too: set `sessions = true` under [index] in "
        f"{wire['config_source'] or 'the config file'} "
        "(or MEMORYD_INDEX_SESSIONS=true), then restart memoryd"
    ]
    del wire["workspaces"][1]
    del wire["workspaces"][0]["sessions_left_out"]
    assert not any("sessions" in line for line in format_status(Status.from_wire(wire)))


def test_remote_error_exits_1_with_one_line(fake_memoryd: FakeMemoryd) -> None:
    @fake_memoryd.handle("get")
    async def get(req: FakeRequest) -> Any:
        raise Fail("forbidden_path", "only MEMORY.md and memory/**\nare readable")

    code, out, err = run_on(fake_memoryd, ["get", "../etc/passwd"])
    assert (code, out) == (EXIT_ERROR, "")
    assert err == ("memctl: error: only MEMORY.md and memory/** are readable (forbidden_path)\n")


def test_unexpected_exception_is_one_line_not_a_traceback(
    fake_memoryd: FakeMemoryd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMCTL_DEBUG", raising=False)
    monkeypatch.setattr(_commands, "format_status", lambda status: 1 / 0)
    code, _, err = run_on(fake_memoryd, ["status"])
    assert code == EXIT_ERROR
    assert err.count("\n") == 1 and "ZeroDivisionError" in err


# ---------------------------------------------------------------- doctor


def test_doctor_with_a_healthy_daemon(fake_memoryd: FakeMemoryd) -> None:
    os.chmod(fake_memoryd.path.parent, 0o700)
    code, out, _ = run_on(fake_memoryd, ["doctor", "--json"])
    report = json.loads(out)
    names = [c["name"] for c in report["checks"]]
    assert names[:4] == ["socket path", "socket directory", "daemon reachable", "protocol"]
    assert "vector search (sqlite-vec)" in names and "workspace ws" in names
    # provider none + "keyword only" is the configured state, not a failure
    assert report["ok"] is True and code == EXIT_OK, report


def test_doctor_flags_an_open_socket_directory_with_the_fix(fake_memoryd: FakeMemoryd) -> None:
    os.chmod(fake_memoryd.path.parent, 0o755)
    code, out, _ = run_on(fake_memoryd, ["doctor"])
    assert code == EXIT_ERROR
    assert "FAIL  socket directory" in out
    assert f"fix: chmod 700 {fake_memoryd.path.parent}" in out


def test_doctor_reports_a_degraded_workspace(fake_memoryd: FakeMemoryd) -> None:
    os.chmod(fake_memoryd.path.parent, 0o700)
    status = fake_memoryd.results["status"]
    status["provider"] = {"name": "openai", "model": "m", "dims": 8, "reason": "api key set"}
    status["workspaces"][0]["degraded"] = ["embedding provider failing: 401 (retry in 30s)"]
    code, out, _ = run_on(fake_memoryd, ["doctor"])
    assert code == EXIT_ERROR
    assert "FAIL  workspace ws" in out and "401" in out


def test_doctor_without_daemon_merges_memoryd_doctor(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = short_tmp / "memoryd"
    exe.write_text(
        "#!/bin/sh\n"
        "[ \"$1 $2\" = 'doctor --json' ] || exit 9\n"
        'echo \'{"checks": [{"name": "sqlite-vec", "ok": false, '
        '"detail": "cannot load", "fix": "pip install sqlite-vec"}]}\'\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(_doctor, "find_memoryd", lambda: str(exe))
    code, out, _ = run(["doctor", "--json", "--socket", str(short_tmp / "d.sock")])
    assert code == EXIT_NOT_RUNNING
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["daemon reachable"]["ok"] is False
    assert checks["sqlite-vec"] == {
        "name": "sqlite-vec",
        "ok": False,
        "detail": "cannot load",
        "fix": "pip install sqlite-vec",
        "source": "memoryd doctor",
    }


def test_doctor_without_daemon_or_memoryd_still_reports(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_doctor, "find_memoryd", lambda: None)
    code, out, _ = run(["doctor", "--socket", str(short_tmp / "d.sock")])
    assert code == EXIT_NOT_RUNNING
    assert "FAIL  daemon reachable" in out and "FAIL  memoryd installed" in out


# ---------------------------------------------------------------- docs


def test_every_command_is_documented_in_the_cli_reference() -> None:
    text = CLI_DOC.read_text()
    block = text.split("<!-- memctl:begin -->", 1)[1].split("<!-- memctl:end -->", 1)[0]
    missing = [name for name in command_names() if f"memctl {name}" not in block]
    assert not missing, f"document these in docs/cli.md: {missing}"
    assert "exit" in block.lower()


def test_doctor_names_a_stale_socket(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_doctor, "find_memoryd", lambda: None)
    path = stale_socket_file(short_tmp / "d.sock")
    code, out, _ = run(["doctor", "--socket", str(path)])
    assert code == EXIT_NOT_RUNNING
    assert f"FAIL  daemon reachable: stale socket: {path} exists" in out


def test_doctor_accepts_a_socket_directory_not_created_yet(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_doctor, "find_memoryd", lambda: None)
    code, out, _ = run(["doctor", "--socket", str(short_tmp / "run" / "d.sock")])
    assert code == EXIT_NOT_RUNNING
    assert "ok    socket directory:" in out and "does not exist yet" in out


# ---------------------------------------------------------------- help and completion


def test_every_option_has_help_and_every_command_an_example() -> None:
    parsers = _subparsers(build_parser())
    for name in command_names():
        p = parsers[name]
        assert p.epilog and "example" in p.epilog and f"memctl {name}" in p.epilog, (
            f"memctl {name}: pass example='  memctl {name} ...' to cli.command()"
        )
        for action in p._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, (
                    f"memctl {name}: {action.option_strings or action.dest} needs help text"
                )


def test_memctl_help_lists_the_exit_codes_and_how_to_stop_the_daemon(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["--help"]) == EXIT_OK
    text = capsys.readouterr().out
    for needle in (
        "exit codes: 0 ok, 1 error",
        "2 usage",
        "3 daemon not running",
        "memoryd stop",
        '{"error": {"code", "message", "data"}}',
    ):
        assert needle in text, needle


def complete(script: str, line: str) -> list[str]:
    """What bash's completion function offers for ``line`` (the cursor at its end)."""
    words = line.split(" ")
    program = (
        f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n_memctl\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    )
    proc = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_completion_completes_commands_actions_options_and_choices() -> None:
    code, script, _ = run(["completion", "bash"])
    assert code == EXIT_OK
    assert complete(script, "memctl se") == ["search", "setup"]
    assert complete(script, "memctl workspace ") == ["add", "remove", "list"]
    assert "--max-results" in complete(script, "memctl search lisbon --max")
    assert complete(script, "memctl search --mode k") == ["keyword"]
    assert complete(script, "memctl jobs run --dry") == ["--dry-run"]
    assert complete(script, "memctl completion ") == ["bash", "zsh", "fish"]


def test_zsh_and_fish_scripts_name_every_command() -> None:
    _, zsh, _ = run(["completion", "zsh"])
    assert zsh.startswith("#compdef memctl") and "bashcompinit" in zsh
    if shutil.which("zsh"):
        assert subprocess.run(["zsh", "-n", "-c", zsh], timeout=30).returncode == 0
    _, fish, _ = run(["completion", "fish"])
    for name in command_names():
        assert f"-a {name.split()[-1]} " in fish, name
    assert "-l max-results" in fish and "-a 'hybrid vector keyword'" in fish
    if shutil.which("fish"):
        assert subprocess.run(["fish", "--no-execute", "-c", fish], timeout=30).returncode == 0


def test_status_shows_the_embedding_rate_and_time_left(fake_memoryd: FakeMemoryd) -> None:
    ws = fake_memoryd.results["status"]["workspaces"][0]
    ws.update(pending_vectors=864, embedding={"rate_per_s": 19.2, "eta_s": 45.0})
    code, out, _ = run_on(fake_memoryd, ["status"])
    assert code == EXIT_OK
    assert "pending vectors 864  embedding 19.2 chunks/s, ETA 0:45" in out


def test_search_all_without_any_workspace_says_how_to_add_one(fake_memoryd: FakeMemoryd) -> None:
    fake_memoryd.results["workspace.list"] = {"workspaces": []}
    code, _, err = run_on(fake_memoryd, ["search", "--all", "q"])
    assert code == EXIT_ERROR and "memctl workspace add PATH" in err
    assert not fake_memoryd.calls("search")


def test_a_next_step_names_memctl_as_this_shell_finds_this_installations(tmp_path: Path) -> None:
    from memoryd_client.command_names import spelled

    home = tmp_path / "home"
    venv_bin = home / "proj" / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    memctl = venv_bin / "memctl"
    memctl.write_text("#!/bin/sh\n")
    memctl.chmod(0o755)
    other = tmp_path / "other-memctl"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    # PATH finds this very memctl (an activated venv, pipx): the bare name.
    assert spelled("memctl", str(python), lambda name: str(memctl), home) == "memctl"
    # A venv nobody activated, or another memctl first on PATH: the one beside this Python.
    expected = "~/proj/.venv/bin/memctl"
    assert spelled("memctl", str(python), lambda name: None, home) == expected
    assert spelled("memctl", str(python), lambda name: str(other), home) == expected
    assert spelled("memctl", str(python), lambda name: None, tmp_path / "elsewhere") == str(memctl)
    # Not installed beside this Python (a daemon-only environment): the bare name.
    assert spelled("memoryd", str(python), lambda name: None, home) == "memoryd"
