"""A real hippocampus run on one LoCoMo dev conversation's notes, with the signals it ranks by.

    python bench/hippocampus_locomo.py --bench-dir DIR [--conv conv-26] [--lookback 180]

The conversation's MEMORY.md and daily notes are copied to a temporary workspace (the data
set stays where it is), a real daemon (in this process, the jobs' clock set to the day after
the last note) serves it, and every question of that conversation is asked twice, as a
search and as a recall, so the hit counts fill the way an agent's use would. Then
``jobs.run hippocampus`` runs with no LLM: first ``--dry-run`` (the diff and the report),
then for real. Prints the status's hit summary, the run's message and its readable report.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from daemon_util import DaemonThread
from fakes.clock import FakeClock
from memoryd_client import MemoryClient


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, type=Path, help="the LoCoMo dev folder")
    ap.add_argument("--conv", default="conv-26")
    ap.add_argument("--lookback", type=int, default=180)
    args = ap.parse_args()
    src = args.bench_dir / args.conv
    questions = [
        json.loads(line)["question"]
        for line in (args.bench_dir / "qrels.jsonl").read_text().splitlines()
        if json.loads(line)["conv"] == args.conv
    ]
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="mdh"))
    try:
        ws = home / "ws"
        shutil.copytree(src / "memory", ws / "memory")
        shutil.copy(src / "MEMORY.md", ws / "MEMORY.md")
        last = max(dt.date.fromisoformat(p.stem[:10]) for p in (ws / "memory").glob("*.md"))
        now = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(10), ZoneInfo("UTC"))
        config = {
            "workspaces": [{"path": str(ws), "name": args.conv}],
            "jobs": {"hippocampus": {"lookback_days": args.lookback}},
        }
        with (
            DaemonThread(home, config, clock=FakeClock(now)) as d,
            MemoryClient(d.socket_path, timeout=300) as c,
        ):
            c.reindex(workspace=args.conv)
            started = time.monotonic()
            for q in questions:
                c.search(q, workspace=args.conv)
                c.recall(q, workspace=args.conv)
            took = time.monotonic() - started
            assert d.daemon is not None and d.daemon.services.hits is not None
            d.daemon.services.hits.wait_idle(30)
            status = c.status(workspace=args.conv).workspaces[0].raw
            print(f"{len(questions)} questions, searched and recalled in {took:.1f} s")
            print("status line_hits:", json.dumps(status.get("line_hits"), indent=1))
            dry = c.jobs_run("hippocampus", workspace=args.conv, dry_run=True)
            print("dry run:", dry.message)
            run = c.jobs_run("hippocampus", workspace=args.conv)
            print("run:", run.status, run.message)
            report = run.raw["report"]
            print(f"report file: {report.get('report_file')}")
            print((ws / report["report_file"]).read_text())
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
