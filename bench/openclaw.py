"""OpenClaw's memory_search through memory-core against the same call through memoryd's
plugin, on one LoCoMo conversation laid out as an OpenClaw workspace.

    python bench/openclaw.py LOCOMO_DIR --openclaw-pkg DIR [--conv conv-26] [--node NODE]
                             [--provider local] [--json]

LOCOMO_DIR holds ``<conv>/MEMORY.md``, ``<conv>/memory/*.md`` and ``qrels.jsonl``; the
conversation's memory files are copied to a scratch workspace (the layout OpenClaw's is:
MEMORY.md and memory/YYYY-MM-DD.md) and removed afterwards. ``--openclaw-pkg`` is the
installed ``openclaw`` npm package (its folder; Node >= 24.16 runs it).

memory-core runs as shipped, offline: no embedding provider is configured or reachable, so
its search is keyword-only, as a fresh install without an API key has it. memoryd runs
``memoryd run`` with ``--provider`` (default ``local``, the bundled ONNX model), the
workspace indexed and embedded before the first question. Both tools are called in one
Node process (bench/openclaw_driver.mjs), alternating which goes first per question, with
maxResults 10, ``--rounds`` passes over the questions (3) for the latencies; the first call
of each is reported apart (memory-core builds its index then). Recall@5 and MRR are
judged as shared/bench/eval_retrieval.py does (bench/_judge.py) on the lines each tool
returns; latency is the tool call's wall time, so memoryd's includes the socket round
trip. Times are given as ratios to memory-core in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _judge import aggregate, judge
from memoryd_client.client import MemoryClient

HERE = Path(__file__).resolve().parent
PLUGIN_DIR = HERE.parent / "integrations" / "openclaw"


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def start_daemon(home: Path, provider: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_EMBEDDING_PROVIDER": provider}
    for name in ("MEMORYD_SOCKET", "MEMORYD_CONFIG"):
        env.pop(name, None)
    log = open(home / "daemon.log", "wb")  # noqa: SIM115 - the daemon's for its life
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd.cli", "run"], env=env, stdout=log, stderr=log
    )
    sock = home / "run" / "memoryd.sock"
    deadline = time.monotonic() + 60
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"memoryd did not start: {(home / 'daemon.log').read_text()}")
        time.sleep(0.05)
    return proc


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(args.locomo).resolve()
    qrels = [
        q
        for q in map(json.loads, (root / "qrels.jsonl").read_text().splitlines())
        if q["conv"] == args.conv
    ]
    scratch = Path(tempfile.mkdtemp(prefix="mdoc", dir="/tmp"))
    proc = None
    try:
        workspace = scratch / "workspace"
        workspace.mkdir()
        shutil.copy(root / args.conv / "MEMORY.md", workspace / "MEMORY.md")
        shutil.copytree(root / args.conv / "memory", workspace / "memory")
        md_home = scratch / "md"
        md_home.mkdir()
        proc = start_daemon(md_home, args.provider)
        sock = md_home / "run" / "memoryd.sock"
        started = time.monotonic()
        with MemoryClient(sock, timeout=600) as c:
            c.workspace_add(workspace, "openclaw")
            c.reindex(workspace="openclaw", wait=True)
        index_s = time.monotonic() - started
        questions = scratch / "questions.json"
        questions.write_text(json.dumps([q["question"] for q in qrels]))
        env = {**os.environ, "HOME": str(scratch)}  # memory-core's state and index
        out = subprocess.run(
            [
                args.node,
                str(HERE / "openclaw_driver.mjs"),
                args.openclaw_pkg,
                str(workspace),
                str(sock),
                str(questions),
                str(PLUGIN_DIR),
                str(args.rounds),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            raise SystemExit(f"driver failed: {out.stderr[-3000:]}")
        calls = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        shutil.rmtree(scratch, ignore_errors=True)
    return summarize(calls, qrels, index_s, args)


def summarize(
    calls: list[dict[str, Any]], qrels: list[dict[str, Any]], index_s: float, args: Any
) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for backend in ("memory-core", "memoryd"):
        mine = [c for c in calls if c["backend"] == backend]
        first = next(c for c in mine if c["i"] == -1)
        timed = [c for c in mine if c["i"] >= 0]
        errors = [c["error"] for c in timed if c.get("error")]
        quality = aggregate(
            [judge(qrels[c["i"]], c["results"][:10]) for c in timed if c["round"] == 0]
        )
        ms = [c["ms"] for c in timed]
        rows[backend] = {
            "calls": len(timed),  # every round's; quality from the first round's answers
            "first_ms": round(first["ms"], 1),
            "p50_ms": round(percentile(ms, 0.5), 2),
            "p99_ms": round(percentile(ms, 0.99), 2),
            "recall@5": quality.get("recall@5"),
            "mrr": quality.get("mrr"),
            "snip@5": quality.get("snip@5"),
            "avg_span": quality.get("avg_span"),
            "errors": len(errors),
        }
    base = rows["memory-core"]
    for row in rows.values():
        for key in ("p50_ms", "p99_ms", "first_ms"):
            row[key.replace("_ms", "_ratio")] = (
                round(row[key] / base[key], 3) if base[key] else None
            )
    return {
        "conv": args.conv,
        "questions": len(qrels),
        "memoryd_provider": args.provider,
        "memoryd_index_s": round(index_s, 1),
        "load": os.getloadavg()[0],
        "rows": rows,
    }


def table(report: dict[str, Any]) -> str:
    head = (
        f"{report['conv']}: {report['questions']} questions, memoryd provider "
        f"{report['memoryd_provider']} (indexed in {report['memoryd_index_s']} s), "
        f"load {report['load']:.1f}\n"
    )
    cols = [
        "calls",
        "p50_ms",
        "p50_ratio",
        "p99_ms",
        "p99_ratio",
        "first_ms",
        "recall@5",
        "mrr",
        "snip@5",
    ]
    lines = ["| backend | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, row in report["rows"].items():
        lines.append(f"| {name} | " + " | ".join(str(row[c]) for c in cols) + " |")
    return head + "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("locomo", help="LoCoMo workspaces folder (with qrels.jsonl)")
    p.add_argument("--openclaw-pkg", required=True, help="the openclaw npm package's folder")
    p.add_argument("--conv", default="conv-26")
    p.add_argument("--node", default="node", help="Node >= 24.16")
    p.add_argument("--provider", default="local", help="memoryd's embedding provider")
    p.add_argument("--rounds", type=int, default=3, help="passes over the questions (timing)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    report = run(args)
    print(json.dumps(report) if args.json else table(report))


if __name__ == "__main__":
    main()
