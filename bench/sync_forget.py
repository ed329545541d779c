"""A forget that arrives by sync: what the host applying the tombstone pays for deleting the
line securely from its index (workspace/sync_forgets.py), beside the ordinary sync.

    python bench/sync_forget.py [--chunks 2000] [--rounds 5] [--json]

Two daemons in this process (tests/sync_util.py: two homes, one bare remote, fake clocks so
nothing syncs on its own). Host B holds ``--chunks`` chunks (bench/chatter.py's notes).
Each round, for each code in turn (the order alternates): A appends a line with a word of
its own, both sync, B finds it; A forgets it and syncs; then B's ``sync now`` is timed
(wall), and the time until B's keyword search no longer finds the word. "before": B's
engine writes the merge with no hold (the index follows through the watch, an ordinary
sync, as on main before); "after": the files are held secure, the index follows before the
sync answers, then the WAL is truncated and the keyword file dropped. CPU is this
process's (both daemons; A is idle while B syncs). The load average is printed beside.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from chatter import make_chatter_workspace  # noqa: E402
from sync_util import DAILY, Host, make_remote, two_hosts  # noqa: E402


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def found(h: Host, word: str) -> bool:
    with h.client() as c:
        hits = c.search(word, workspace="notes", mode="keyword").results
    return any(word in h.snippet for h in hits)


def one(a: Host, b: Host, engine: Any, secure: Any, word: str) -> dict[str, float]:
    line = f"- The courier password is {word} today."
    a.append(line)
    a.sync()
    b.sync()
    while not found(b, word):
        time.sleep(0.05)
    n = a.read(DAILY).split("\n").index(line) + 1
    with a.client() as c:
        c.forget(workspace="notes", path=DAILY, lines=str(n))
    a.sync()
    engine.secure = secure
    c0, t0 = time.process_time(), time.perf_counter()
    report = b.sync()
    t1 = time.perf_counter()
    assert report["forgotten"] == {DAILY: 1}, report
    while found(b, word):
        time.sleep(0.01)
    t2, c2 = time.perf_counter(), time.process_time()
    return {"sync_ms": (t1 - t0) * 1e3, "gone_ms": (t2 - t0) * 1e3, "cpu_ms": (c2 - c0) * 1e3}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mdsf"))
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    loads = [load()]
    try:
        bare = make_remote(tmp)
        with two_hosts(f"file://{bare}") as (a, b):
            src = make_chatter_workspace(tmp / "chatter", args.chunks)
            for f in (src / "memory").glob("*.md"):
                shutil.copy(f, b.ws / "memory" / f.name)
            with b.client() as c:
                c.reindex(workspace="notes", wait=True)
            a.sync(), b.sync(), a.sync()
            assert b.daemon.daemon is not None
            (ws,) = b.daemon.daemon.services.sync._ws.values()
            engine = ws.engine
            secure = engine.secure
            assert secure is not None
            for r in range(args.rounds):
                order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
                for code in order:
                    word = f"zq{'abcdefghij'[r % 10]}{code}vortex"
                    runs[code].append(one(a, b, engine, None if code == "before" else secure, word))
                loads.append(load())
            engine.secure = secure
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out: dict[str, Any] = {
        code: {k: round(statistics.median(x[k] for x in rs), 1) for k in rs[0]}
        for code, rs in runs.items()
    }
    out["load"], out["chunks"] = loads, args.chunks
    if args.json:
        print(json.dumps({"runs": runs, **out}, indent=1))
        return
    print(f"B holds {args.chunks} chunks; medians of {args.rounds}; load {loads[0]} .. {loads[-1]}")
    print(f"{'':8} {'sync now ms':>12} {'until gone ms':>14} {'CPU ms':>8}")
    for code in ("before", "after"):
        m = out[code]
        print(f"{code:8} {m['sync_ms']:12.1f} {m['gone_ms']:14.1f} {m['cpu_ms']:8.1f}")


if __name__ == "__main__":
    main()
