"""The readers' thread pool: an Executor that hands each job to exactly one idle thread."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError

import pytest

from memoryd.runtime.pool import HandoffPool


def test_results_and_exceptions_come_back_through_the_future() -> None:
    pool = HandoffPool(2, "t")
    try:
        assert pool.submit(lambda a, b=0: a + b, 2, b=3).result(5) == 5
        with pytest.raises(ZeroDivisionError):
            pool.submit(lambda: 1 / 0).result(5)
        assert pool.submit(sum, [1, 2, 3]).result(5) == 6  # the pool survives a failed job
    finally:
        pool.shutdown()


def test_sequential_jobs_reuse_the_most_recently_idle_thread() -> None:
    pool = HandoffPool(4, "t")
    try:
        names = {pool.submit(lambda: threading.current_thread().name).result(5) for _ in range(50)}
        assert names == {"t_0"}  # one job at a time never needs a second thread
    finally:
        pool.shutdown()


def test_runs_up_to_max_workers_at_once_and_queues_the_rest() -> None:
    pool = HandoffPool(3, "t")
    gate = threading.Event()
    running: list[int] = []
    lock = threading.Lock()

    def job(i: int) -> str:
        with lock:
            running.append(i)
        gate.wait(5)
        return threading.current_thread().name

    try:
        futures = [pool.submit(job, i) for i in range(8)]
        deadline = time.monotonic() + 5
        while len(running) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        assert sorted(running) == [0, 1, 2]  # three threads busy, five jobs waiting
        gate.set()
        assert {f.result(5) for f in futures} <= {"t_0", "t_1", "t_2"}
        assert sorted(running) == list(range(8))
    finally:
        pool.shutdown()


def test_queued_jobs_start_in_submission_order() -> None:
    pool = HandoffPool(1, "t")
    gate = threading.Event()
    order: list[int] = []
    try:
        first = pool.submit(gate.wait, 5)
        futures = [pool.submit(order.append, i) for i in range(20)]
        gate.set()
        first.result(5)
        for f in futures:
            f.result(5)
        assert order == list(range(20))
    finally:
        pool.shutdown()


def test_shutdown_runs_queued_jobs_unless_cancelled_and_refuses_new_ones() -> None:
    pool = HandoffPool(1, "t")
    gate = threading.Event()
    first = pool.submit(gate.wait, 5)
    queued = pool.submit(lambda: "ran")
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(CancelledError):
        queued.result(5)
    gate.set()
    assert first.result(5) is True  # a running job finishes
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)

    pool = HandoffPool(1, "t")
    gate = threading.Event()
    first = pool.submit(gate.wait, 5)
    queued = pool.submit(lambda: "ran")
    gate.set()
    pool.shutdown(wait=True)
    assert queued.result(0) == "ran"


def test_shutdown_stops_idle_threads() -> None:
    pool = HandoffPool(3, "t")
    futures = [pool.submit(time.sleep, 0.05) for _ in range(3)]
    for f in futures:
        f.result(5)
    threads = list(pool._threads)
    assert len(threads) == 3
    pool.shutdown(wait=True)
    assert not any(t.is_alive() for t in threads)


def test_works_as_an_asyncio_executor() -> None:
    pool = HandoffPool(2, "t")

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        return list(
            await asyncio.gather(*(loop.run_in_executor(pool, pow, i, 2) for i in range(10)))
        )

    try:
        assert asyncio.run(main()) == [i * i for i in range(10)]
    finally:
        pool.shutdown()
