"""Git sync (docs/sync.md): how long a note takes to reach another machine, what a sync with
nothing to do costs, and a first sync; each beside what git alone takes for the same work.

    python bench/sync.py [--chunks 100000] [--lines 10000] [--rounds 5] [--json]

1. **Append on A to searchable on B.** Two real ``memoryd run`` daemons (two homes, one
   bare repository as the remote, file://). With ``interval_seconds = 0`` (sync on demand):
   an append on A is committed once writes settle (``debounce_seconds``, default 5) and
   pushed at once; B pulls when asked (``memctl sync now``) and indexes what came. Timed:
   append -> on the remote, then B's ``sync now`` -> found by B's search. The scheduled
   default (``interval_seconds = 300``) adds the waits for A's next push and B's next pull
   (each uniform over the interval): measured once with the interval scaled down to
   ``--scaled`` seconds, and given for 300 s from the same model. The baseline, interleaved:
   the same trip by git alone (append, ``git commit``, ``git push`` on A; ``git pull`` on
   B), beside memoryd's time less its debounce.
2. **A sync with nothing to do**, on a workspace of ``--chunks`` chunks (bench/chatter.py's
   daily notes), in process (the engine the daemon runs): commit step, fetch, compare. The
   baseline, interleaved: ``git fetch`` alone (the network step every sync needs) and
   ``git status`` on the same repository and work tree (what a person would run).
3. **A first sync** of ``--lines`` lines (100 daily notes) into an empty remote, beside
   ``git init && git add -A && git commit && git push`` of the same files.

Every figure is printed with the load average beside it (a shared machine).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from chatter import make_chatter_workspace  # noqa: E402
from memoryd.sync.engine import Engine  # noqa: E402
from memoryd.sync.git import Git, Identity  # noqa: E402
from memoryd.sync.paths import Scope  # noqa: E402
from memoryd.sync.repo import Repo  # noqa: E402
from memoryd_client import MemoryClient  # noqa: E402


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def engine(ws: Path, state: Path, remote: Path) -> Engine:
    git = Git(state / "repo.git", ws, Identity("bench", "bench@localhost", time.time))
    repo = Repo(git, "main")
    repo.ensure(f"file://{remote}")
    return Engine(ws, repo, Scope(), "bench", lambda paths: contextlib.nullcontext(), time.time)


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **(env or {})}
    )


# -- 1. append on A to searchable on B ------------------------------------------------------


@contextlib.contextmanager
def daemon(home: Path, ws: Path, remote: Path, sync: dict[str, float]) -> Iterator[MemoryClient]:
    keys = "".join(f"{k} = {v}\n" for k, v in sync.items())
    (home / "config.toml").write_text(
        f'[sync]\nhost = "{home.name}"\n{keys}\n[[workspaces]]\npath = "{ws}"\nname = "notes"\n'
        f'sync_remote = "file://{remote}"\n'
    )
    env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_EMBEDDING_PROVIDER": "none"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd.cli", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = MemoryClient(socket_path=home / "run" / "memoryd.sock", autostart=False, timeout=600)
    try:
        for _ in range(600):
            with contextlib.suppress(Exception):
                client.hello()
                break
            time.sleep(0.05)
        yield client
    finally:
        client.close()
        proc.terminate()
        proc.wait(30)


def remote_has(remote: Path, text: str) -> bool:
    out = subprocess.run(
        ["git", "--git-dir", str(remote), "grep", "-q", "-F", "-e", text, "main", "--", "memory"],
        capture_output=True,
    )
    return out.returncode == 0


def wait(pred: Callable[[], bool], timeout: float) -> float:
    t = time.perf_counter()
    while not pred():
        if time.perf_counter() - t > timeout:
            raise TimeoutError("waited too long")
        time.sleep(0.02)
    return time.perf_counter() - t


def found(c: MemoryClient, text: str) -> bool:
    token = text.split()[-1]  # unique to the round
    hits = c.search(token, workspace="notes", mode="keyword").results
    return any(token in h.snippet for h in hits)


def append_to_searchable(tmp: Path, rounds: int, scaled: float) -> dict[str, Any]:
    out: dict[str, Any] = {"load_before": load()}
    for mode, sync in (
        ("interval 0 (on demand)", {"interval_seconds": 0, "debounce_seconds": 5}),
        (f"interval {scaled:g} s (scaled)", {"interval_seconds": scaled, "debounce_seconds": 5}),
    ):
        root = tmp / mode.split()[1]
        remote = bare(root / "remote.git")
        rows = []
        with (
            daemon(root / "a", _ws(root / "a"), remote, sync) as a,
            daemon(root / "b", _ws(root / "b"), remote, sync) as b,
        ):
            for i in range(rounds):
                text = f"- bench note {mode.split()[1]} round {i} mark{i}q{int(time.time())}"
                t0 = time.perf_counter()
                a.append(text, workspace="notes")
                pushed = wait(lambda t=text, r=remote: remote_has(r, t), 900)
                t1 = time.perf_counter()
                if sync["interval_seconds"] == 0:
                    b.sync_now(workspace="notes")
                t2 = time.perf_counter()
                wait(lambda t=text: found(b, t), 900)
                done = time.perf_counter()
                by_hand = git_alone_round(root / "by-hand", i)  # interleaved: the load moves
                rows.append(
                    {
                        "pushed_s": pushed,
                        "searchable_s": done - t0,
                        "pull_s": done - t1,
                        "sync_now_s": t2 - t1,
                        "git_alone_s": by_hand,
                    }
                )
        out[mode] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    out["load_after"] = load()
    return out


def git_alone_round(root: Path, i: int) -> float:
    """The same trip by git alone, by hand: A appends the line, commits and pushes; B
    pulls. No index, no debounce: what git costs for the trip (seconds)."""
    who = {f"GIT_{r}_{k}": "b" for r in ("AUTHOR", "COMMITTER") for k in ("NAME", "EMAIL")}
    remote = root / "remote.git"
    if not remote.exists():
        bare(remote)
        for side in ("a", "b"):
            git("clone", "-q", str(remote), str(root / side))
        day = root / "a" / "memory" / "2026-03-02.md"
        day.parent.mkdir(parents=True)
        day.write_text("# 2026-03-02\n")
        git("add", "-A", cwd=root / "a")
        git("commit", "-qm", "start", cwd=root / "a", env=who)
        git("push", "-q", "origin", "HEAD:main", cwd=root / "a")
        git("pull", "-q", "origin", "main", cwd=root / "b", env=who)
    t = time.perf_counter()
    with open(root / "a" / "memory" / "2026-03-02.md", "a") as f:
        f.write(f"- by hand round {i}\n")
    git("commit", "-qam", f"round {i}", cwd=root / "a", env=who)
    git("push", "-q", "origin", "HEAD:main", cwd=root / "a")
    git("pull", "-q", "--ff-only", "origin", "main", cwd=root / "b", env=who)
    return time.perf_counter() - t


def _ws(home: Path) -> Path:
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    return ws


# -- 2. a sync with nothing to do -----------------------------------------------------------


def noop_sync(tmp: Path, chunks: int, rounds: int) -> dict[str, Any]:
    ws = make_chatter_workspace(tmp / "big", chunks)
    files = sum(1 for _ in (ws / "memory").glob("*.md")) + 1
    remote = bare(tmp / "big-remote.git")
    eng = engine(ws, tmp / "big-state", remote)
    first = timed(eng.sync)
    hand = {"GIT_DIR": str(tmp / "hand.git"), "GIT_WORK_TREE": str(ws)}
    hand |= {f"GIT_{r}_{k}": "b" for r in ("AUTHOR", "COMMITTER") for k in ("NAME", "EMAIL")}
    hand_remote = bare(tmp / "hand-remote.git")

    def by_hand() -> None:
        git("init", "-q", "-b", "main", env=hand, cwd=ws)
        git("add", "-A", "MEMORY.md", "memory", env=hand, cwd=ws)
        git("commit", "-qm", "x", env=hand, cwd=ws)
        git("push", "-q", str(hand_remote), "main", env=hand, cwd=ws)

    first_by_hand = timed(by_hand)
    env = {"GIT_DIR": str(eng.repo.git.git_dir), "GIT_WORK_TREE": str(ws)}
    quiet, walked, fetch, status = [], [], [], []
    for _ in range(rounds):  # interleaved: the load moves
        quiet.append(timed(lambda: eng.sync(walk=False)))
        walked.append(timed(lambda: eng.sync(walk=True)))
        fetch.append(timed(lambda: git("fetch", "-q", "origin", env=env)))
        status.append(timed(lambda: git("status", "--porcelain", env=env, cwd=ws)))
    return {
        "chunks": chunks,
        "files": files,
        "bytes_mb": round(sum(p.stat().st_size for p in ws.rglob("*.md")) / 1e6, 1),
        "first_sync_ms": first,
        "first_by_hand_ms": first_by_hand,
        "noop_sync_ms": statistics.median(quiet),
        "noop_walk_ms": statistics.median(walked),
        "git_fetch_ms": statistics.median(fetch),
        "git_status_ms": statistics.median(status),
        "load": load(),
    }


# -- 3. a first sync -------------------------------------------------------------------------


def first_sync(tmp: Path, lines: int, rounds: int) -> dict[str, Any]:
    per = max(1, lines // 100)
    ours, by_hand = [], []
    for r in range(rounds):
        ws = tmp / f"first-{r}"
        (ws / "memory").mkdir(parents=True)
        for d in range(100):
            body = "".join(f"- day {d} line {i}: something worth keeping\n" for i in range(per))
            (ws / "memory" / f"2026-01-{d % 28 + 1:02d}-{d}.md").write_text(f"# day {d}\n\n{body}")
        eng = engine(ws, tmp / f"first-state-{r}", bare(tmp / f"first-remote-{r}.git"))
        ours.append(timed(eng.sync))
        hand = tmp / f"hand-{r}"
        shutil.copytree(ws / "memory", hand / "memory")
        remote = bare(tmp / f"hand-remote-{r}.git")
        who = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
        who |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}

        def manual(hand: Path = hand, remote: Path = remote, who: dict[str, str] = who) -> None:
            git("init", "-q", "-b", "main", cwd=hand)
            git("add", "-A", cwd=hand)
            git("commit", "-qm", "x", cwd=hand, env=who)
            git("push", "-q", str(remote), "main", cwd=hand)

        by_hand.append(timed(manual))
    return {
        "lines": per * 100,
        "first_sync_ms": statistics.median(ours),
        "git_by_hand_ms": statistics.median(by_hand),
        "load": load(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scaled", type=float, default=10.0, help="the scaled-down interval (s)")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: latency,noop,first")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    tmp = Path(tempfile.mkdtemp(dir="/tmp", prefix="mdsync"))
    out: dict[str, Any] = {}
    try:
        if "latency" not in skip:
            out["latency"] = append_to_searchable(tmp / "lat", args.rounds, args.scaled)
        if "noop" not in skip:
            out["noop"] = noop_sync(tmp / "noop", args.chunks, args.rounds)
        if "first" not in skip:
            out["first"] = first_sync(tmp / "first", args.lines, args.rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    report(out, args.scaled)


def report(out: dict[str, Any], scaled: float) -> None:
    lat = out.get("latency")
    if lat:
        print(
            f"## append on A -> searchable on B (median; load {lat['load_before']} .. "
            f"{lat['load_after']})\n"
        )
        print(
            "| interval | append -> on the remote | B pulls + indexes | append -> searchable "
            "| less the 5 s debounce | git alone: commit, push, pull | ratio |"
        )
        print("|---|---|---|---|---|---|---|")
        for mode, r in lat.items():
            if isinstance(r, dict):
                work = r["searchable_s"] - 5
                # Only on demand is the rest work; on a schedule it holds the waits too.
                ratio = f"x{work / r['git_alone_s']:.2f}" if "on demand" in mode else "-"
                print(
                    f"| {mode} | {r['pushed_s']:.2f} s | {r['pull_s']:.2f} s | "
                    f"{r['searchable_s']:.2f} s | {work:.2f} s | {r['git_alone_s']:.2f} s | "
                    f"{ratio} |"
                )
        on_demand = lat["interval 0 (on demand)"]
        mech = on_demand["searchable_s"] - 5
        print(
            f"\nScheduled default (300 s), from the same model: 5 s debounce + A's next push "
            f"(0-300 s) + B's next pull (0-300 s) + {mech:.2f} s of work: "
            f"{5 + 300 + mech:.0f} s on average, {5 + 600 + mech:.0f} s at worst "
            f"(the scaled run's interval: {scaled:g} s).\n"
        )
    noop = out.get("noop")
    if noop:
        print(
            f"## a sync with nothing to do ({noop['chunks']} chunks, {noop['files']} files, "
            f"{noop['bytes_mb']} MB; load {noop['load']})\n"
        )
        print("| what | ms | ratio |")
        print("|---|---|---|")
        fetch = noop["git_fetch_ms"]
        rows = (
            ("memoryd sync, no write seen (the scheduled one): fetch, refs", noop["noop_sync_ms"]),
            ("memoryd sync with the walk (a write seen, sync now, hourly)", noop["noop_walk_ms"]),
            ("git fetch alone (baseline)", fetch),
            ("git status (baseline)", noop["git_status_ms"]),
        )
        for what, ms in rows:
            print(f"| {what} | {ms:.0f} | x{ms / fetch:.2f} of git fetch |")
        print(
            f"\nIts first sync (commit and push of everything): {noop['first_sync_ms']:.0f} ms;"
            f" git init + add + commit + push of the same files by hand:"
            f" {noop['first_by_hand_ms']:.0f} ms"
            f" (x{noop['first_sync_ms'] / noop['first_by_hand_ms']:.2f}).\n"
        )
    first = out.get("first")
    if first:
        print(f"## a first sync of {first['lines']} lines (100 notes; load {first['load']})\n")
        print("| memoryd first sync | git init + add + commit + push by hand | ratio |")
        print("|---|---|---|")
        print(
            f"| {first['first_sync_ms']:.0f} ms | {first['git_by_hand_ms']:.0f} ms | "
            f"x{first['first_sync_ms'] / first['git_by_hand_ms']:.2f} |"
        )


if __name__ == "__main__":
    main()
