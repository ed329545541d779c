"""Instructions from a daemon's exec to its first keyword answer (callgrind): the spawn row of
issue 38 as a count the load leaves alone.

    python bench/spawn_instructions.py [--baseline REV] [--questions 3] [--runs 1] [--json]

WORKSPACE (default LoCoMo dev's conv-26) is indexed once, by the first code, into a home
both codes then start on (bench/startup.py does the same). For each of conv-26's questions
2 to 1 + ``--questions`` (bench/search_cost.py's spawn row asks those) and each code in turn
(``--baseline REV`` first, in bench/scale.py's detached worktree, bytecode written for
both): ``memoryd run`` starts under ``valgrind --tool=callgrind`` (every thread counted),
a client outside valgrind asks the question (keyword, 10 hits, min score 0) as soon as the
socket accepts, and bench/_spawn_probe ends the daemon the moment that answer is written.
Printed: instructions per question and code, their median, the ratio to the baseline and
the modules loaded by the answer (PYTHONHASHSEED=0 for every start: the same count from
one run to the next). A code takes ~10 s a question.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from instructions import build_index
from latency import MEMORYD, Daemon
from memoryd_client import MemoryClient
from memoryd_client.errors import DaemonNotRunning
from scale import code_at
from synth import LOCOMO_DIR, conv_questions

PROBE = Path(__file__).resolve().parent / "_spawn_probe"
TIMEOUT_S = 600.0


def first_answer(home: Path, env: dict[str, str], question: str, ws: str, tmp: Path) -> int:
    """Instructions of one start under callgrind, exec to the first answer (the probe
    writes the modules loaded by then to ``tmp``/modules)."""
    d = Daemon(home, "none")
    d.env.update(env)
    d.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROBE), env.get("PYTHONPATH")]))
    d.env["SPAWN_PROBE_OUT"] = str(tmp / "modules")
    # One string-hash seed for every start: with a random one a start's dict and set work
    # (its probes, a set's order) moves the count by ~1 M from one start to the next.
    d.env["PYTHONHASHSEED"] = "0"
    out = tmp / "cg.out"
    out.unlink(missing_ok=True)
    d.socket.unlink(missing_ok=True)  # the probe's exit leaves it: no stale-socket line
    with open(d.log, "ab") as log:
        proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", MEMORYD, "run"],
            env=d.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while True:
            try:
                with MemoryClient(d.socket, timeout=TIMEOUT_S) as c:
                    c.search(question, workspace=ws, mode="keyword", max_results=10, min_score=0)
                break
            except DaemonNotRunning:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"no answer:\n{d.log.read_text()[-3000:]}") from None
                time.sleep(0.01)
        proc.wait(TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for line in out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit("callgrind wrote no totals")


def run(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    questions = conv_questions("conv-26", 1 + args.questions)[1:]
    codes = ([args.baseline] if args.baseline else []) + [None]
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        envs = {
            rev or "this": stack.enter_context(code_at(rev, tmp, compiled=True)) for rev in codes
        }
        home = tmp / "home"
        src = tmp / "ws"
        shutil.copytree(args.workspace, src)
        ws = build_index(home, src, next(iter(envs.values())))
        for q in questions:
            for _ in range(args.runs):
                for code, env in envs.items():  # interleaved, as the wall-clock benches are
                    n = first_answer(home, env, q, ws, tmp)
                    modules = int((tmp / "modules").read_text())
                    rows.append(
                        {"code": code, "question": q, "instructions": n, "modules": modules}
                    )
                    print(f"{code}: {n:,} ({modules} modules) {q}", file=sys.stderr, flush=True)
    return rows


def report(rows: list[dict[str, Any]], baseline: str | None) -> None:
    codes = list(dict.fromkeys(r["code"] for r in rows))
    questions = list(dict.fromkeys(r["question"] for r in rows))
    med = {
        (c, q): statistics.median(
            r["instructions"] for r in rows if r["code"] == c and r["question"] == q
        )
        for c in codes
        for q in questions
    }
    print(f"| code | {' | '.join(questions)} | median | modules |")
    print("|---|" + "---:|" * (len(questions) + 2))
    for c in codes:
        cells = [f"{med[c, q] / 1e6:.1f} M" for q in questions]
        m = statistics.median(med[c, q] for q in questions)
        if baseline and c != baseline:
            base = statistics.median(med[baseline, q] for q in questions)
            cells.append(f"{m / 1e6:.1f} M ({m / base:.3f}x)")
        else:
            cells.append(f"{m / 1e6:.1f} M")
        mods = statistics.median(r["modules"] for r in rows if r["code"] == c)
        print(f"| {c} | {' | '.join(cells)} | {mods:.0f} |")
    print(
        "\ninstructions of every daemon thread from exec to the first keyword answer written "
        f"(callgrind); python {sys.version.split()[0]}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workspace", type=Path, default=LOCOMO_DIR / "conv-26")
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--runs", type=int, default=1, help="starts per question and code")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed")
    with tempfile.TemporaryDirectory(prefix="mdsi-", dir="/tmp") as t:
        rows = run(args, Path(t))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        report(rows, args.baseline)


if __name__ == "__main__":
    os.environ.pop("PYTHONPATH", None)
    main()
