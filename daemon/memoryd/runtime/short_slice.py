"""A short scheduling slice for the thread that answers, so a busy core does not hold it up.

The event loop's thread (it answers most searches itself) runs ~0.1-1 ms per request and
sleeps between them. When a request woke it to a core busy with another program, it waited
on the run queue until that program's slice ran out: 3-8 ms on two cores, 10-20x a search
(issue 38's tail, `bench/tail.py --waits --sched`). Linux's EEVDF scheduler (6.12 and
later) lets an unprivileged thread ask for a shorter slice (``sched_attr.sched_runtime``,
0.1-100 ms) and lets a waking thread with a shorter slice preempt the running one
(PREEMPT_SHORT). It is no larger share: the thread's weight (its nice value) is unchanged,
so over time it gets no more CPU than before; it gets it sooner.

Only the calling thread is changed, and SCHED_FLAG_RESET_ON_FORK keeps it so: the threads
and processes it starts later (the writer, hit counting, git) get the kernel's default slice
again. Left alone: a thread that is not SCHED_OTHER or has a negative nice value (an admin's
choice, e.g. systemd's CPUSchedulingPolicy= or Nice=), other systems than Linux on x86_64 or
arm64 with a 64-bit Python, and kernels or sandboxes that refuse the call (it is logged at
debug; nothing else changes). Older kernels take the call and ignore the slice.
"""

from __future__ import annotations

import os
import struct
import sys
import threading
from typing import Final

from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.runtime")

# The 95th percentile of the loop's CPU per search, as the kernel's change log advises
# (conv-26's questions: p50 0.25 ms, p95 0.55 ms). Shorter costs throughput: a loop that is
# always runnable (16 clients back to back) is switched out at the end of each slice; 0.3 ms
# gave 0.84x the searches/s in one run.
ANSWER_SLICE_NS: Final = 600_000
RESET_ON_FORK: Final = 0x01  # SCHED_FLAG_RESET_ON_FORK
# sched_getscheduler's bit for a thread that has it (this module sets it; so may systemd's
# CPUSchedulingResetOnFork=): the policy is what is left
_POLICY_RESET_ON_FORK: Final = 0x40000000  # SCHED_RESET_ON_FORK
# sched_setattr / sched_getattr: x86_64's numbers, and the generic table's (arm64)
_CALLS: Final = {"x86_64": (314, 315), "aarch64": (274, 275), "arm64": (274, 275)}
# struct sched_attr as of SCHED_ATTR_SIZE_VER0: size, policy, flags, nice, priority,
# runtime, deadline, period
_ATTR: Final = struct.Struct("IIQiIQQQ")
# The numbers above are the 64-bit ABI's: a 32-bit Python (armhf or i386 user space on a
# 64-bit kernel, whose uname says aarch64 or x86_64; x32) has other numbers for them.
_LP64: Final = struct.calcsize("P") == 8


def answer_promptly() -> bool:
    """Give the calling thread ANSWER_SLICE_NS; whether the kernel now reports it. Never
    raises: a start must not fail for it (a sandbox that refuses sched_getscheduler, a
    Python without ctypes or without a dynamic loader, as a static musl build)."""
    try:
        return _ask()
    except Exception as exc:
        log.debug("answer_slice_refused", error=repr(exc)[:200])
        return False


def _ask() -> bool:
    calls = _calls()
    if calls is None or os.sched_getscheduler(0) & ~_POLICY_RESET_ON_FORK != os.SCHED_OTHER:
        return False
    nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    if nice < 0:
        return False
    attr = _ATTR.pack(_ATTR.size, os.SCHED_OTHER, RESET_ON_FORK, nice, 0, ANSWER_SLICE_NS, 0, 0)
    import ctypes  # here: its absence (or the loader's) is a refusal like the kernel's

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(calls[0], 0, ctypes.c_char_p(attr), 0) != 0:
        log.debug("answer_slice_refused", errno=ctypes.get_errno())
        return False
    return slice_of_this_thread() == ANSWER_SLICE_NS


def slice_of_this_thread() -> int | None:
    """The calling thread's slice in ns as the kernel reports it (0 where the kernel has no
    slices to report); None where it cannot be read."""
    calls = _calls()
    if calls is None:
        return None
    try:
        import ctypes

        buf = ctypes.create_string_buffer(_ATTR.size)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(calls[1], 0, buf, _ATTR.size, 0) != 0:
            return None
    except Exception:
        return None
    return int(_ATTR.unpack(buf.raw)[5])


def this_thread_ms() -> float | None:
    """The calling thread's slice in ms as the kernel reports it (the daemon's ``status``
    and ``startup`` line: 0.6 where the short slice was granted); None where none is."""
    ns = slice_of_this_thread()
    return ns / 1e6 if ns else None


def _calls() -> tuple[int, int] | None:
    if not (sys.platform.startswith("linux") and _LP64):
        return None
    return _CALLS.get(os.uname().machine)
