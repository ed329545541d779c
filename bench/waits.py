"""Where a slow search's wall clock went, as the kernel counts it (bench/tail.py --waits).

Around each timed search: the daemon's event-loop thread's and the client thread's time on
a CPU and time waiting on a run queue (/proc/<pid>/task/<tid>/schedstat, ns), and the
machine's steal ticks (/proc/stat: time the hypervisor ran something else). A search far
over the p50 is then put down to the daemon's CPU, a wait for a core, the hypervisor, or
none of these (a wait the kernel does not count as either: the other side's I/O, a lock).
Linux only; read outside each search's timed window.
"""

from __future__ import annotations

import os
import threading
from typing import Any

# (daemon run, daemon wait, client run, client wait) ns, steal ticks
Sample = tuple[int, int, int, int, int]


class Waits:
    def __init__(self, daemon_pid: int) -> None:
        client = threading.get_native_id()
        self.daemon = f"/proc/{daemon_pid}/task/{daemon_pid}/schedstat"
        self.client = f"/proc/{os.getpid()}/task/{client}/schedstat"

    def sample(self) -> Sample:
        d_run, d_wait = _schedstat(self.daemon)
        c_run, c_wait = _schedstat(self.client)
        with open("/proc/stat") as f:
            steal = int(f.readline().split()[8])
        return d_run, d_wait, c_run, c_wait, steal


def _schedstat(path: str) -> tuple[int, int]:
    with open(path) as f:
        run, wait, _ = f.read().split()
    return int(run), int(wait)


def spent(before: Sample, after: Sample) -> Sample:
    return tuple(b - a for a, b in zip(before, after, strict=True))  # type: ignore[return-value]


def account(ms: list[float], spent_: list[Sample], p50: float, over: float = 5.0) -> dict[str, Any]:
    """The searches over ``over`` x p50, each with where its time went, and their count by
    cause: the larger of the daemon's CPU and the two waits if it covers half the excess
    over the p50; "stolen" if the machine counted steal meanwhile; else "unseen"."""
    rows = []
    causes = {"daemon cpu": 0, "run queue": 0, "stolen": 0, "unseen": 0}
    for wall, (d_run, d_wait, c_run, c_wait, steal) in zip(ms, spent_, strict=True):
        if wall <= over * p50:
            continue
        excess = wall - p50
        d_cpu, queued = d_run / 1e6, (d_wait + c_wait) / 1e6
        if max(d_cpu, queued) >= excess / 2:
            cause = "daemon cpu" if d_cpu >= queued else "run queue"
        elif steal:
            cause = "stolen"
        else:
            cause = "unseen"
        causes[cause] += 1
        rows.append(
            {
                "ms": round(wall, 2),
                "daemon_run_ms": round(d_cpu, 3),
                "daemon_wait_ms": round(d_wait / 1e6, 3),
                "client_run_ms": round(c_run / 1e6, 3),
                "client_wait_ms": round(c_wait / 1e6, 3),
                "steal_ticks": steal,
                "cause": cause,
            }
        )
    return {"over": over, "causes": causes, "searches": sorted(rows, key=lambda r: -r["ms"])}
