"""A year of memory: how indexing and search scale from 1k to 100k chunks (300k with --huge).

    python bench/scale.py [--sizes 1000,10000,100000] [--huge] [--baseline REV]
                          [--storm-size 10000] [--storm-seconds 10] [--storm-writes-per-s N]
                          [--json] [--keep]

Each size gets a synthetic workspace (bench/synth.py, the same files for every run) and a
fresh MEMORYD_HOME, and a real ``memoryd run`` through the socket:

1. keyword daemon (provider none), empty index: ``workspace.add`` + ``reindex --wait`` is
   the cold keyword index. Then keyword search p50/p99 (warm, one connection) and VmRSS.
2. the same home restarted with the OpenAI provider pointed at tests/fakes' fake OpenAI
   server (a real HTTP server in its own process; its vectors are hashed bags of words,
   384 dims like the bundled model): start → ready (``hello``), → first keyword answer,
   → fully loaded (the in-memory copies built, or given up as over budget); then the time
   to embed everything. Vectors are fake, so only speed is measured here, never quality.
3. restarted once more on the complete index: start → ready → first answer → fully loaded,
   then, once its start-up scan is over, keyword and hybrid p50/p99 (the query vectors
   cached by a warm-up pass: the fake server's round trip is not the engine's) and the
   daemon's CPU per search, VmRSS.
4. at ``--storm-size``: the write storm, 5 writers (``append`` calls into the five newest
   daily files, back to back, or paced by ``--storm-writes-per-s`` so that two codes get the
   same write load) and 50 searchers (keyword, 5 processes of 10 threads) for
   ``--storm-seconds``: search p50/p99 and rate, writes/s, searches answered stale
   (read-your-writes gave up waiting) and with files still pending.
5. restarted again (``--scan-restarts`` times), and searched by keyword from its first
   answer until its start-up scan (a stat of every file, on the writer thread) and the late
   watch's whole sync behind it are over: p50/p99 and CPU per search while they run,
   against step 3's steady state (``searches_while_scanning``).

``--corpus chatter`` uses bench/chatter.py's workspaces and questions instead: a vocabulary
of ~70 words, so every posting list is long (the keyword-growth case of issue 27).

``--qmd CMD`` also times qmd's cold index of each size's workspace (``CMD collection add``
into fresh cache and config folders, wall clock of the whole command; CMD is how to run
qmd, for example "node .../@tobilu/qmd/bin/qmd" with a node qmd supports): the peer the
issue compares against, measured in the same run on the same files.

``--baseline REV`` runs every size with the code of git revision REV first (a detached
worktree put first on the daemon's PYTHONPATH; same interpreter and packages), then with
this tree, and prints both with ratios: machines differ, so compare within one run (several
revisions, comma-separated: each in turn, ratios against the first). The
vectors are embedded once per size, by the first baseline's daemon; this tree's daemon starts its
phases 2-3 on a copy of that index (the same rows: the fake endpoint is deterministic).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from chatter import chatter_queries, make_chatter_workspace
from latency import Daemon, log, note_load, percentile, summarize
from memoryd_client import MemoryClient
from synth import make_queries, make_workspace

REPO = Path(__file__).resolve().parents[1]
DIMS = 384  # the bundled local model's width
EMBED_BATCH = 128  # texts per embeddings request (the default 16 only adds HTTP round trips)
WRITERS = 5
SEARCH_PROCS, SEARCH_THREADS = 5, 10
QPS_QUERIES = 50


# ---------------------------------------------------------------------- fake OpenAI endpoint


def _serve_fake(dims: int, ready: Any) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from fakes.openai_server import FakeOpenAIServer

    server = FakeOpenAIServer(dims=dims).start()
    ready.put(server.base_url)
    threading.Event().wait()


@contextlib.contextmanager
def fake_openai(dims: int = DIMS) -> Iterator[str]:
    ctx = mp.get_context("spawn")
    ready = ctx.Queue()
    proc = ctx.Process(target=_serve_fake, args=(dims, ready), daemon=True)
    proc.start()
    try:
        yield str(ready.get(timeout=30))
    finally:
        proc.terminate()
        proc.join(10)


# ---------------------------------------------------------------------- the code under test


def compile_code(root: Path) -> None:
    """Bytecode for ``root``'s daemon and client, as an install has it: a start that
    compiles its modules from source (PYTHONDONTWRITEBYTECODE, a fresh worktree) measures
    the compiler, more so for the larger code."""
    folders = [str(root / "daemon"), str(root / "client")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True)
    # Its compiled part too, as `pip install` builds it (setup.py; a code without one has
    # nothing to build): a worktree, or a tree installed before it had one, would run the
    # Python versions instead.
    index = root / "daemon" / "memoryd" / "index"
    if (index / "_compiled.c").exists() or (index / "search" / "_lines.c").exists():
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=root,
            check=True,
            capture_output=True,
        )


@contextlib.contextmanager
def code_at(rev: str | None, tmp: Path, compiled: bool = False) -> Iterator[dict[str, str]]:
    """Environment for a daemon running the code of ``rev`` (None: this tree); with
    ``compiled``, its bytecode written first (compile_code)."""
    if rev is None:
        if compiled:
            compile_code(REPO)
        yield {}
        return
    where = tmp / f"code-{rev.replace('/', '_')}"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(where), rev], check=True
    )
    if compiled:
        compile_code(where)
    try:
        yield {"PYTHONPATH": f"{where / 'daemon'}{os.pathsep}{where / 'client'}"}
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)], check=False
        )


def daemon(home: Path, provider: str, code_env: dict[str, str], url: str = "") -> Daemon:
    d = Daemon(home, provider)
    d.env.update(code_env)
    if provider == "openai":
        d.env.update(
            MEMORYD_EMBEDDING_BASE_URL=url,
            MEMORYD_EMBEDDING_API_KEY="sk-bench",
            MEMORYD_EMBEDDING_BATCH_SIZE=str(EMBED_BATCH),
        )
    return d


# ---------------------------------------------------------------------- measurements


def cpu_s(pid: int) -> float:
    """The process's CPU time so far (user + system), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loop_cpu_s(pid: int) -> float:
    """CPU time of the daemon's main thread, its event loop's (ns-exact: schedstat): what
    the searches cost there, without the writer's or other threads' work."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def search_ms(d: Daemon, ws: str, queries: list[str], mode: str, rounds: int) -> dict[str, Any]:
    """Wall-clock latency per search, and the daemon's CPU per search (what the machine's
    load does not inflate: the wall clock on 2 shared cores waits for a core), its loop
    thread's too."""
    ms: list[float] = []
    used = set()
    with d.client() as c:
        for q in queries:  # warm-up: page cache and the query-vector cache
            c.search(q, workspace=ws, mode=mode)
        cpu, loop = cpu_s(d.pid), loop_cpu_s(d.pid)
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                r = c.search(q, workspace=ws, mode=mode)
                ms.append((time.perf_counter() - t) * 1000)
                used.add(str(r.mode_used))
        cpu_ms = (cpu_s(d.pid) - cpu) * 1000 / len(ms)
        loop_ms = (loop_cpu_s(d.pid) - loop) * 1000 / len(ms)
    return {
        **summarize(ms),
        "cpu_ms": cpu_ms,
        "loop_cpu_ms": loop_ms,
        "mode_used": ",".join(sorted(used)),
    }


SCAN_BATCH = 10  # searches between two looks at the scan's state
SCANS = ("scan", "rescan")


def searches_while_scanning(
    d: Daemon, ws: str, queries: list[str], restarts: int = 1, limit_s: float = 300.0
) -> dict[str, Any]:
    """``restarts`` restarts, each searched from its first answer on: keyword searches back
    to back while its start-up scan runs (it stats every file on the writer thread, sharing
    the GIL with them), and the whole sync the late watch queues behind it ("rescan": a
    stat of every file again), ``SCAN_BATCH`` between two status calls, grouped by scan and
    by what ranked them: the in-memory copy ("memory") or FTS5 while the copy is not loaded
    ("loading"). A batch during which the scan or the copy's state changed is left out. Per
    group: p50/p99, the daemon's CPU per search (the scan's included) and its loop thread's
    (the searches' own); the scan's seconds, and the time from the start until both scans
    were over (medians over the restarts). The searches start at the first answer, not once
    the copies are loaded (start_phases): by then a restart's scan can be over."""
    groups: dict[str, dict[str, Any]] = {}
    scans: list[float] = []
    overs: list[float] = []
    for _ in range(restarts):
        try:
            t0 = time.perf_counter()
            d.start()
            with d.client() as c:
                scan_s = _searched(c, d.pid, ws, queries, groups, limit_s)
            overs.append(time.perf_counter() - t0)
            if scan_s is not None:
                scans.append(scan_s)
        finally:
            d.stop()
    out: dict[str, Any] = {
        "scan_s": statistics.median(scans) if scans else None,
        "over_s": statistics.median(overs),
    }
    for name, g in groups.items():
        n = len(g["ms"])
        out[name] = {
            **summarize(g["ms"]),
            "cpu_ms": g["cpu"] * 1000 / n,
            "loop_cpu_ms": g["loop"] * 1000 / n,
        }
    return out


def _searched(
    c: MemoryClient,
    pid: int,
    ws: str,
    queries: list[str],
    groups: dict[str, dict[str, Any]],
    limit_s: float,
) -> float | None:
    """One restart of searches_while_scanning: its batches added to ``groups``; the scan's
    seconds."""
    deadline = time.monotonic() + limit_s
    held: tuple[tuple[str, str], list[float], float, float] | None = None
    while True:
        st = next(w for w in c.status().workspaces if w.name == ws)
        scan = st.raw.get("startup_scan")  # absent while the index opens
        phase = (
            "opening"
            if scan is None
            else "scan"
            if scan.get("running")
            else "rescan"  # the late watch's whole sync, behind the scan (app.py)
            if st.pending_files
            else "over"
        )
        state = (phase, str(st.keyword_scan))
        if held is not None and held[0] == state and phase in SCANS:  # held throughout
            g = groups.setdefault(" ".join(state), {"ms": [], "cpu": 0.0, "loop": 0.0})
            g["ms"] += held[1]
            g["cpu"] += held[2]
            g["loop"] += held[3]
        if phase == "over" or time.monotonic() > deadline:
            seconds = (scan or {}).get("seconds")
            return None if seconds is None else float(seconds)
        cpu, loop = cpu_s(pid), loop_cpu_s(pid)
        ms = []
        for q in queries[:SCAN_BATCH]:
            t = time.perf_counter()
            c.search(q, workspace=ws, mode="keyword")
            ms.append((time.perf_counter() - t) * 1000)
        held = (state, ms, cpu_s(pid) - cpu, loop_cpu_s(pid) - loop)
        queries = queries[SCAN_BATCH:] + queries[:SCAN_BATCH]


def start_phases(
    d: Daemon, ws: str, query: str, vectors: bool, timeout: float = 600
) -> dict[str, Any]:
    """Spawn → hello answered → first keyword search answered → copies loaded (with
    ``vectors``, the vector copy too: no scan is named while the provider loads)."""
    t0 = time.perf_counter()
    ready = d.start()
    with d.client() as c:
        c.search(query, workspace=ws, mode="keyword")
        first = time.perf_counter() - t0
        deadline = time.monotonic() + timeout
        while True:
            w = next(x for x in c.status().workspaces if x.name == ws)
            vec_done = (
                w.vector_scan == "memory"
                or (not vectors and w.vector_scan is None)
                or (w.pending_vectors == 0 and (time.perf_counter() - t0 > 60))
            )  # over its budget: sqlite-vec for good
            if (
                w.keyword_scan not in (None, "loading") and vec_done
            ) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    return {
        "ready_s": ready,
        "first_answer_s": first,
        "loaded_s": time.perf_counter() - t0,
        "keyword_scan": w.keyword_scan,
        "vector_scan": w.vector_scan,
    }


def wait_vectors(d: Daemon, ws: str, timeout: float = 7200) -> float:
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    with d.client() as c:
        while time.monotonic() < deadline:
            w = next(x for x in c.status().workspaces if x.name == ws)
            if w.vector_ready and w.pending_vectors == 0:
                break
            time.sleep(0.5)
    return time.perf_counter() - t0


def _searcher(sock: str, ws: str, queries: list[str], seconds: float, results: Any) -> None:
    out: list[tuple[float, int, bool]] = []
    lock = threading.Lock()
    end = time.perf_counter() + seconds

    def run(k: int) -> None:
        mine: list[tuple[float, int, bool]] = []
        with MemoryClient(sock, timeout=60) as c:
            i = k
            while time.perf_counter() < end:
                t = time.perf_counter()
                r = c.search(queries[i % len(queries)], workspace=ws, mode="keyword")
                stale = bool(r.raw.get("stale"))  # read-your-writes ran out of budget
                mine.append(((time.perf_counter() - t) * 1000, r.pending_files, stale))
                i += 1
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(SEARCH_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put(out)


def _writer(sock: str, ws: str, day: str, seconds: float, rate: float, results: Any) -> None:
    """``append`` back to back (10 ms apart), or paced to ``rate`` per second when given."""
    n = 0
    ms: list[float] = []
    start = time.perf_counter()
    end = start + seconds
    with MemoryClient(sock, timeout=60) as c:
        while time.perf_counter() < end:
            if rate:
                time.sleep(max(0.0, start + n / rate - time.perf_counter()))
            t = time.perf_counter()
            c.append(
                f"Storm note {n}: the build finished, nothing else to report.",
                workspace=ws,
                date=day,
            )
            ms.append((time.perf_counter() - t) * 1000)
            n += 1
            if not rate:
                time.sleep(0.01)
    results.put(ms)


def write_storm(
    d: Daemon, ws: str, root: Path, queries: list[str], seconds: float, rate: float = 0.0
) -> dict[str, Any]:
    days = sorted(p.stem for p in (root / "memory").glob("20*.md"))[-WRITERS:]
    lines = [len((root / "memory" / f"{day}.md").read_text().splitlines()) for day in days]
    ctx = mp.get_context("spawn")
    sq, wq = ctx.Queue(), ctx.Queue()
    procs = [
        ctx.Process(target=_searcher, args=(str(d.socket), ws, queries, seconds, sq))
        for _ in range(SEARCH_PROCS)
    ]
    procs += [
        ctx.Process(target=_writer, args=(str(d.socket), ws, day, seconds, rate / len(days), wq))
        for day in days
    ]
    note_load()
    for p in procs:
        p.start()
    searches = sorted(x for _ in range(SEARCH_PROCS) for x in sq.get(timeout=seconds + 300))
    writes = sorted(x for _ in days for x in wq.get(timeout=seconds + 300))
    for p in procs:
        p.join(30)
    note_load()
    ms = sorted(s[0] for s in searches)
    return {
        "searches": len(ms),
        "qps": len(ms) / seconds,
        "p50": percentile(ms, 50),
        "p99": percentile(ms, 99),
        "pending": sum(1 for s in searches if s[1] > 0),
        "stale": sum(1 for s in searches if s[2]),
        "writes": len(writes),
        "writes_per_s": len(writes) / seconds,
        "write_p50": percentile(writes, 50),
        "daily_lines": min(lines),
    }


def rss_mb(d: Daemon) -> float:
    return d.proc_status()["VmRSS"]


# ---------------------------------------------------------------------- one size, one code


@dataclass
class Embedded:
    """A home whose index has every vector, and its workspace, saved by the first code run
    at a size: embedding is deterministic (the fake endpoint), so the next code starts on a
    copy instead of spending as long again (half an hour at 100k chunks on 2 busy cores)."""

    home: Path
    root: Path  # a copy of the workspace, as it was then
    root_at: Path  # where the index knows it (restored there before each use)
    ws: str


def settle() -> None:
    """Before a cold index: the previous run's index (hundreds of MB) written out, so that
    its writeback does not land in this one's time (it moved a run's time by up to 20%)."""
    os.sync()
    time.sleep(2)


def qmd_cold(cmd: str, size: int, root: Path, home: Path) -> dict[str, Any]:
    """qmd's cold index of ``root``: ``collection add`` (it indexes as it adds) into an
    empty cache, as the issue measured it."""
    env = dict(os.environ, HOME=str(home))
    env["XDG_CACHE_HOME"], env["XDG_CONFIG_HOME"] = str(home / "cache"), str(home / "config")
    home.mkdir(parents=True)
    settle()
    t = time.perf_counter()
    subprocess.run(
        [*shlex.split(cmd), "collection", "add", str(root), "--name", f"ws{size}"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    r = {"code": "qmd", "size": size, "cold_keyword_s": time.perf_counter() - t}
    log(f"  [qmd] {size}: cold keyword index {r['cold_keyword_s']:.1f} s")
    shutil.rmtree(home, ignore_errors=True)
    return r


def run_size(
    code: str,
    code_env: dict[str, str],
    size: int,
    root: Path,
    home: Path,
    url: str,
    args: argparse.Namespace,
    embedded: Embedded | None,
) -> tuple[dict[str, Any], Embedded | None]:
    queries = (
        chatter_queries(QPS_QUERIES) if args.corpus == "chatter" else make_queries(QPS_QUERIES)
    )
    r: dict[str, Any] = {"code": code, "size": size}
    root = Path(shutil.copytree(root, home.parent / f"{home.name}-ws"))  # the storm writes
    d = daemon(home, "none", code_env)
    try:
        settle()
        d.start()
        with d.client(timeout=7200) as c:
            ws = c.workspace_add(root).name
            t = time.perf_counter()
            c.reindex(workspace=ws, wait=True)
            r["cold_keyword_s"] = time.perf_counter() - t
            w = next(x for x in c.status().workspaces if x.name == ws)
            r["files"], r["chunks"] = w.files, w.chunks
        log(
            f"  [{code}] {size}: cold keyword index {r['cold_keyword_s']:.1f} s "
            f"({r['chunks']} chunks)"
        )
    finally:
        d.stop()
    if embedded is not None:
        shutil.rmtree(home)
        shutil.rmtree(root)
        shutil.rmtree(embedded.root_at, ignore_errors=True)
        shutil.copytree(embedded.root, embedded.root_at)
        shutil.copytree(embedded.home, home)
        root, ws = embedded.root_at, embedded.ws
    vectors = size <= args.vectors_upto
    provider = "openai" if vectors else "none"
    d = daemon(home, provider, code_env, url)
    try:
        r["start_embedding"] = start_phases(d, ws, queries[0], vectors)
        r["embed_s"] = wait_vectors(d, ws) if vectors else None
        log(f"  [{code}] {size}: vectors in {r['embed_s'] or 0:.0f} s")
    finally:
        d.stop()
    r["embedded_here"] = embedded is None
    if embedded is None and args.baseline and vectors:
        keep = home.parent / f"vec{size}"
        embedded = Embedded(
            Path(shutil.copytree(home, keep)), Path(shutil.copytree(root, f"{keep}-ws")), root, ws
        )
    d = daemon(home, provider, code_env, url)
    try:
        r["start"] = start_phases(d, ws, queries[0], vectors)
        r["rss_loaded_mb"] = rss_mb(d)
        # Searches in the steady state: the restart's scan of every file (27k at the chatter
        # corpus's 104k chunks) would otherwise share the GIL with them.
        d.settle()
        r["keyword"] = search_ms(d, ws, queries, "keyword", args.rounds)
        if vectors:
            r["hybrid"] = search_ms(d, ws, queries, "hybrid", args.rounds)
        r["rss_mb"] = rss_mb(d)
        if size == args.storm_size:
            log(f"  [{code}] {size}: write storm")
            r["storm"] = write_storm(
                d, ws, root, queries, args.storm_seconds, args.storm_writes_per_s
            )
    finally:
        d.stop()
    d = daemon(home, provider, code_env, url)  # again: searched while its scans run
    r["keyword_scanning"] = searches_while_scanning(d, ws, queries, args.scan_restarts)
    return r, embedded


# ---------------------------------------------------------------------- report


def _ratio(new: float, old: float | None) -> str:
    return "" if old is None or old == 0 else f" ({new / old:.2f}x)"


def embed_cell(r: dict[str, Any]) -> str:
    if r["embed_s"] is None:
        return "- (keyword only)"
    return f"{r['embed_s']:.0f}{'' if r['embedded_here'] else ' (copied)'}"


def print_qmd(peers: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    codes = list(dict.fromkeys(r["code"] for r in rows))
    print("\nCold keyword index against qmd (same files, same run; ratio: code ÷ qmd):\n")
    print("| chunks | qmd s | " + " | ".join(f"{c} s" for c in codes) + " |")
    print("|---:|---:|" + "---:|" * len(codes))
    for q in peers:
        mine = {r["code"]: r for r in rows if r["size"] == q["size"]}
        qs = q["cold_keyword_s"]
        cells = [
            f"{mine[c]['cold_keyword_s']:.1f} ({mine[c]['cold_keyword_s'] / qs:.2f}x)"
            if c in mine
            else "-"
            for c in codes
        ]
        chunks = next((r["chunks"] for r in mine.values()), q["size"])
        print(f"| {chunks} | {q['cold_keyword_s']:.1f} | " + " | ".join(cells) + " |")


def print_scanning(by_code: dict[str, dict[int, dict[str, Any]]]) -> None:
    """The restart searched from its first answer while its scan runs (searches_while_scanning),
    against the steady state after it: the same size's (what the scan costs a search) and the
    smallest size's (growth)."""
    print("\nKeyword searches while a restart's start-up scan runs (scan), then the late watch's")
    print("whole sync (rescan), from its first answer on, by what ranked them (memory: the")
    print("in-memory copy; loading: FTS5 until it is loaded), against the steady state once")
    print("they are over (the same size's, and the smallest size's):\n")
    print(
        "| code | chunks | files | scan s / start → both over s | during, ranked by "
        "| searches | p50 / p99 ms | CPU ms: daemon / loop thread | steady p50 / p99 ms "
        "| steady CPU ms | p50 / p99 ÷ steady | p50 / p99 ÷ smallest steady |"
    )
    print("|---|---:|---:|---:|---|---:|---|---|---|---|---|---|")
    for c, sizes in by_code.items():
        lo = sizes[min(sizes)]["keyword"]
        for r in sizes.values():
            k, kw = r.get("keyword_scanning") or {}, r["keyword"]
            scan_s = f"{k['scan_s']:.1f}" if k.get("scan_s") is not None else "-"
            scan_s += f" / {k['over_s']:.1f}" if k.get("over_s") is not None else ""
            steady = (
                f"{kw['p50']:.2f} / {kw['p99']:.1f} | "
                f"{kw['cpu_ms']:.2f} / {kw.get('loop_cpu_ms', 0):.2f}"
            )
            groups = [(name, g) for name, g in k.items() if name.split(" ")[0] in SCANS]
            if not groups:
                print(
                    f"| {c} | {r['chunks']} | {r['files']} | {scan_s} | - | 0 (scan over first) "
                    f"| - | - | {steady} | - | - |"
                )
            for name, g in groups:
                print(
                    f"| {c} | {r['chunks']} | {r['files']} | {scan_s} | {name} | {g['n']} "
                    f"| {g['p50']:.2f} / {g['p99']:.1f} | {g['cpu_ms']:.2f} / "
                    f"{g['loop_cpu_ms']:.2f} | {steady} "
                    f"| x{g['p50'] / kw['p50']:.2f} / x{g['p99'] / kw['p99']:.2f} "
                    f"| x{g['p50'] / lo['p50']:.1f} / x{g['p99'] / lo['p99']:.1f} |"
                )


def print_report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    peers = [r for r in rows if r["code"] == "qmd"]
    rows = [r for r in rows if r["code"] != "qmd"]
    codes = list(dict.fromkeys(r["code"] for r in rows))
    base = {r["size"]: r for r in rows if len(codes) > 1 and r["code"] == codes[0]}

    def cell(r: dict[str, Any], get: Any, fmt: str) -> str:
        v = get(r)
        b = base.get(r["size"])
        old = get(b) if b is not None and b is not r else None
        return f"{v:{fmt}}{_ratio(v, old)}"

    def hybrid_cells(r: dict[str, Any]) -> str:
        if "hybrid" not in r:
            return "- | -"
        return (
            f"{cell(r, lambda x: x['hybrid']['p50'], '.2f')} / "
            f"{cell(r, lambda x: x['hybrid']['p99'], '.1f')} "
            f"| {cell(r, lambda x: x['hybrid']['cpu_ms'], '.2f')}"
        )

    print(
        "### Scale (vectors: tests/fakes' fake OpenAI endpoint, 384 dims; ratios: this "
        f"code ÷ {codes[0]})\n"
        if len(codes) > 1
        else "### Scale (vectors: tests/fakes' fake OpenAI endpoint, 384 dims)\n"
    )
    print(
        "| code | chunks | files | cold keyword index s | start → ready ms | → first answer ms "
        "| → fully loaded s (keyword/vector scan) | keyword p50 / p99 ms | keyword CPU ms "
        "| hybrid p50 / p99 ms | hybrid CPU ms | RSS MB | embed all s |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|---|---|---|---:|---:|")
    for r in rows:
        s = r["start"]
        print(
            f"| {r['code']} | {r['chunks']} | {r['files']} "
            f"| {cell(r, lambda x: x['cold_keyword_s'], '.1f')} "
            f"| {cell(r, lambda x: x['start']['ready_s'] * 1000, '.0f')} "
            f"| {cell(r, lambda x: x['start']['first_answer_s'] * 1000, '.0f')} "
            f"| {cell(r, lambda x: x['start']['loaded_s'], '.2f')} "
            f"({s['keyword_scan']}/{s['vector_scan']}) "
            f"| {cell(r, lambda x: x['keyword']['p50'], '.2f')} / "
            f"{cell(r, lambda x: x['keyword']['p99'], '.1f')} "
            f"| {cell(r, lambda x: x['keyword']['cpu_ms'], '.2f')} "
            f"| {hybrid_cells(r)} "
            f"| {cell(r, lambda x: x['rss_mb'], '.0f')} "
            f"| {embed_cell(r)} |"
        )
    print(
        "\nstart rows are the restart on the complete index; the first restart after the "
        "keyword-only index (provider switched on, vectors still to come):\n"
    )
    print("| code | chunks | start → ready ms | → first answer ms | → fully loaded s |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        s = r["start_embedding"]
        print(
            f"| {r['code']} | {r['chunks']} | {s['ready_s'] * 1000:.0f} "
            f"| {s['first_answer_s'] * 1000:.0f} | {s['loaded_s']:.2f} |"
        )
    by_code = {c: {r["size"]: r for r in rows if r["code"] == c} for c in codes}
    print(
        "\nGrowth from the smallest to the largest size (the issue's goal: keyword ≤ 4x, "
        "hybrid ≤ 5x):\n"
    )
    for c, sizes in by_code.items():
        lo, hi = sizes[min(sizes)], sizes[max(sizes)]
        hybrid = [s for s in sizes.values() if "hybrid" in s]
        growth = (
            f", hybrid p50 x{hybrid[-1]['hybrid']['p50'] / hybrid[0]['hybrid']['p50']:.1f} "
            f"(CPU x{hybrid[-1]['hybrid']['cpu_ms'] / hybrid[0]['hybrid']['cpu_ms']:.1f}; "
            f"{hybrid[0]['chunks']} → {hybrid[-1]['chunks']} chunks)"
            if hybrid
            else ""
        )
        cpu_growth = hi["keyword"]["cpu_ms"] / lo["keyword"]["cpu_ms"]
        print(
            f"- {c}: keyword p50 x{hi['keyword']['p50'] / lo['keyword']['p50']:.1f} "
            f"(CPU x{cpu_growth:.1f}; {lo['chunks']} → {hi['chunks']} chunks){growth}"
        )
    print_scanning(by_code)
    storms = [r for r in rows if "storm" in r]
    if storms:
        print(
            f"\n### Write storm ({WRITERS} writers: `append` "
            + (
                f"at {args.storm_writes_per_s:g}/s in all"
                if args.storm_writes_per_s
                else "back to back"
            )
            + f" into the newest daily files; {SEARCH_PROCS * SEARCH_THREADS} keyword searchers; "
            f"{args.storm_seconds:.0f} s)\n"
        )
        print(
            "| code | chunks | searches/s | search p50 / p99 ms | answered stale (waited the "
            "whole read-your-writes budget) | answered with other files pending | writes/s "
            "| append p50 ms |"
        )
        print("|---|---:|---:|---|---:|---:|---:|---:|")
        for r in storms:
            st = r["storm"]
            print(
                f"| {r['code']} | {r['chunks']} | {cell(r, lambda x: x['storm']['qps'], '.0f')} "
                f"| {cell(r, lambda x: x['storm']['p50'], '.1f')} / "
                f"{cell(r, lambda x: x['storm']['p99'], '.0f')} "
                f"| {st.get('stale', '?')} | {st['pending']} of {st['searches']} "
                f"| {st['writes_per_s']:.0f} "
                f"| {st['write_p50']:.1f} |"
            )
    if peers:
        print_qmd(peers, rows)
    from latency import LOADS

    print(
        f"\nload average (1 min) during the run: {min(LOADS):.2f} to {max(LOADS):.2f} on "
        f"{os.cpu_count()} cores; python {sys.version.split()[0]}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="1000,10000,100000", help="workspaces, in chunks")
    ap.add_argument("--huge", action="store_true", help="add a 300k-chunk workspace")
    ap.add_argument(
        "--baseline",
        metavar="REV[,REV...]",
        help="also run the code of these git revisions (ratios against the first)",
    )
    ap.add_argument("--rounds", type=int, default=5, help="passes over the 50 queries")
    ap.add_argument(
        "--vectors-upto",
        type=int,
        default=1 << 30,
        metavar="CHUNKS",
        help="larger sizes run keyword-only (no embedding, no hybrid row)",
    )
    ap.add_argument(
        "--scan-restarts",
        type=int,
        default=1,
        metavar="N",
        help="restarts searched while their scans run (step 5), pooled",
    )
    ap.add_argument("--storm-size", type=int, default=10_000)
    ap.add_argument("--storm-seconds", type=float, default=10.0)
    ap.add_argument(
        "--storm-writes-per-s",
        type=float,
        default=0.0,
        help="pace the writers to this many appends a second in all (0: back to back)",
    )
    ap.add_argument("--qmd", metavar="CMD", help="also time qmd's cold index (see above)")
    ap.add_argument(
        "--corpus",
        choices=("synthetic", "chatter"),
        default="synthetic",
        help="chatter: bench/chatter.py's small vocabulary (long posting lists), its questions",
    )
    ap.add_argument("--corpus-dir", type=Path, help="keep the synthetic workspaces here")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (daemon logs)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([300_000] if args.huge else [])
    note_load()
    tmp = Path(tempfile.mkdtemp(dir="/tmp", prefix="mds"))
    corpus = args.corpus_dir or tmp / "corpus"
    rows: list[dict[str, Any]] = []
    revs = args.baseline.split(",") if args.baseline else []
    codes = [(rev, rev) for rev in revs] + [("this", None)]
    try:
        with contextlib.ExitStack() as stack:
            envs = {
                name: stack.enter_context(code_at(rev, tmp, compiled=True)) for name, rev in codes
            }
            url = stack.enter_context(fake_openai())
            for size in sizes:
                root = corpus / f"{args.corpus}{size}"
                stamp = root / ".bench-synth"
                if not stamp.exists() or stamp.read_text() != str(size):
                    log(f"{args.corpus} workspace of {size} chunks")
                    make = make_chatter_workspace if args.corpus == "chatter" else make_workspace
                    make(root, size, 1)
                    stamp.write_text(str(size))
                embedded: Embedded | None = None
                for name, _ in codes:
                    log(f"[{name}] {size} chunks")
                    home = tmp / f"h{len(rows)}"
                    row, embedded = run_size(
                        name, envs[name], size, root, home, url, args, embedded
                    )
                    rows.append(row)
                    if args.qmd and name == codes[0][0]:  # qmd between the codes' runs
                        rows.append(qmd_cold(args.qmd, size, root, tmp / f"q{len(rows)}"))
                    if not args.keep:
                        shutil.rmtree(home, ignore_errors=True)
                        shutil.rmtree(f"{home}-ws", ignore_errors=True)
                if embedded is not None and not args.keep:
                    shutil.rmtree(embedded.home, ignore_errors=True)
                    shutil.rmtree(embedded.root, ignore_errors=True)
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    note_load()
    if args.json:
        print(json.dumps(rows, indent=2))
    print_report(rows, args)
    by = "bench/chatter.py" if args.corpus == "chatter" else "bench/synth.py"
    print(f"\n{date.today().isoformat()}; corpus by {by} (seed 1)")


if __name__ == "__main__":
    main()
