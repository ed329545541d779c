"""A hello's and a search's round trip with the daemon and the client pinned to cores.

On a small machine the scheduler decides, round by round, whether the daemon and the client
share a core. Sharing one, a round trip has no cross-core wake-up (a hello takes about half
as long) but the two sides' CPU adds up; on two cores the client decodes while the daemon
finishes. A round's search ÷ hello moves with that choice (session 8: 2.8x apart, 4.7x
together, on one tree), so search_cost.py also measures both placements on purpose, each
code alike, and prints them beside the unpinned figures. Linux only (sched_setaffinity on
every thread of the daemon); elsewhere, or on one core, nothing is measured.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from latency import Daemon

PLACEMENTS = {"apart": ({0}, {1}), "together": ({0}, {0})}  # (daemon's cores, client's)


def placed_latency(
    d: Daemon, ws: str, queries: list[str], hellos: int = 2000, passes: int = 2
) -> dict[str, dict[str, float]]:
    """{placement: {"hello": p50 ms, "search": p50 ms}} for each of PLACEMENTS (keyword, 10
    hits, min score 0, on one connection); {} where cores cannot be chosen."""
    if not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2:
        return {}
    out: dict[str, dict[str, float]] = {}
    with d.client() as c:
        c.connect()

        def search(i: int) -> None:
            q = queries[i % len(queries)]
            c.search(q, workspace=ws, mode="keyword", max_results=10, min_score=0)

        for name, (daemon_cpus, client_cpus) in PLACEMENTS.items():
            with _pinned(d.pid, daemon_cpus, client_cpus):
                for i in range(len(queries)):  # warm-up on these cores
                    search(i)
                hello = _p50(lambda _i: c.hello(), hellos)
                found = _p50(search, passes * len(queries))
            out[name] = {"hello": hello, "search": found}
    return out


def placed_summary(rows: list[dict[str, Any]], code: str) -> str:
    """``code``'s search ÷ hello with the daemon and the client on two cores and on one
    (placement.py), each the median of the rounds' own ratios, with their p50s in ms."""
    out = []
    for name in PLACEMENTS:
        got = [r["placed"][name] for r in rows if r["code"] == code and r.get("placed")]
        if got:
            hello = statistics.median(g["hello"] for g in got)
            found = statistics.median(g["search"] for g in got)
            ratio = statistics.median(g["search"] / g["hello"] for g in got)
            out.append(f"{name} {ratio:.2f}x: hello {hello:.3f}, search {found:.3f} ms")
    return "; ".join(out)


def _p50(call: Callable[[int], Any], n: int) -> float:
    ms = []
    for i in range(n):
        t = time.perf_counter()
        call(i)
        ms.append((time.perf_counter() - t) * 1000)
    ms.sort()
    return ms[n // 2]


@contextmanager
def _pinned(pid: int, daemon_cpus: set[int], client_cpus: set[int]) -> Iterator[None]:
    """Every thread of ``pid`` on ``daemon_cpus`` and this process on ``client_cpus``; all
    free again afterwards."""
    everywhere = os.sched_getaffinity(0)
    _set_threads(pid, daemon_cpus)
    os.sched_setaffinity(0, client_cpus)
    try:
        time.sleep(0.2)  # let the moved threads settle on their cores
        yield
    finally:
        os.sched_setaffinity(0, everywhere)
        _set_threads(pid, everywhere)


def _set_threads(pid: int, cpus: set[int]) -> None:
    for tid in os.listdir(f"/proc/{pid}/task"):
        with suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cpus)
