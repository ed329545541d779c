"""bench/retrieval.py as the issue specifies it: --json prints one JSON object and nothing
else on stdout (the engine's log goes to stderr), and --misses explains the misses."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAY = "2023-05-08"
LINES = [
    f"# {DAY}",
    "",
    "## Session 1 (8 May 2023)",
    "",
    "- [D1:1] Caroline: I went to the pottery workshop with my kids yesterday.",
    "- [D1:2] Melanie: That sounds lovely! I adopted a puppy named Biscuit.",
]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_bench(root: Path) -> None:
    write(root / "conv-1" / "MEMORY.md", "# Memory\n\nCaroline and Melanie, May 2023.\n")
    write(root / "conv-1" / "memory" / f"{DAY}.md", "\n".join(LINES) + "\n")
    qrels = [
        ("What did Caroline do with her kids?", "D1:1", 5),
        ("What is the name of Melanie's puppy?", "D1:2", 6),
        ("Which instrument does Caroline play?", "D1:9", 40),  # no such line: a miss
    ]
    with open(root / "qrels.jsonl", "w") as f:
        for n, (question, dia, line) in enumerate(qrels):
            loc = {"dia_id": dia, "path": f"memory/{DAY}.md", "line": line}
            rec = {"conv": "conv-1", "qid": n, "question": question, "answer": "",
                   "category": 4, "category_name": "single-hop", "evidence": [dia],
                   "evidence_locations": [loc]}  # fmt: skip
            f.write(json.dumps(rec) + "\n")


def run_bench(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "retrieval.py"), str(root), "--provider", "none",
         "--index-dir", str(root / "ix"), *args],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


def test_json_is_the_only_thing_on_stdout(tmp_path: Path) -> None:
    make_bench(tmp_path)
    out = json.loads(run_bench(tmp_path, "--json").stdout)
    assert out["mode"] == "hybrid"
    overall = out["overall"]
    assert overall["n"] == 3
    assert overall["recall@5"] == round(2 / 3, 4)  # the third question has no such line
    assert {"mrr", "snip@5", "avg_span"} <= overall.keys()
    assert "per_question" not in out


def test_misses_counts_the_question_no_mode_finds(tmp_path: Path) -> None:
    make_bench(tmp_path)
    text = run_bench(tmp_path, "--misses").stdout
    assert "### Misses at 5 (hybrid/weighted)" in text
    assert "| all | 1 | 0 | 0 | 0 | 0 | 1 |" in text
    assert "| Which instrument does Caroline play? | 4 | - / - |" in text


def test_by_session_counts_a_file_that_holds_the_evidence_as_a_hit(tmp_path: Path) -> None:
    make_bench(tmp_path)
    text = run_bench(tmp_path, "--by-session").stdout
    assert "### Counted per session (file), hybrid/weighted" in text
    # The third question's line is in no result (a miss at line level), but its file is: at
    # 5 all three count. MEMORY.md (it names Caroline too) comes first for one of them.
    assert "| all | 3 | 0.667 | 1.000 | 1.000 | 1.000 | 0.833 |" in text


def test_judge_sessions_ranks_each_file_where_its_first_result_is() -> None:
    # From its file, not by bench/ on sys.path: that would shadow the tests' own packages
    # (bench/fleet.py hides tests/fleet) for every test after this one in the same worker.
    spec = importlib.util.spec_from_file_location("bench_judge", ROOT / "bench" / "_judge.py")
    assert spec is not None and spec.loader is not None
    judge = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(judge)
    judge_sessions = judge.judge_sessions

    q = {"evidence_locations": [{"dia_id": "D2:1", "path": "memory/b.md", "line": 9}]}
    results = [
        {"path": "memory/a.md", "start_line": 1, "end_line": 5},
        {"path": "memory/a.md", "start_line": 6, "end_line": 9},  # the same session: rank 1
        {"path": "memory/b.md", "start_line": 20, "end_line": 30},  # not line 9: still a hit
    ]
    m = judge_sessions(q, results)
    assert (m["recall@1"], m["recall@3"], m["mrr"]) == (0.0, 1.0, 0.5)
