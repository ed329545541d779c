"""End to end: the real ``memoryd run`` in a subprocess, driven by the ``memctl`` executable.

Keyword-only (``MEMORYD_EMBEDDING_PROVIDER=none``) so it runs in seconds on any machine.
Includes the exact commands the LoCoMo evaluation runs (shared/bench/README.md).
"""

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
from memoryd_client.cli import EXIT_NOT_RUNNING, EXIT_OK

pytestmark = pytest.mark.timeout(120)

BIN = Path(sys.executable).parent
MEMCTL = str(BIN / "memctl")
MEMORYD = str(BIN / "memoryd")


@dataclass
class Daemon:
    root: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes]
    log: Path

    def memctl(
        self, *args: str, cwd: Path | None = None, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [MEMCTL, *args],
            env=self.env,
            cwd=cwd or self.root,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and proc.returncode != EXIT_OK:
            raise AssertionError(
                f"memctl {' '.join(args)} exited {proc.returncode}: "
                f"{proc.stderr}\n--- daemon log ---\n{self.log.read_text()}"
            )
        return proc

    def json(self, *args: str, cwd: Path | None = None) -> Any:
        return json.loads(self.memctl(*args, "--json", cwd=cwd).stdout)


def make_workspace(root: Path, name: str, notes: dict[str, str]) -> Path:
    ws = root / name
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(f"# Memory of {name}\n\nLong-term notes.\n")
    for day, text in notes.items():
        (ws / "memory" / f"{day}.md").write_text(text)
    return ws


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    root = Path(tempfile.mkdtemp(prefix="mde-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(root / "home"), MEMORYD_EMBEDDING_PROVIDER="none")
    log = root / "daemon.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [MEMORYD, "run"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    d = Daemon(root, env, proc, log)
    try:
        wait_until_ready(d)
        yield d
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        shutil.rmtree(root, ignore_errors=True)


def wait_until_ready(d: Daemon) -> None:
    sock = root_socket(d)
    deadline = time.monotonic() + 15
    while True:
        try:
            with MemoryClient(sock, timeout=5) as client:
                client.connect()
                return
        except DaemonNotRunning:
            if d.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"memoryd did not start:\n{d.log.read_text()}") from None
            time.sleep(0.05)


def root_socket(d: Daemon) -> Path:
    return Path(d.env["MEMORYD_HOME"]) / "run" / "memoryd.sock"


DECISIONS = {
    "2025-01-02": "## Standup\n\n- Bob decided to keep SQLite for the schema.\n- Lunch at noon.\n",
    "2025-01-05": "## Travel\n\n- Alice booked a flight to Lisbon in March.\n",
}


@pytest.fixture(scope="module")
def workspace(daemon: Daemon) -> Path:
    ws = make_workspace(daemon.root, "alice", DECISIONS)
    added = daemon.memctl("workspace", "add", str(ws))
    assert "added workspace alice" in added.stdout
    daemon.memctl("reindex", "--workspace", str(ws), "--wait")
    return ws


def test_search_json_has_workspace_relative_paths_and_line_ranges(
    daemon: Daemon, workspace: Path
) -> None:
    data = daemon.json("search", "--workspace", str(workspace), "-n", "3", "SQLite", "schema")
    top = data["results"][0]
    assert top["path"] == "memory/2025-01-02.md"
    assert top["start_line"] <= 3 <= top["end_line"]
    assert "SQLite" in top["snippet"] and top["source"] == "memory"
    assert data["mode_used"] == "keyword"


def test_human_search_output(daemon: Daemon, workspace: Path) -> None:
    out = daemon.memctl("search", "Lisbon", "flight", "-w", "alice").stdout
    first = out.splitlines()[0]
    assert first.startswith("memory/2025-01-05.md:")
    assert "    - Alice booked a flight to Lisbon in March." in out


def test_get_reads_a_line_range(daemon: Daemon, workspace: Path) -> None:
    out = daemon.memctl(
        "get", "memory/2025-01-02.md", "-w", "alice", "--from", "3", "--lines", "1"
    ).stdout
    assert out == "- Bob decided to keep SQLite for the schema.\n"


def test_append_then_search_finds_it(daemon: Daemon, workspace: Path) -> None:
    appended = daemon.json(
        "append",
        "Carol prefers Rust for the indexer.",
        "-w",
        "alice",
        "--date",
        "2025-01-07",
        "--heading",
        "Preferences",
    )
    assert appended["path"] == "memory/2025-01-07.md"
    assert "Carol prefers Rust" in (workspace / "memory" / "2025-01-07.md").read_text()
    hits = daemon.json("search", "-w", "alice", "Carol", "Rust", "indexer")["results"]
    assert hits and hits[0]["path"] == "memory/2025-01-07.md"


def test_append_from_stdin(daemon: Daemon, workspace: Path) -> None:
    daemon.memctl(
        "append", "-", "-w", "alice", "--date", "2025-01-08", stdin="Dave's birthday is on 4 May.\n"
    )
    hits = daemon.json("search", "-w", "alice", "Dave", "birthday")["results"]
    assert hits[0]["path"] == "memory/2025-01-08.md"


def test_status_json_lists_the_workspace(daemon: Daemon, workspace: Path) -> None:
    status = daemon.json("status")
    ws = {w["name"]: w for w in status["workspaces"]}["alice"]
    assert ws["path"] == str(workspace) and ws["files"] >= 3
    assert status["provider"]["name"] == "none"


def test_doctor_passes_on_a_healthy_setup(daemon: Daemon, workspace: Path) -> None:
    proc = daemon.memctl("doctor", check=False)
    assert proc.returncode == EXIT_OK, proc.stdout
    assert "ok    daemon reachable" in proc.stdout
    assert "FAIL" not in proc.stdout


def test_current_directory_picks_the_workspace(daemon: Daemon, workspace: Path) -> None:
    other = make_workspace(daemon.root, "bob", {"2025-02-01": "## Bob\n\n- Zebra crossing.\n"})
    daemon.memctl("workspace", "add", str(other))
    daemon.memctl("reindex", "-w", "bob")
    inside_bob = daemon.json("search", "zebra", cwd=other / "memory")["results"]
    assert inside_bob and inside_bob[0]["path"] == "memory/2025-02-01.md"
    inside_alice = daemon.json("search", "zebra", cwd=workspace)["results"]
    assert inside_alice == []
    listed = {w["name"] for w in daemon.json("workspace", "list")["workspaces"]}
    assert {"alice", "bob"} <= listed
    removed = daemon.json("workspace", "remove", "bob")
    assert removed["removed"] is True


def test_the_locomo_evaluation_commands_work(daemon: Daemon) -> None:
    """The shell templates of shared/bench/README.md, with a relative workspace path."""
    bench = daemon.root / "bench"
    make_workspace(
        bench,
        "conv-1",
        {
            "2023-05-08": "## Session 1 (8 May 2023)\n\n"
            "- [D1:1] Caroline: I went to a LGBTQ support group.\n"
            "- [D1:2] Melanie: That sounds empowering!\n"
        },
    )
    index = "memctl workspace add {workspace} && memctl reindex --workspace {workspace} --wait"
    search = "memctl search --workspace {workspace} --json -n {k} {query}"
    env = {**daemon.env, "PATH": f"{BIN}{os.pathsep}{daemon.env.get('PATH', '')}"}
    ws = os.path.join("bench", "conv-1")  # the evaluator passes ROOT/<conv>, often relative
    subprocess.run(
        index.format(workspace=ws),
        shell=True,
        check=True,
        cwd=daemon.root,
        env=env,
        capture_output=True,
        timeout=60,
    )
    proc = subprocess.run(
        search.format(workspace=ws, k=5, query="'When did Caroline go to the support group?'"),
        shell=True,
        check=True,
        cwd=daemon.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    results = json.loads(proc.stdout)["results"]
    assert results[0]["path"] == "memory/2023-05-08.md"
    assert results[0]["start_line"] <= 3 <= results[0]["end_line"]
    assert "[D1:1]" in results[0]["snippet"]


def test_workspace_add_wait_answers_with_the_workspace_indexed(daemon: Daemon) -> None:
    ws = make_workspace(
        daemon.root, "carol", {"2025-02-01": "## Garden\n\n- Carol planted quince trees.\n"}
    )
    added = daemon.json("workspace", "add", str(ws), "--wait")
    assert added["added"] is True and added["name"] == "carol"
    assert added["indexed"]["files_scanned"] == 2 and added["indexed"]["vectors_pending"] == 0
    # the first scan's own report (a sync after it would have found nothing to change)
    assert added["indexed"]["files_changed"] == 2
    # no reindex, no polling: the answer came once the notes were searchable
    hits = daemon.json("search", "-w", "carol", "quince")["results"]
    assert [h["path"] for h in hits] == ["memory/2025-02-01.md"]
    again = daemon.memctl("workspace", "add", str(ws), "--wait").stdout
    assert "was already registered" in again


def test_unknown_workspace_is_a_one_line_error(daemon: Daemon, workspace: Path) -> None:
    proc = daemon.memctl("search", "-w", "nobody", "x", check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("memctl: error:") and proc.stderr.count("\n") == 1


def test_after_sigterm_memctl_exits_3(daemon: Daemon, workspace: Path) -> None:
    # Runs after every test using the shared daemon (file order): it stops it.
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(20) == 0
    assert not root_socket(daemon).exists()
    proc = daemon.memctl("status", check=False)
    assert proc.returncode == EXIT_NOT_RUNNING
    assert "not running" in proc.stderr and proc.stderr.count("\n") == 1


def test_client_autostart_brings_up_the_real_daemon(short_tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(short_tmp), MEMORYD_EMBEDDING_PROVIDER="none")
    code = (
        "from memoryd_client import MemoryClient\n"
        "with MemoryClient(autostart=True) as c:\n"
        "    print(c.connect().pid)\n"
        "    c.shutdown()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout)
    deadline = time.monotonic() + 20
    while _alive(pid) and time.monotonic() < deadline:  # shutdown() asked it to exit
        time.sleep(0.05)
    assert not _alive(pid)
    assert "startup" in (short_tmp / "log" / "memoryd-autostart.log").read_text()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    if not Path("/proc").is_dir():
        return True  # (macOS) launchd reaps the orphan at once; kill() is the answer
    # Linux containers: pid 1 may never reap the orphan, so a zombie counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
