"""A bulk sync (a first index, or most of one): files share transactions, the in-memory BM25
is suspended and loaded once after, and the result is what one file at a time gives."""

from __future__ import annotations

from typing import Any

import pytest

from engine_util import IndexFactory, search
from memoryd.index.sync import BATCH_FILES
from memoryd.index.workspace import WorkspaceIndex

FILES = 300  # past the 256 new files that make a run bulk from its start
WORDS = ("garden", "bicycle", "dentist", "lisbon", "coffee")
WORDS += ("budget", "deploy", "hiking", "museum", "pottery")
DAY = "memory/2024-{:02d}-{:02d}.md"


def write_days(make_index: IndexFactory, n: int = FILES) -> None:
    for i in range(n):
        body = "\n".join(
            f"- {h:02d}:00 {WORDS[(i + h) % 10]} {WORDS[(i * h) % 10]} note{i}"
            for h in range(8, 8 + 1 + i % 5)
        )
        make_index.write(DAY.format(1 + i // 28, 1 + i % 28), f"# Day {i}\n\n{body}\n")


def top(ix: WorkspaceIndex, query: str) -> list[tuple[str, int, float]]:
    resp = search(ix, query, mode="keyword", max_results=20, min_score=0.0)
    return [(h.path, h.start_line, h.score) for h in resp.results]


def count_commits(ix: WorkspaceIndex) -> list[int]:
    commits = [0]

    def hook() -> bool:
        commits[0] += 1
        return False

    assert ix._wconn is not None
    ix._wconn.set_commit_hook(hook, id="test_commits")
    return commits


def test_a_first_index_commits_in_batches_and_ends_on_the_in_memory_bm25(
    make_index: IndexFactory,
) -> None:
    write_days(make_index)
    ix = make_index()
    commits = count_commits(ix)
    report = ix.sync()
    assert report.files_changed == FILES
    assert commits[0] <= FILES // BATCH_FILES + 2  # not one per file
    assert ix.status()["keyword_scan"] == "memory"  # loaded once, when the run ended
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    for q in ("garden", "note7", "coffee budget hiking", "pottery note299"):
        assert top(ix, q) == top(fts5, q)
    assert [h.path for h in search(ix, "note123", mode="keyword").results] == [
        "memory/2024-05-12.md"
    ]


def test_small_syncs_keep_one_transaction_per_file_and_follow_the_copy(
    make_index: IndexFactory,
) -> None:
    write_days(make_index, 20)
    ix = make_index()
    ix.sync()
    commits = count_commits(ix)
    for i in range(3):
        make_index.write(f"memory/2025-01-0{i + 1}.md", f"- 09:00 zeppelin{i} marmalade\n")
    ix.sync()
    assert commits[0] == 3
    assert ix.status()["keyword_scan"] == "memory"
    assert [h.path for h in search(ix, "zeppelin1", mode="keyword").results] == [
        "memory/2025-01-02.md"
    ]


class _FailsOn:
    def __init__(self, real: Any, marker: str) -> None:
        self.real, self.marker = real, marker

    def encode_batch(self, texts: list[str], **kw: Any) -> Any:
        if any(self.marker in t for t in texts):
            raise RuntimeError("tokenizer exploded")
        return self.real.encode_batch(texts, **kw)


def test_a_file_failing_inside_a_batch_is_skipped_and_the_batch_commits(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.embeddings.tokenizer import load_tokenizer
    from memoryd.index import workspace

    monkeypatch.setattr(workspace, "load_tokenizer", lambda: _FailsOn(load_tokenizer(), "kaboom"))
    write_days(make_index)
    make_index.write("memory/2023-12-31.md", "- 09:00 kaboom and garden\n")
    ix = make_index()
    report = ix.sync()
    assert report.files_changed == FILES
    assert list(report.skipped) == ["memory/2023-12-31.md"]
    fts5 = make_index({"index": {"keyword_memory_mb": 0}})
    assert top(ix, "garden note42") == top(fts5, "garden note42")
    assert ix.status()["keyword_scan"] == "memory"
