"""The LLM jobs within bounds: what they read and how many calls a run makes (issue 13, 7).

Before, hippocampus sent thousands of calls for one large daily file and fallback_summary
read a whole transcript into memory; now input that a run's llm.max_calls_per_run cannot
condense is refused before the first call, with the reason."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine_util import IndexFactory
from fakes.openai_server import FakeOpenAIServer
from jobs_util import NOW, JobHarness, llm_config, set_mtime, transcript
from memoryd.files.transcripts import stream_transcript

OLD = "# Memory\n\n## People\n- Alice likes tea.\n"


@pytest.fixture
def harness(
    make_index: IndexFactory, tmp_path: Path, openai_server: FakeOpenAIServer
) -> Iterator[JobHarness]:
    h = JobHarness(
        make_index.ws,
        tmp_path / "state.sqlite",
        {
            "llm": llm_config(
                openai_server.base_url,
                context_tokens=1400,
                max_output_tokens=500,
                max_calls_per_run=8,
            )
        },
    )
    h.write("MEMORY.md", OLD)
    yield h
    h.close()


def big_notes(n: int) -> str:
    return "".join(f"- fact {i}: the walrus count on pier {i % 97} was {i * 7}\n" for i in range(n))


def test_hippocampus_refuses_notes_beyond_its_call_budget_before_calling(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    harness.write("memory/2025-03-11.md", big_notes(20_000))  # ~1 MB: hundreds of parts
    record = harness.run("hippocampus")
    assert record.status == "failed", record.message
    assert "llm.max_calls_per_run (8)" in record.message
    assert openai_server.requests_to("chat") == []
    assert (harness.root / "MEMORY.md").read_text() == OLD


def test_hippocampus_leaves_out_a_daily_file_over_max_file_bytes_and_says_so(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    harness.data["index"] = {"max_file_bytes": 4096}
    harness.write("memory/2025-03-10.md", big_notes(200))  # ~9 KB
    harness.write("memory/2025-03-11.md", "# 2025-03-11\n\n- Alice switched to coffee.\n")
    openai_server.respond_chat(OLD + "- Alice switched to coffee.\n")
    record = harness.run("hippocampus")
    assert record.status == "ok", record.message
    assert record.report["too_large"] == ["memory/2025-03-10.md"]
    assert record.report["daily_files"] == ["memory/2025-03-11.md"]
    [call] = openai_server.requests_to("chat")
    assert "walrus" not in call.body["messages"][1]["content"]


def test_fallback_summary_leaves_a_session_too_long_for_its_budget_alone_once(
    harness: JobHarness, openai_server: FakeOpenAIServer
) -> None:
    start = NOW - dt.timedelta(hours=3)
    messages = [
        ("user" if i % 2 else "assistant", f"message {i} " + "blah " * 40) for i in range(3000)
    ]
    path = harness.write("sessions/long.jsonl", transcript("long", messages, start))
    set_mtime(path, NOW - dt.timedelta(hours=1))
    record = harness.run("fallback_summary")
    assert openai_server.requests_to("chat") == []
    [left] = record.report["left_alone"]
    assert left["session"] == "sessions/long.jsonl"
    assert "llm.max_calls_per_run (8)" in left["reason"]
    assert not (harness.root / "memory" / "2025-03-12.md").exists()
    again = harness.run("fallback_summary")
    assert again.report["handled_before"] == 1 and openai_server.requests_to("chat") == []


def test_a_transcript_is_read_a_block_at_a_time_and_an_overlong_line_stepped_over() -> None:
    line = {"type": "message", "message": {"role": "user", "content": "before"}}
    after = {"type": "message", "message": {"role": "user", "content": "after"}}
    data = (json.dumps(line) + "\n" + "x" * 50_000 + "\n" + json.dumps(after)).encode()
    blocks = list(stream_transcript(io.BytesIO(data), block=4096, max_line_bytes=8192))
    assert all(sum(map(len, raws)) <= 4096 + 8192 for raws, _ in blocks)
    texts = [text for _, parsed in blocks for _, text in parsed.messages]
    assert texts == ["user: before", "user: after"]
    assert sum(parsed.malformed for _, parsed in blocks) == 1
