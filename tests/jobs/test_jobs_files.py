"""The jobs and the workspace file model's edges: names that are not UTF-8 (issue 13, item
1) and links swapped in (item 4), met by hippocampus and fallback_summary."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine_util import IndexFactory
from fakes.openai_server import FakeOpenAIServer
from jobs_util import NOW, JobHarness, llm_config, set_mtime, transcript

OLD = "# Memory\n\n## People\n- Alice likes tea.\n"


@pytest.fixture
def harness(
    make_index: IndexFactory, tmp_path: Path, openai_server: FakeOpenAIServer
) -> Iterator[JobHarness]:
    h = JobHarness(
        make_index.ws, tmp_path / "state.sqlite", {"llm": llm_config(openai_server.base_url)}
    )
    h.write("MEMORY.md", OLD)
    yield h
    h.close()


def bad_name(folder: Path, name: bytes) -> Path:
    path = os.path.join(os.fsencode(folder), name)
    return Path(os.fsdecode(path))


def test_hippocampus_reads_a_daily_file_whose_name_is_not_utf8_and_records_the_run(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    path = bad_name(harness.root / "memory", b"2025-03-11-caf\xe9.md")
    path.write_text("- Alice switched to coffee.\n")
    openai_server.respond_chat(OLD + "- Alice switched to coffee.\n")
    record = harness.run("hippocampus")
    assert record.status == "ok", record.message
    assert record.report["daily_files"] == ["memory/2025-03-11-caf\\xe9.md"]


def test_fallback_summary_survives_a_transcript_whose_name_is_not_utf8(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    (harness.root / "sessions").mkdir()
    path = bad_name(harness.root / "sessions", b"s\xff.jsonl")
    text = transcript(
        "s1",
        [("user", "adopt the kiwi protocol?"), ("assistant", "yes")],
        NOW - dt.timedelta(hours=3),
    )
    path.write_text(text.split("\n", 1)[1])  # no session line: the id comes from the name
    set_mtime(path, NOW - dt.timedelta(hours=1))
    openai_server.respond_chat("- Decided to adopt the kiwi protocol.")
    record = harness.run("fallback_summary")
    assert record.status == "ok", record.message
    assert record.report["summarised"][0]["session"] == "sessions/s\\xff.jsonl"
    assert "## Session summary (s)" in (harness.root / "memory" / "2025-03-12.md").read_text()
    again = harness.run("fallback_summary")
    assert again.report["handled_before"] == 1


def test_hippocampus_never_writes_its_backup_through_a_memory_link_to_outside(
    harness: JobHarness, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    # memory/ is a link out of the workspace (notes come from a transcript): the backup of
    # MEMORY.md goes to memory/.history, which must be opened beneath the workspace.
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.rmdir(harness.root / "memory")
    (harness.root / "memory").symlink_to(outside)
    harness.data["jobs"] = {"hippocampus": {"include_sessions": True}}
    path = harness.write(
        "sessions/s1.jsonl",
        transcript("s1", [("user", "Alice switched to coffee")], NOW - dt.timedelta(hours=3)),
    )
    set_mtime(path, NOW - dt.timedelta(hours=1))
    openai_server.respond_chat(OLD + "- Alice switched to coffee.\n")
    record = harness.run("hippocampus")
    assert record.status == "failed", record.message
    assert list(outside.iterdir()) == []
    assert (harness.root / "MEMORY.md").read_text() == OLD


def test_hippocampus_neither_sends_nor_rewrites_a_memory_md_linked_to_a_non_memory_file(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    # The indexing rule = the reading rule, for the jobs too: MEMORY.md -> .env is not memory.
    (harness.root / "MEMORY.md").unlink()
    harness.write(".env", "OPENAI_API_KEY=sk-secretvalue\n")
    (harness.root / "MEMORY.md").symlink_to(".env")
    harness.write("memory/2025-03-11.md", "- Alice switched to coffee.\n")
    openai_server.respond_chat(OLD)
    record = harness.run("hippocampus")
    assert record.status == "failed", record.message
    assert openai_server.requests_to("chat") == []
    assert (harness.root / ".env").read_text() == "OPENAI_API_KEY=sk-secretvalue\n"
