"""What reading a transcript for its session's trust adds to indexing it (issue 34 item 1).

The watch hands each changed workspace transcript to the index (a sync step) and, since
the transcripts are observers of their sessions, to ``SessionTrust.observe_transcript`` on
the same writer thread. This times both on the same Claude Code-shaped transcript, in
process, alternating, and prints CPU seconds (the process's, medians) and the ratio:

- cold: a new transcript of SIZE MiB (the index reads all of it, the trust its last 4 MiB);
- grown: the same transcript after 50 more lines (each reads what is new).

    python bench/transcript_trust.py [--mib 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memoryd.index.workspace import WorkspaceIndex
from memoryd.jobs.session_trust import SessionTrust
from memoryd.runtime.config import config_from_mapping
from memoryd.runtime.state import StateDB


def _lines(n: int, start: int = 0) -> list[str]:
    """A session's lines: the user asks, the agent reads files and runs commands, answers."""
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        stamp = f"2026-03-02T12:{i // 60 % 60:02d}:{i % 60:02d}Z"
        kind = i % 4
        if kind == 0:
            msg: dict[str, Any] = {"role": "user", "content": f"step {i}: fix the parser " * 8}
        elif kind == 1:
            call = {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}}
            msg = {"role": "assistant", "content": [call]}
        elif kind == 2:
            result = {"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": "x.py\n" * 600}
            msg = {"role": "user", "content": [result]}
        else:
            msg = {"role": "assistant", "content": [{"type": "text", "text": "Done. " * 150}]}
        out.append({"type": msg["role"], "sessionId": "s", "timestamp": stamp, "message": msg})
    return [json.dumps(x) + "\n" for x in out]


def _index(ws: Path, db: Path) -> WorkspaceIndex:
    cfg = config_from_mapping({"embedding": {"provider": "none"}, "index": {"sessions": True}})
    ix = WorkspaceIndex(ws, db, cfg, None, "bench")
    ix.open()
    return ix


def _cpu(fn: Any) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def round_once(tmp: Path, mib: float) -> dict[str, float]:
    if tmp.exists():
        shutil.rmtree(tmp)
    ws = tmp / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "memory").mkdir()
    path = ws / "sessions" / "s.jsonl"
    lines = _lines(4)
    per = sum(len(x) for x in lines) / 4
    body = _lines(int(mib * (1 << 20) / per))
    path.write_text("".join(body))
    ix = _index(ws, tmp / "ix.sqlite")
    trust = SessionTrust(StateDB(tmp / "state.sqlite"), time.time)
    out = {"index_cold": _cpu(lambda: ix.sync([path])), "trust_cold": 0.0}
    out["trust_cold"] = _cpu(lambda: trust.observe_transcript("s", path))
    with path.open("a") as f:
        f.writelines(_lines(50, len(body)))
    out["index_grown"] = _cpu(lambda: ix.sync([path]))
    out["trust_grown"] = _cpu(lambda: trust.observe_transcript("s", path))
    ix.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.rounds):
            runs.append(round_once(Path(d) / str(i), args.mib))
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    print(f"transcript {args.mib} MiB, {args.rounds} rounds, load {' '.join(load)}")
    print("| step | index CPU s | + trust CPU s | trust / index |")
    print("|---|---|---|---|")
    for step in ("cold", "grown"):
        ix = statistics.median(r[f"index_{step}"] for r in runs)
        tr = statistics.median(r[f"trust_{step}"] for r in runs)
        print(f"| {step} | {ix:.4f} | {tr:.4f} | {tr / ix:.3f} |")


if __name__ == "__main__":
    main()
