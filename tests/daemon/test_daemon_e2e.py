"""End to end: ``memoryd run`` as a subprocess, driven over its socket and with signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon_util import Proc, RawConn, short_home, wait_for
from memoryd.exit_codes import EXIT_ALREADY_RUNNING, EXIT_CONFIG, EXIT_OK, EXIT_SOCKET
from memoryd_client import protocol
from notes_util import big_workspace


@pytest.fixture
def home() -> Iterator[Path]:
    with short_home() as h:
        yield h


@pytest.fixture
def daemon(home: Path) -> Iterator[Proc]:
    proc = Proc(home)
    proc.ready()
    yield proc
    proc.kill()


def test_sigterm_mid_request_completes_it_exits_0_and_removes_the_socket(home: Path) -> None:
    daemon = Proc(home, env={"MEMORYD_LOG_LEVEL": "debug"})  # request lines are debug
    try:
        _sigterm_mid_request(home, daemon)
    finally:
        daemon.kill()


def _sigterm_mid_request(home: Path, daemon: Proc) -> None:
    daemon.ready()
    ws = big_workspace(home / "ws", files=400)
    with RawConn(daemon.socket, timeout=60) as c:
        c.result("workspace.add", {"path": str(ws)})
        c.send(protocol.request(42, "reindex", {"full": True}))
        first = c.recv()
        assert first is not None and first.get("event") == "progress", first
        daemon.p.send_signal(signal.SIGTERM)
        frame: dict[str, Any] | None = first
        while frame is not None and "event" in frame:
            frame = c.recv()
        assert frame is not None and frame["id"] == 42 and frame["ok"], frame
        assert frame["result"]["files_scanned"] >= 400
    assert daemon.wait() == EXIT_OK
    assert not daemon.socket.exists()
    events = daemon.events()
    # The signal arrived while the reindex was running: its request line comes after it.
    reindex_line = next(
        i
        for i, e in enumerate(daemon.logs())
        if e.get("event") == "request" and e.get("method") == "reindex"
    )
    assert events.index("signal") < reindex_line
    assert events[-1] == "shutdown"


def test_the_startup_line_is_logged_once_after_the_first_answer_or_at_shutdown(
    home: Path,
) -> None:
    # Logged after the first answer (masking its socket path compiles the secret
    # detectors), or at shutdown when none came, or at once without a workspace: once
    # either way, with its fields.
    for ask in (True, False):
        proc = _started_and_stopped(home, ask)
        events = proc.events()
        assert events.count("startup") == 1, events
        assert events.index("startup") < events.index("shutdown")
        [line] = [e for e in proc.logs() if e["event"] == "startup"]
        assert line["pid"] == proc.p.pid and line["socket"] == str(proc.socket)
        assert line["ms"] >= 0 and line["workspaces"] == 0


def _started_and_stopped(home: Path, ask: bool) -> Proc:
    proc = Proc(home)
    try:
        proc.ready()
        if ask:
            with RawConn(proc.socket) as c:
                assert c.result("status")  # a first question (not hello)
            assert wait_for(lambda: "startup" in proc.events(), 15), proc.logs()
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait() == EXIT_OK
    finally:
        proc.kill()
    return proc


def test_sigint_also_shuts_down_gracefully(daemon: Proc) -> None:
    with RawConn(daemon.socket) as c:
        assert c.result("hello")["server"] == "memoryd"
    daemon.p.send_signal(signal.SIGINT)
    assert daemon.wait() == EXIT_OK
    assert not daemon.socket.exists()


def test_shutdown_with_idle_connections_open_logs_json_lines_only(daemon: Proc) -> None:
    # Python 3.11 logged each cancelled connection task as a raw asyncio traceback.
    idle = [RawConn(daemon.socket) for _ in range(2)]
    try:
        assert idle[0].result("hello")["server"] == "memoryd"
        with RawConn(daemon.socket) as c:
            c.result("shutdown")
        assert daemon.wait() == EXIT_OK
    finally:
        for conn in idle:
            conn.close()
    raw = [e["line"] for e in daemon.logs() if e.get("event") == "raw"]
    assert raw == []
    assert daemon.events()[-1] == "shutdown"


def test_second_daemon_is_refused_with_already_running_pid(home: Path, daemon: Proc) -> None:
    second = Proc(home)
    assert second.wait() == EXIT_ALREADY_RUNNING
    [line] = [e for e in second.logs() if e["event"] == "already_running"]
    assert f"already running (pid {daemon.p.pid})" in line["error"]
    with RawConn(daemon.socket) as c:  # the first one is untouched
        assert c.result("hello")["pid"] == daemon.p.pid


def test_stale_socket_of_a_killed_daemon_is_cleaned_at_next_start(home: Path, daemon: Proc) -> None:
    daemon.p.send_signal(signal.SIGKILL)
    daemon.wait()
    assert daemon.socket.exists()  # a crash leaves the file behind
    again = Proc(home)
    try:
        again.ready()  # the line comes once the start is over (runtime/logs.py holds it)
        assert wait_for(lambda: "stale_socket_removed" in again.events(), 15), again.logs()
        with RawConn(again.socket) as c:
            assert c.result("hello")["pid"] == again.p.pid
    finally:
        again.kill()


def test_sighup_with_a_bad_config_keeps_running_and_a_good_one_applies(home: Path) -> None:
    config = home / "config.toml"
    config.write_text("[server]\ndebounce_ms = 50\n")
    proc = Proc(home)
    try:
        proc.ready()
        config.write_text("[server]\nno_such_key = 1\n")
        proc.p.send_signal(signal.SIGHUP)
        assert wait_for(lambda: "config_reload_failed" in proc.events(), 10), proc.logs()
        [failed] = [e for e in proc.logs() if e["event"] == "config_reload_failed"]
        assert "server.no_such_key" in failed["error"]
        with RawConn(proc.socket) as c:
            assert c.result("hello")["server"] == "memoryd"
            ws = home / "declared"
            (ws / "memory").mkdir(parents=True)
            config.write_text(f'[[workspaces]]\npath = "{ws}"\nname = "main"\n')
            proc.p.send_signal(signal.SIGHUP)
            assert wait_for(
                lambda: (
                    c.result("workspace.list")["workspaces"]
                    == [{"name": "main", "path": str(ws), "source": "config"}]
                ),
                10,
            )
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait() == EXIT_OK
    finally:
        proc.kill()


def test_invalid_config_at_start_exits_with_the_config_code_naming_the_key(home: Path) -> None:
    (home / "config.toml").write_text('[search]\nmax_results = "many"\n')
    proc = Proc(home)
    assert proc.wait() == EXIT_CONFIG
    [line] = proc.logs()
    assert line["event"] == "config_error" and "search.max_results" in line["error"]


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("[index]\nextra_paths = " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
        ('[[workspaces]]\npath = "/"\n', "the file system's root"),
        ('[[workspaces]]\npath = "notes/alice"\n', "must be absolute"),
        ('[llm]\nbase_url = "file:///etc/passwd"\n', "llm.base_url must be an http://"),
        ('[embedding]\nbase_url = "file:///x"\n', "embedding.base_url must be an http://"),
        ("[server]\nidle_timeout = 0\n", "server.idle_timeout must be between 0.1"),
    ],
)
def test_a_config_that_cannot_work_exits_with_the_config_code_and_the_reason(
    home: Path, toml: str, said: str
) -> None:
    (home / "config.toml").write_text(toml)
    proc = Proc(home)
    assert proc.wait() == EXIT_CONFIG
    [line] = proc.logs()
    assert line["event"] == "config_error" and said in line["error"], line


def test_socket_dir_open_to_others_exits_with_the_socket_code(home: Path) -> None:
    (home / "run").mkdir(mode=0o755)
    os.chmod(home / "run", 0o755)
    proc = Proc(home)
    assert proc.wait() == EXIT_SOCKET
    [line] = proc.logs()
    assert "chmod 700" in line["error"]


def test_socket_option_overrides_the_default_path(home: Path) -> None:
    custom = home / "s" / "x.sock"
    proc = Proc(home, "--socket", str(custom))
    proc.socket = custom
    try:
        proc.ready()
        assert (home / "s" / "x.lock").exists()
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait() == EXIT_OK
        assert not custom.exists()
    finally:
        proc.kill()


def test_version_and_doctor_json(home: Path) -> None:
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_EMBEDDING_PROVIDER": "none"}
    out = subprocess.run(
        [sys.executable, "-m", "memoryd.cli", "--version"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("memoryd ")
    doc = subprocess.run(
        [sys.executable, "-m", "memoryd.cli", "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    checks = json.loads(doc.stdout)["checks"]
    assert [c["name"] for c in checks] == [
        "config",
        "socket",
        "state",
        "sqlite_vec",
        "local_model",
        "provider",
    ]
    assert all(set(c) == {"name", "ok", "detail", "fix"} for c in checks)
    assert doc.returncode == (0 if all(c["ok"] for c in checks) else 1)
    (home / "config.toml").write_text("[search]\nmax_results = 0\n")
    bad = subprocess.run(
        [sys.executable, "-m", "memoryd.cli", "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    config_check = json.loads(bad.stdout)["checks"][0]
    assert not config_check["ok"] and "search.max_results" in config_check["detail"]


# A child that counts the bundled model's loads (onnxruntime sessions made by local.py) and
# the int8 rewrites run in a child Python, then runs `memoryd doctor --json`.
COUNT_LOADS = """
import json, sys, threading
from memoryd.embeddings import local
loads, rewrites = [], []
def profile(frame, event, arg):
    if event == "call" and frame.f_code is local._load_session.__code__:
        loads.append(1)
def audit(event, args):
    if event == "subprocess.Popen" and any("import onnx" in str(a) for a in args[1]):
        rewrites.append(1)
sys.setprofile(profile)
threading.setprofile(profile)
sys.addaudithook(audit)
from memoryd.cli import main
main(["doctor", "--json"])
sys.setprofile(None)
print(json.dumps({"loads": len(loads), "rewrites": len(rewrites)}))
"""


@pytest.mark.model
def test_doctor_with_the_daemon_stopped_loads_the_model_once_and_reuses_the_kept_rewrite(
    home: Path,
) -> None:
    (home / "state").mkdir(mode=0o700)  # a daemon ran here before: it keeps its state there
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["MEMORYD_HOME"] = str(home)  # provider auto, no key: the bundled model
    kept: list[tuple[Path, int]] = []
    counts: list[dict[str, int]] = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", COUNT_LOADS], env=env, capture_output=True, text=True
        )
        *doctor, counted = done.stdout.splitlines()
        checks = {c["name"]: c for c in json.loads("\n".join(doctor))["checks"]}
        assert checks["local_model"]["ok"] and checks["provider"]["ok"], checks
        assert "local" in checks["provider"]["detail"]
        counts.append(json.loads(counted))
        kept += [(p, p.stat().st_mtime_ns) for p in (home / "state" / "models").glob("*.onnx")]
    # Each run loads it once; the first run rewrites and keeps it, the second reuses that.
    assert counts == [{"loads": 1, "rewrites": 1}, {"loads": 1, "rewrites": 0}]
    assert len(kept) == 2 and kept[0] == kept[1]


def test_request_lines_are_debug_a_refused_request_info(home: Path) -> None:
    for level, expected in (
        ("info", [("get", "unknown_workspace")]),
        ("debug", [("hello", "ok"), ("get", "unknown_workspace")]),
    ):
        daemon = Proc(home, env={"MEMORYD_LOG_LEVEL": level})
        try:
            daemon.ready()
            with RawConn(daemon.socket) as c:
                c.result("hello")
                c.send(protocol.request(2, "get", {"path": "MEMORY.md"}))
                c.recv()
            daemon.p.send_signal(signal.SIGTERM)
            assert daemon.wait() == EXIT_OK
        finally:
            daemon.kill()
        lines = [
            (e["method"], e["result"], e["level"])
            for e in daemon.logs()
            if e.get("event") == "request"
        ]
        assert [(m, r) for m, r, _ in lines] == expected, lines
        assert {lvl for m, r, lvl in lines} <= {"debug", "info"}
        assert all(lvl == ("debug" if r == "ok" else "info") for _, r, lvl in lines)


# How long a test waits for one answer during a scan: a bound for a daemon that stopped
# answering, never a timing (a loaded CI machine at load 10 took seconds for one status).
ANSWER_WAIT_S = 120


def _status_during_the_first_index(proc: Proc) -> dict[str, Any]:
    """The first status that says the start-up scan (here a first index) is under way."""
    seen: list[dict[str, Any]] = []

    def scanning() -> bool:
        with RawConn(proc.socket, timeout=ANSWER_WAIT_S) as c:
            ws = c.result("status")["workspaces"][0]
        scan = ws.get("startup_scan", {})
        seen[:] = [ws]
        return bool(scan.get("running") and scan.get("done", 0) > 0)

    assert wait_for(scanning, 60, interval=0.05), (seen, proc.logs())
    return seen[0]


def test_status_is_answered_during_a_first_index(home: Path) -> None:
    """memctl status while a first index runs: answered as it goes (issue 38: the event
    loop once waited for the log lines' masking, and status for one thread hop per part),
    with its counts and the scan's progress; hello meanwhile too."""
    ws = big_workspace(home / "ws", files=3000)
    (home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\n')
    proc = Proc(home)
    try:
        proc.ready()
        during = _status_during_the_first_index(proc)
        scan = during["startup_scan"]
        assert 0 < scan["done"] <= scan["total"], scan
        assert during["files"] <= 3001 and during["pending_vectors"] == 0, during
        assert {"chunks", "pending_files", "jobs", "watcher", "degraded"} <= during.keys()
        with RawConn(proc.socket, timeout=ANSWER_WAIT_S) as c:
            assert c.result("hello", {"client": "test"})["server"] == "memoryd"
            done = lambda: c.result("status")["workspaces"][0]  # noqa: E731
            assert wait_for(lambda: done()["files"] == 3001, 120), done()
            assert wait_for(lambda: not done()["startup_scan"]["running"], 60), done()
            assert "seconds" in done()["startup_scan"]
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait(60) == EXIT_OK
    finally:
        proc.kill()


def test_sigterm_during_a_long_startup_scan_stops_it_at_a_file_boundary(home: Path) -> None:
    """SIGTERM waited for a whole scan (10.9 s for 10k files). The scan stops at the next
    file, what it committed stays, and the next start indexes the rest."""
    ws = big_workspace(home / "ws", files=3000)
    (home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\n')
    proc = Proc(home)
    try:
        proc.ready()
        _status_during_the_first_index(proc)
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait(60) == EXIT_OK
    finally:
        proc.kill()  # a failure above must not leave it running (and its log open) for others
    stopped = [e for e in proc.logs() if e.get("event") == "sync_stopped"]
    assert stopped and stopped[0]["done"] < stopped[0]["total"], proc.logs()[-5:]
    _restart_indexes_all(home, 3001)


def _restart_indexes_all(home: Path, files: int) -> None:
    """The next start indexes what the last one did not get to."""
    again = Proc(home)
    try:
        again.ready()
        with RawConn(again.socket, timeout=ANSWER_WAIT_S) as c:
            assert wait_for(lambda: c.result("status")["workspaces"][0]["files"] == files, 120)
    finally:
        again.kill()


def _children(pid: int) -> set[int]:
    kids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids |= {int(k) for k in (task / "children").read_text().split()}
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads children from /proc")
def test_the_chunking_processes_of_a_first_index_go_when_the_daemon_is_killed(
    home: Path,
) -> None:
    """A first index chunks in worker processes (index/prepare.py): kill -9 of the daemon
    must not leave them running, and the next start indexes everything."""
    ws = big_workspace(home / "ws", files=3000)
    (home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\n')
    proc = Proc(home)
    proc.ready()
    kids: set[int] = set()

    def chunking() -> bool:
        kids.update(_children(proc.p.pid))
        return len(kids) >= 1

    assert wait_for(chunking, 60, interval=0.02), proc.logs()[-5:]
    proc.p.send_signal(signal.SIGKILL)
    proc.wait()
    assert wait_for(lambda: not any(_alive(k) for k in kids), 20), [
        Path(f"/proc/{k}/cmdline").read_bytes() for k in kids if _alive(k)
    ]
    _restart_indexes_all(home, 3001)
