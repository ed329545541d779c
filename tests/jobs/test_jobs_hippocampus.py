"""hippocampus: MEMORY.md is byte-identical after every failure; a success is backed up,
written atomically only if nobody edited it meanwhile, and searchable at once."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from engine_util import search
from fakes.openai_server import FakeOpenAIServer
from jobs_util import JobHarness, set_mtime, transcript
from memoryd.index.workspace import WorkspaceIndex

pytestmark = pytest.mark.timeout(60)

OLD = """\
# Memory

## People
- Alice prefers tea.
- Bob leads the data team.

## Projects
- memoryd uses SQLite with FTS5.
- The search fusion is weighted.

## Decisions
- 2025-03-01: keep markdown as the source of truth.
"""

GOOD = """\
# Memory

## People
- Alice prefers coffee (since 2025-03-11).
- Bob leads the data team.

## Projects
- memoryd uses SQLite with FTS5.
- The search fusion is weighted.

## Decisions
- 2025-03-01: keep markdown as the source of truth.
- 2025-03-10: the retrieval benchmark uses LoCoMo and the numbat dataset.
"""

DAILY = {
    "memory/2025-03-10.md": "# 2025-03-10\n\n- Decided: benchmark on LoCoMo plus quokka.\n",
    "memory/2025-03-11.md": "# 2025-03-11\n\n- Alice switched to coffee.\n",
    "memory/2025-02-01.md": "# 2025-02-01\n\n- too old for the lookback window\n",
}


@pytest.fixture
def harness(llm_harness: JobHarness, index: WorkspaceIndex) -> JobHarness:
    llm_harness.write("MEMORY.md", OLD)
    for rel, text in DAILY.items():
        llm_harness.write(rel, text)
    index.sync()
    return llm_harness


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the workspace and its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def without(text: str, line: str) -> str:
    return "".join(x for x in text.splitlines(keepends=True) if x.rstrip("\n") != line)


FAILURES: dict[str, tuple[Callable[[FakeOpenAIServer], None], str]] = {
    "http-500": (lambda s: s.respond_status(500, endpoint="chat"), "HTTP 500"),
    "timeout": (lambda s: s.respond_chat(GOOD, delay=2.0), "timed out"),
    "empty-content": (lambda s: s.respond_chat(""), "empty"),
    "cut-off": (
        lambda s: s.respond_chat(GOOD[:120], finish_reason="length"),
        "cut off by the token limit",
    ),
    "content-filter": (
        lambda s: s.respond_chat(GOOD, finish_reason="content_filter"),
        "did not finish",
    ),
    "drops-a-heading": (
        lambda s: s.respond_chat(without(GOOD, "## Decisions")),
        "removes the heading 'decisions'",
    ),
    "garbage-not-json": (
        lambda s: s.respond_garbage("not_json", endpoint="chat"),
        "returned garbage: the answer is not JSON",
    ),
    "garbage-no-choices": (
        lambda s: s.respond_garbage("empty_data", endpoint="chat"),
        "returned garbage: no 'choices'",
    ),
    "json-instead-of-markdown": (
        lambda s: s.respond_chat('{"MEMORY.md": "# Memory"}'),
        "not a markdown file: it is JSON",
    ),
    "chat-reply": (
        lambda s: s.respond_chat("Sure! Here is the updated MEMORY.md:\n\n" + GOOD),
        "starts with a chat reply",
    ),
    "chat-sign-off": (
        lambda s: s.respond_chat(GOOD + "\nLet me know if you would like any other changes!\n"),
        "ends with a chat reply",
    ),
    "half-a-surrogate-pair": (
        lambda s: s.respond_chat(GOOD + "- cut emoji \ud83d\n"),
        "half of a surrogate pair",
    ),
    "echo-of-the-prompt": (lambda s: None, "it repeats the prompt"),  # the fake's default
}


@pytest.mark.parametrize("mode", list(FAILURES))
def test_every_llm_failure_leaves_memory_md_byte_identical_and_records_why(
    harness: JobHarness, openai_server: FakeOpenAIServer, mode: str
) -> None:
    script, reason = FAILURES[mode]
    harness.data["llm"]["timeout"] = 0.3
    script(openai_server)
    before = snapshot(harness.root)
    record = harness.run("hippocampus")
    assert snapshot(harness.root) == before  # MEMORY.md, daily files: nothing written
    assert record.status == "failed"
    assert reason in record.message
    assert "unchanged" in record.message
    stored = harness.history.last("hippocampus", harness.root)
    assert stored is not None and (stored.status, stored.message) == ("failed", record.message)
    assert not (harness.root / "memory" / ".history").exists()


def test_a_rewrite_dropping_too_much_is_refused_and_the_run_falls_back_to_append_only(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    openai_server.respond_chat(
        "# Memory\n\n## People\n\n## Projects\n\n## Decisions\n- Alice prefers coffee.\n"
    )
    memory = harness.root / "MEMORY.md"
    old = [line for line in memory.read_text().splitlines() if line.strip()]
    record = harness.run("hippocampus")
    assert record.status == "ok", record.message
    assert record.report["mode"].startswith("append-only: the answer drops 56%")
    now = memory.read_text().splitlines()
    assert all(line in now for line in old)  # nothing of it removed
    report = harness.root / record.report["report_file"]
    assert report.read_text().startswith("# hippocampus ")


def test_success_keeps_a_backup_writes_the_answer_and_it_is_searchable(
    harness: JobHarness, openai_server: FakeOpenAIServer, index: WorkspaceIndex
) -> None:
    daily_before = {rel: (harness.root / rel).read_bytes() for rel in DAILY}
    assert not search(index, "numbat").results
    openai_server.respond_chat(GOOD)
    record = harness.run("hippocampus")
    assert record.status == "ok", record.message
    assert (harness.root / "MEMORY.md").read_text() == GOOD
    backup = harness.root / "memory" / ".history" / "MEMORY.20250312T093000.md"
    assert backup.read_text() == OLD
    assert record.report["backup"] == "memory/.history/MEMORY.20250312T093000.md"
    assert {rel: (harness.root / rel).read_bytes() for rel in DAILY} == daily_before
    assert [h.path for h in search(index, "numbat").results] == ["MEMORY.md"]  # no waiting
    assert not any(h.path.startswith("memory/.history") for h in search(index, "tea").results)
    (request,) = openai_server.requests_to("chat")
    prompt = request.body["messages"][1]["content"]
    assert OLD in prompt and "benchmark on LoCoMo plus quokka" in prompt
    assert "Alice switched to coffee" in prompt and "too old" not in prompt  # 7-day window
    assert request.body["max_tokens"] == 4096
    assert record.report["daily_files"] == ["memory/2025-03-10.md", "memory/2025-03-11.md"]
    assert record.report["lines_dropped"] == 1 and record.report["headings_removed"] == []


def test_retries_a_server_error_then_succeeds(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    harness.data["llm"]["max_retries"] = 2
    openai_server.respond_status(500, endpoint="chat")
    openai_server.respond_status(429, endpoint="chat")
    openai_server.respond_chat(GOOD)
    record = harness.run("hippocampus")
    assert record.status == "ok", record.message
    assert len(openai_server.requests_to("chat")) == 3
    assert (harness.root / "MEMORY.md").read_text() == GOOD


def test_an_edit_during_the_llm_call_wins_and_the_next_run_retries(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    openai_server.respond_chat(GOOD, delay=0.5)
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(harness.run("hippocampus")))
    worker.start()
    deadline = 100
    while not openai_server.requests_to("chat") and deadline:
        threading.Event().wait(0.01)
        deadline -= 1
    assert openai_server.requests_to("chat"), "the job never asked the LLM"
    edited = OLD + "- Carol joined the team.\n"
    (harness.root / "MEMORY.md").write_text(edited)  # a person edits while the LLM thinks
    worker.join(10)
    (record,) = result
    assert record.status == "skipped"  # type: ignore[attr-defined]
    assert "edited during the run" in record.message  # type: ignore[attr-defined]
    assert (harness.root / "MEMORY.md").read_text() == edited
    assert not (harness.root / "memory" / ".history").exists()

    merged = GOOD + "- Carol joined the team.\n"
    openai_server.respond_chat(merged)
    again = harness.run("hippocampus", trigger="schedule")
    assert again.status == "ok", again.message
    assert "Carol joined" in openai_server.requests_to("chat")[-1].body["messages"][1]["content"]
    assert (harness.root / "MEMORY.md").read_text() == merged
    (backup,) = (harness.root / "memory" / ".history").glob("MEMORY.*.md")
    assert backup.read_text() == edited


def test_dry_run_shows_the_diff_and_writes_nothing(
    harness: JobHarness, openai_server: FakeOpenAIServer, index: WorkspaceIndex
) -> None:
    openai_server.respond_chat(GOOD)
    before = snapshot(harness.root)
    record = harness.run("hippocampus", dry_run=True)
    assert record.status == "ok" and record.dry_run
    assert snapshot(harness.root) == before
    diff = record.report["diff"]
    assert diff.startswith("--- a/MEMORY.md\n+++ b/MEMORY.md\n")
    assert "-- Alice prefers tea.\n" in diff
    assert "+- 2025-03-10: the retrieval benchmark uses LoCoMo and the numbat dataset.\n" in diff
    assert "would change 3 line(s)" in record.message
    assert not search(index, "numbat").results


def test_large_input_is_worked_through_in_parts_never_truncated(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    harness.data["llm"].update(context_tokens=1400, max_output_tokens=500)
    long_line = "- " + " filler ".join(f"marker{i:03d}" for i in range(150))
    harness.write("memory/2025-03-08.md", long_line + "\n")
    harness.write(
        "memory/2025-03-09.md", "".join(f"- fact {i} about walruses\n" for i in range(40))
    )

    def answer(body: dict[str, Any]) -> str:
        _system, user = (m["content"] for m in body["messages"])
        if user.startswith("Notes, part"):
            return f"- extracted from {user.split(':', 1)[0].lower()}"
        return GOOD

    openai_server.answer_chat_with(answer)
    record = harness.run("hippocampus")
    assert record.status == "ok", record.message
    requests = [r.body["messages"][1]["content"] for r in openai_server.requests_to("chat")]
    *extracts, final = requests
    assert len(extracts) == record.report["parts"] >= 3
    assert all(len(r) < 1400 * 3 for r in requests)  # every call fits the window
    seen = "".join(r.split("\n\n", 1)[1] for r in extracts)  # without the "part i of n"
    squashed = re.sub(r"\s+", "", seen)
    assert re.sub(r"\s+", "", long_line) in squashed  # split across parts, not cut
    assert all(f"- fact {i} about walruses" in seen for i in range(40))
    assert "Alice switched to coffee" in seen and "quokka" in seen
    assert OLD in final and all(
        f"- extracted from notes, part {i} of {len(extracts)}" in final
        for i in range(1, len(extracts) + 1)
    )
    assert record.report["llm_calls"] == len(extracts) + 1
    assert (harness.root / "MEMORY.md").read_text() == GOOD


def test_without_an_llm_the_run_curates_deterministically_and_asks_no_model(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    del harness.data["llm"]
    memory = (harness.root / "MEMORY.md").read_bytes()
    record = harness.run("hippocampus")
    assert record.status == "ok" and record.report["mode"].startswith("no LLM (set")
    assert (harness.root / "MEMORY.md").read_bytes() == memory  # nothing marked, no duplicate
    assert not openai_server.requests


def test_force_accepts_an_answer_that_removes_a_heading(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    answer = without(GOOD, "## Decisions")
    openai_server.respond_chat(answer)
    record = harness.run("hippocampus", force=True)
    assert record.status == "ok", record.message
    assert (harness.root / "MEMORY.md").read_text() == answer
    assert record.report["forced"] == ["removes the heading 'decisions'"]


def test_a_fenced_answer_is_unwrapped(harness: JobHarness, openai_server: FakeOpenAIServer) -> None:
    openai_server.respond_chat(f"```markdown\n{GOOD}```\n")
    assert harness.run("hippocampus").status == "ok"
    assert (harness.root / "MEMORY.md").read_text() == GOOD


def test_a_scheduled_run_with_nothing_new_does_not_call_the_llm(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    openai_server.respond_chat(GOOD)
    assert harness.run("hippocampus", trigger="schedule").status == "ok"
    again = harness.run("hippocampus", trigger="schedule")
    assert again.status == "skipped" and "nothing new" in again.message
    assert len(openai_server.requests_to("chat")) == 1


def test_memory_md_that_is_not_utf8_is_never_rewritten(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    raw = b"# Memory\n\n- caf\xe9 latin-1\n"
    harness.write("MEMORY.md", raw)
    openai_server.respond_chat(GOOD)
    record = harness.run("hippocampus")
    assert record.status == "failed" and "not valid UTF-8" in record.message
    assert (harness.root / "MEMORY.md").read_bytes() == raw


def test_the_api_key_never_reaches_the_record_or_the_logs(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    openai_server.respond_status(
        401,
        body={"error": {"message": "Incorrect API key provided: sk-test-secret-123"}},
        endpoint="chat",
    )
    with capture_logs() as logs:
        record = harness.run("hippocampus")
    assert record.status == "failed" and "HTTP 401" in record.message and "***" in record.message
    assert "sk-test-secret-123" not in repr(logs) + record.message + repr(record.report)


def test_session_highlights_are_included_when_asked(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    harness.data["jobs"] = {"hippocampus": {"include_sessions": True}}
    path = harness.write(
        "sessions/s1.jsonl",
        transcript(
            "s1",
            [
                ("user", "remember that the wombat server moved to rack 7"),
                ("assistant", "noted: wombat is on rack 7"),
            ],
            harness.clock.now(),
        ),
    )
    set_mtime(path, harness.clock.now())
    openai_server.respond_chat(GOOD)
    record = harness.run("hippocampus")
    assert record.status == "ok" and record.report["sessions"] == 1
    prompt = openai_server.requests_to("chat")[0].body["messages"][1]["content"]
    assert "user: remember that the wombat server moved to rack 7" in prompt


def git_in(folder: Path) -> Callable[..., str]:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(folder),
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(folder), *args], env=env, check=True, capture_output=True, text=True
        ).stdout

    return git


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_in_a_git_repository_the_change_is_committed_and_staged_work_left_alone(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    git = git_in(harness.root)
    git("init", "-q")
    git("add", "MEMORY.md")
    git("commit", "-q", "-m", "initial")
    harness.write("notes.txt", "staged, not for memoryd to commit\n")
    git("add", "notes.txt")
    openai_server.respond_chat(GOOD)
    record = harness.run("hippocampus")
    assert record.status == "ok", record.message
    assert record.report["git"] == "committed" and record.report["git_commit"]
    assert git("show", "HEAD:MEMORY.md") == GOOD
    assert git("show", "HEAD~1:MEMORY.md") == OLD
    assert "A  notes.txt" in git("status", "--porcelain")  # still staged, not committed
    assert "memoryd hippocampus" in git("log", "-1", "--format=%an %s")


@needs_git
def test_a_workspace_inside_a_larger_repository_is_not_committed_to(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    git = git_in(harness.root.parent)  # e.g. a dotfiles repository holding the home folder
    git("init", "-q")
    openai_server.respond_chat(GOOD)
    record = harness.run("hippocampus")
    assert record.status == "ok", record.message
    assert record.report["git"].startswith("inside the git repository")
    assert "git_commit" not in record.report
    assert (harness.root / "memory" / ".history" / "MEMORY.20250312T093000.md").exists()


@pytest.mark.parametrize("which", [".MEMORY.md.", ".MEMORY.2025"])  # the new file, the backup
def test_a_full_disk_fails_the_run_as_disk_full_and_leaves_memory_md_as_it_was(
    harness: JobHarness,
    openai_server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    which: str,
) -> None:
    """It was 'internal error: OSError: [Errno 28] No space left on device'. ENOSPC is
    injected at the fsync of one temp file (where a full disk shows on file systems that
    allocate late); everything else is real."""
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        name = ""
        with contextlib.suppress(OSError):
            name = os.readlink(f"/proc/self/fd/{fd}").rpartition("/")[2]
        if name.startswith(which):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to tell the temp file's descriptor")
    monkeypatch.setattr(os, "fsync", fsync)
    openai_server.respond_chat(GOOD)
    record = harness.run("hippocampus")
    assert record.status == "failed"
    assert "the disk is full" in record.message and "unchanged" in record.message
    assert record.report["error"] == "disk_full"
    assert (harness.root / "MEMORY.md").read_text() == OLD
    assert not [p.name for p in harness.root.rglob("*.tmp")]
