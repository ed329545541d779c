"""Background CPU work at a lower scheduling priority, so searches never wait behind it.

Embedding a first index keeps every core busy for minutes; searches must not feel it. On
Linux a nice value belongs to a thread, and threads inherit their creator's: the embedding
thread lowers its own, and the local model's session is created on a short-lived thread
that lowered its own first, so onnxruntime's intra-op workers start (and stay) niced while
a search's reader threads keep the normal priority. macOS has no per-thread nice
(setpriority there changes the whole process), so nothing is lowered there: embedding
competes with searches as any thread does.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.runtime")

BACKGROUND_NICE = 10  # added to the thread's nice value (at most 19)
T = TypeVar("T")


def per_thread() -> bool:
    """Whether this platform lowers one thread's priority without the whole process's."""
    return sys.platform.startswith("linux")


def lower_this_thread() -> None:
    """Make the calling thread (and threads it creates later) yield to the rest."""
    if not per_thread():
        return
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + BACKGROUND_NICE))
    except OSError as exc:  # a sandbox may refuse: slower searches under load, nothing worse
        log.warning("thread_priority_unchanged", error=str(exc))


def lower_this_process() -> None:
    """Make a worker process of its own (a bulk sync's chunking, index/prepare.py) yield to
    the daemon's threads: its writer and its searches. Any platform: the process is the
    worker's alone."""
    try:
        os.nice(BACKGROUND_NICE)
    except OSError as exc:
        log.warning("process_priority_unchanged", error=str(exc))


def run_lowered(fn: Callable[[], T]) -> T:
    """``fn()`` on a new thread of lowered priority: what it creates (onnxruntime's
    workers) inherits that priority. The caller's own priority is untouched (a thread
    cannot raise its priority back without privileges)."""
    if not per_thread():
        return fn()
    box: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        lower_this_thread()
        try:
            box.append(fn())
        except BaseException as exc:
            failed.append(exc)

    t = threading.Thread(target=run, name="memoryd-lowered")
    t.start()
    t.join()
    if failed:
        raise failed[0]
    return box[0]
