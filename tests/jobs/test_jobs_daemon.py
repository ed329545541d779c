"""Jobs inside the real daemon: jobs.list / jobs.run over the real socket, status fields,
runs on schedule with no manual step (fake clock), and memctl jobs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread, RawConn, error_code, memctl, wait_for
from fakes.clock import FakeClock
from fakes.openai_server import FakeOpenAIServer
from jobs_util import NOW, llm_daemon
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(60)

OLD = "# Memory\n\n## Projects\n- memoryd keeps markdown as the truth.\n"
NEW = OLD + "- 2025-03-11: the benchmark uses the numbat dataset.\n"


@pytest.fixture
def workspace(md_home: Path) -> Path:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(OLD)
    (ws / "memory" / "2025-03-11.md").write_text("- benchmark: numbat dataset chosen\n")
    return ws


@pytest.fixture
def daemon(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> Iterator[DaemonThread]:
    with llm_daemon(md_home, workspace, "alice", openai_server.base_url, indexed=False) as d:
        yield d


def by_name(jobs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {j["name"]: j for j in jobs}


def test_jobs_list_shows_schedule_next_run_and_llm_per_workspace(daemon: DaemonThread) -> None:
    with RawConn(daemon.socket_path) as conn:
        result = conn.result("jobs.list")
    assert result["timezone"] == "Europe/Berlin"
    assert result["llm"]["configured"] is True and result["llm"]["model"] == "fake-chat"
    jobs = by_name(result["jobs"])
    assert set(jobs) == {
        "hippocampus",
        "retention",
        "fallback_summary",
        "ledger_compaction",
        "flush",
    }
    hippo = jobs["hippocampus"]
    assert (hippo["workspace"], hippo["schedule"], hippo["enabled"]) == ("alice", "0 3 * * *", True)
    assert hippo["next_run"] == "2025-03-13T03:00:00+01:00"
    assert jobs["retention"]["next_run"] == "2025-03-13T03:30:00+01:00"
    assert jobs["fallback_summary"]["next_run"] == "2025-03-12T09:45:00+01:00"
    assert jobs["ledger_compaction"]["next_run"] == "2025-03-13T03:45:00+01:00"
    assert hippo["last_run"] is None and hippo["running"] is False


def test_jobs_run_dry_run_then_real_run_and_the_change_is_searchable(
    daemon: DaemonThread, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.respond_chat(NEW)
    openai_server.respond_chat(NEW)
    with RawConn(daemon.socket_path) as conn:
        dry = conn.result("jobs.run", {"name": "hippocampus", "dry_run": True})
        assert (dry["status"], dry["dry_run"], dry["trigger"]) == ("ok", True, "manual")
        assert "+- 2025-03-11: the benchmark uses the numbat dataset." in dry["report"]["diff"]
        assert (workspace / "MEMORY.md").read_text() == OLD
        run = conn.result("jobs.run", {"name": "hippocampus", "workspace": "alice"})
        assert run["status"] == "ok", run["message"]
        assert run["started_at"].startswith("2025-03-12T09:30:00")
        assert (workspace / "MEMORY.md").read_text() == NEW
        hits = conn.result("search", {"query": "numbat benchmark", "mode": "keyword"})
        assert "MEMORY.md" in [h["path"] for h in hits["results"]]
        listed = by_name(conn.result("jobs.list", {"workspace": "alice", "history": 5})["jobs"])
        last = listed["hippocampus"]["last_run"]
        assert (last["status"], last["dry_run"]) == ("ok", False)
        assert [r["dry_run"] for r in listed["hippocampus"]["history"]] == [False, True]
        status = conn.result("status")
        jobs = by_name(status["workspaces"][0]["jobs"])
        assert jobs["hippocampus"]["last_run"]["status"] == "ok"
        assert jobs["hippocampus"]["next_run"] == "2025-03-13T03:00:00+01:00"


def test_jobs_run_refuses_unknown_jobs_and_params(daemon: DaemonThread) -> None:
    with RawConn(daemon.socket_path) as conn:
        frame = conn.call("jobs.run", {"name": "hippocampos"})
        assert error_code(frame) == "invalid_params" and "hippocampus" in frame["error"]["message"]
        assert (
            error_code(conn.call("jobs.run", {"name": "retention", "dryrun": True}))
            == "invalid_params"
        )
        assert error_code(conn.call("jobs.run", {})) == "invalid_params"
        frame = conn.call("jobs.run", {"name": "flush"})  # listed, but run on a transcript
        assert error_code(frame) == "invalid_params" and "memctl flush" in frame["error"]["message"]
        assert error_code(conn.call("jobs.list", {"history": 1000})) == "invalid_params"
        assert (
            error_code(conn.call("jobs.run", {"name": "retention", "workspace": "bob"}))
            == "unknown_workspace"
        )


def test_jobs_run_on_schedule_inside_the_daemon_without_a_manual_step(
    daemon: DaemonThread, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.respond_chat(NEW)
    assert daemon.daemon is not None
    clock = daemon.daemon.clock
    assert isinstance(clock, FakeClock)
    daemon.call_in_loop(clock.set, NOW.replace(day=13, hour=3, minute=0))

    def hippocampus_ran() -> bool:
        with RawConn(daemon.socket_path) as conn:
            jobs = by_name(conn.result("jobs.list")["jobs"])
        last = jobs["hippocampus"]["last_run"]
        return last is not None and last["status"] != "running"

    assert wait_for(hippocampus_ran, timeout=10)
    with RawConn(daemon.socket_path) as conn:
        listed = by_name(conn.result("jobs.list", {"history": 1})["jobs"])
    (run,) = listed["hippocampus"]["history"]
    assert (run["trigger"], run["status"]) == ("schedule", "ok"), run
    assert run["scheduled_for"] == "2025-03-13T03:00:00+01:00"
    assert (workspace / "MEMORY.md").read_text() == NEW
    assert listed["hippocampus"]["next_run"] == "2025-03-14T03:00:00+01:00"
    # fallback_summary's 09:45 .. 02:45 slots were all missed by the jump: one catch-up run.
    fallback = listed["fallback_summary"]["history"]
    assert [r["trigger"] for r in fallback] == ["catch-up"]


def test_memctl_jobs_list_json_and_human(daemon: DaemonThread) -> None:
    code, out, _ = memctl(daemon, "jobs", "list", "--json")
    assert code == 0
    data = json.loads(out)
    assert {j["name"] for j in data["jobs"]} == {
        "hippocampus",
        "retention",
        "fallback_summary",
        "ledger_compaction",
        "flush",
    }
    code, out, _ = memctl(daemon, "jobs", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "time zone Europe/Berlin; LLM: fake-chat at " + data["llm"]["base_url"]
    assert "workspace alice" in lines
    assert any(
        line.strip().startswith("hippocampus")
        and "0 3 * * *  next 2025-03-13 03:00" in line
        and "last: never run" in line
        for line in lines
    )


def test_memctl_jobs_run_dry_run_prints_the_diff_and_a_failure_exits_1(
    daemon: DaemonThread, openai_server: FakeOpenAIServer, workspace: Path
) -> None:
    openai_server.respond_chat(NEW)
    code, out, _ = memctl(daemon, "jobs", "run", "hippocampus", "--dry-run", "-w", "alice")
    assert code == 0
    assert out.startswith("--- a/MEMORY.md\n+++ b/MEMORY.md\n")
    assert "+- 2025-03-11: the benchmark uses the numbat dataset." in out
    assert out.splitlines()[-1].startswith("hippocampus (alice): ok in ")
    openai_server.respond_status(500, endpoint="chat")
    code, out, _ = memctl(daemon, "jobs", "run", "hippocampus", "-w", "alice")
    assert code == 1 and "failed" in out and "HTTP 500" in out
    assert (workspace / "MEMORY.md").read_text() == OLD
    code, out, _ = memctl(daemon, "status")
    assert code == 0 and "job hippocampus" in out and "last: failed" in out


def test_the_client_library_runs_and_lists_jobs(daemon: DaemonThread) -> None:
    with MemoryClient(daemon.socket_path) as client:
        run = client.jobs_run("retention", workspace="alice", dry_run=True)
        assert (run.status, run.job, run.dry_run) == ("ok", "retention", True)
        assert run.message == "dry run: would do nothing; nothing changed"
        listed = client.jobs_list(workspace="alice", name="retention", history=2)
        (job,) = listed.jobs
        assert job.name == "retention" and job.last_run is not None
        assert job.last_run.status == "ok" and len(job.history) == 1
        status = client.status()
        assert {j.name for j in status.workspaces[0].jobs} == {
            "hippocampus",
            "retention",
            "fallback_summary",
            "ledger_compaction",
            "flush",
        }


def test_searches_are_answered_while_a_job_waits_on_the_llm(
    daemon: DaemonThread, openai_server: FakeOpenAIServer
) -> None:
    openai_server.respond_chat(NEW, delay=1.5)
    results: list[dict[str, Any]] = []

    def run_job() -> None:
        with RawConn(daemon.socket_path) as conn:
            results.append(conn.result("jobs.run", {"name": "hippocampus"}))

    worker = threading.Thread(target=run_job)
    worker.start()
    assert wait_for(lambda: bool(openai_server.requests_to("chat")), timeout=5)
    with RawConn(daemon.socket_path) as conn:
        hits = conn.result("search", {"query": "numbat", "mode": "keyword"})
        running = by_name(conn.result("jobs.list")["jobs"])["hippocampus"]["running"]
    assert hits["results"] and running is True  # answered while the job still ran
    worker.join(10)
    assert results[0]["status"] == "ok"


def test_a_config_reload_reschedules_at_once(
    daemon: DaemonThread, md_home: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> None:
    (md_home / "config.toml").write_text(
        f'[llm]\nbase_url = "{openai_server.base_url}"\nmodel = "fake-chat"\n'
        '[jobs.hippocampus]\nschedule = "0 5 * * *"\n'
        "[jobs.fallback_summary]\nenabled = false\n"
        f'[[workspaces]]\npath = "{workspace}"\nname = "alice"\n'
    )
    assert daemon.daemon is not None
    daemon.call_in_loop(daemon.daemon.request_reload)

    def rescheduled() -> bool:
        with RawConn(daemon.socket_path) as conn:
            jobs = by_name(conn.result("jobs.list")["jobs"])
        return (
            jobs["hippocampus"]["next_run"] == "2025-03-13T05:00:00+01:00"
            and jobs["fallback_summary"]["next_run"] is None
        )

    assert wait_for(rescheduled, timeout=5)
