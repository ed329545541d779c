"""A thread pool for short blocking calls (searches, reads) that wakes one thread per job.

``ThreadPoolExecutor``'s idle threads all wait on one ``SimpleQueue``: a job wakes one of
them, and handing the queue's lock on wakes a second, which finds nothing to do but must
take the GIL to see that, just as the first starts working. On two cores (and more so in
a VM, where each wake-up is an interrupt between virtual CPUs) that costs more than the
rest of the hop. Here each idle thread waits on its own lock, a job is handed to exactly
one of them, and the most recently idle one is picked first (its caches are warm).
Jobs that find every thread busy wait in a FIFO queue for the next thread to finish.

The threads are daemon threads: ``shutdown`` ends the idle ones at once, and one still in
a call when the process exits does not hold the exit up (``ThreadPoolExecutor`` joins it).
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class _Worker:
    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()  # released by whoever hands this thread a job (or says stop)
        self.job: _Job | None = None


class HandoffPool(Executor):
    """A ``concurrent.futures.Executor`` of up to ``max_workers`` threads, started lazily."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "pool") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max = max_workers
        self._prefix = thread_name_prefix
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []  # a stack: the most recently idle thread first
        self._jobs: collections.deque[_Job] = collections.deque()
        self._threads: list[threading.Thread] = []
        self._shutdown = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        job: _Job = (future, fn, args, kwargs)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if self._idle:
                worker = self._idle.pop()
                worker.job = job
                worker.wake.release()
                return future
            self._jobs.append(job)
            thread = None
            if len(self._threads) < self._max:
                thread = threading.Thread(
                    target=self._run,
                    args=(_Worker(),),
                    daemon=True,
                    name=f"{self._prefix}_{len(self._threads)}",
                )
                self._threads.append(thread)
        if thread is not None:
            try:
                thread.start()  # it takes the job from the queue (or a later one: same thing)
            except BaseException:
                with self._lock:  # no thread: the job must not wait for one forever
                    self._threads.remove(thread)
                    with contextlib.suppress(ValueError):
                        self._jobs.remove(job)
                raise
        return future

    def _run(self, worker: _Worker) -> None:
        while True:
            with self._lock:
                job = self._jobs.popleft() if self._jobs else None
                if job is None:
                    if self._shutdown:
                        return
                    self._idle.append(worker)
            if job is None:
                worker.wake.acquire()  # the GIL is released while waiting
                job, worker.job = worker.job, None
                if job is None:  # shutdown
                    return
            future, fn, args, kwargs = job
            del job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
                del exc  # no reference cycle through the traceback
            else:
                future.set_result(result)
                del result
            del future, fn, args, kwargs

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while self._jobs:
                    self._jobs.popleft()[0].cancel()
            idle, self._idle = self._idle, []
            threads = list(self._threads)
        for worker in idle:
            worker.job = None
            worker.wake.release()
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()
