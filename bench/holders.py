"""Who held the cores while a slow search waited (bench/tail.py --sched).

bench/waits.py tells that a slow search's thread waited on a run queue; this tells for whom.
`perf sched record` runs machine-wide over the timed searches, on CLOCK_MONOTONIC (the clock
of time.monotonic), and `perf sched timehist` turns it into every task's spells on a CPU.
For each search over 5x p50: the CPU time of every other task inside the search's window,
the bench's own processes by their role (a daemon's main thread, its event loop's, apart
from its other threads), the rest by command name, and "idle" for a core
with nothing to run (then the wait was not for a busy core). Linux, root or
kernel.perf_event_paranoid <= 0 for a machine-wide record.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

# one spell on a CPU: start s, end s, command, pid, tid
Spell = tuple[float, float, str, int, int]


@contextlib.contextmanager
def recorded(out: Path) -> Iterator[Path]:
    """`perf sched record` of the whole machine while the block runs."""
    cmd = ["perf", "sched", "record", "-a", "-k", "CLOCK_MONOTONIC", "-o", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # its buffers mapped and the tracepoints on before the first search
    if p.poll() is not None:
        raise SystemExit(
            f"perf sched record failed: {p.stderr.read().decode() if p.stderr else ''}"
        )
    try:
        yield out
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(60)


def spells(data: Path) -> list[Spell]:
    """Every task's time on a CPU in a `perf sched record`, in order of its start."""
    text = subprocess.run(
        ["perf", "sched", "timehist", "-i", str(data)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse(text)


def parse(text: str) -> list[Spell]:
    """`perf sched timehist`'s lines as spells (its headers and summaries skipped)."""
    out: list[Spell] = []
    for line in text.splitlines():
        parts = line.split()
        # time [cpu] name[tid/pid] wait_ms delay_ms run_ms (a name may hold spaces)
        if len(parts) < 6 or not parts[1].startswith("["):
            continue
        try:
            end, run_ms = float(parts[0]), float(parts[-1])
        except ValueError:
            continue
        name = " ".join(parts[2:-3])
        if name == "<idle>":  # a core with nothing to run
            out.append((end - run_ms / 1000, end, "idle", 0, 0))
            continue
        comm, _, ids = name.rpartition("[")
        tid_s, _, pid_s = ids.rstrip("]").partition("/")
        try:
            tid = int(tid_s)
        except ValueError:
            continue
        pid = int(pid_s) if pid_s else tid
        out.append((end - run_ms / 1000, end, comm, pid, tid))
    out.sort()
    return out


def held(
    all_spells: list[Spell],
    window: tuple[float, float],
    roles: dict[int, str],
    skip_tids: set[int],
) -> collections.Counter[str]:
    """CPU ms of each task group inside ``window``, less the threads in ``skip_tids`` (the
    search's own: the client's and the daemon's loop thread)."""
    start, end = window
    out: collections.Counter[str] = collections.Counter()
    longest = max((s1 - s0 for s0, s1, *_ in all_spells), default=0.0)  # an idle core's spell
    i = bisect.bisect_left(all_spells, (start - longest,))
    for s0, s1, comm, pid, tid in all_spells[i:]:
        if s0 >= end:
            break
        overlap = min(s1, end) - max(s0, start)
        if overlap <= 0 or tid in skip_tids:
            continue
        role = roles.get(pid)
        group = comm if role is None else role if tid == pid else f"{role} thread"
        out[group] += overlap * 1000
    return out
