"""The answering thread asks Linux for a short slice; what it starts and an admin's choices
keep theirs (runtime/short_slice.py)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from daemon_util import Proc, RawConn, short_home, wait_for
from memoryd.runtime import short_slice

T = TypeVar("T")


def in_a_thread(fn: Callable[[], T]) -> T:
    """``fn`` on a fresh thread: the changes it makes die with that thread."""
    box: list[T] = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


DEFAULT = in_a_thread(short_slice.slice_of_this_thread)
needs_slices = pytest.mark.skipif(
    not DEFAULT, reason="this kernel reports no scheduling slice (EEVDF custom slices: 6.12)"
)


def nice_here() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@needs_slices
def test_the_thread_gets_the_short_slice_and_keeps_its_nice_value() -> None:
    def run() -> tuple[bool, int | None, int, int]:
        before = nice_here()
        return (
            short_slice.answer_promptly(),
            short_slice.slice_of_this_thread(),
            before,
            nice_here(),
        )

    took, now, nice_before, nice_after = in_a_thread(run)
    assert took
    assert now == short_slice.ANSWER_SLICE_NS
    assert nice_after == nice_before


@needs_slices
def test_threads_it_starts_get_the_default_slice_and_its_nice_value() -> None:
    def run() -> tuple[int | None, int, int]:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice_here() + 2)
        assert short_slice.answer_promptly()
        mine = nice_here()
        child_slice, child_nice = in_a_thread(
            lambda: (short_slice.slice_of_this_thread(), nice_here())
        )
        return child_slice, child_nice, mine

    child_slice, child_nice, mine = in_a_thread(run)
    assert child_slice == DEFAULT
    assert child_nice == mine


@needs_slices
def test_a_batch_or_idle_thread_is_left_alone() -> None:
    def run(policy: int) -> tuple[bool, int | None, int]:
        os.sched_setscheduler(0, policy, os.sched_param(0))
        return (
            short_slice.answer_promptly(),
            short_slice.slice_of_this_thread(),
            os.sched_getscheduler(0),
        )

    for policy in (os.SCHED_BATCH, os.SCHED_IDLE):
        took, now, after = in_a_thread(lambda p=policy: run(p))
        assert not took
        assert after == policy
        assert now != short_slice.ANSWER_SLICE_NS


@needs_slices
def test_a_raised_priority_is_left_alone() -> None:
    def run() -> tuple[bool, int | None] | None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -1)
        except PermissionError:
            return None
        return short_slice.answer_promptly(), short_slice.slice_of_this_thread()

    got = in_a_thread(run)
    if got is None:
        pytest.skip("raising a priority needs privileges")
    assert got == (False, DEFAULT)


def test_where_slices_are_not_reported_nothing_is_claimed() -> None:
    took = in_a_thread(short_slice.answer_promptly)
    assert took == bool(DEFAULT)


def sched_slices(pid: int) -> dict[int, int]:
    """Each of the process's threads' slice, from /proc (the kernel's own account)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "sched").read_text().splitlines():
            if line.startswith("se.slice"):
                out[int(task.name)] = int(line.split(":")[1])
    return out


@needs_slices
def test_the_daemons_event_loop_thread_answers_with_the_short_slice(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("- The office plant is a fern called Gerald.\n")
    with short_home() as home:
        d = Proc(home)
        try:
            d.ready()
            with RawConn(d.socket, timeout=60) as c:
                name = c.result("workspace.add", {"path": str(ws)})["name"]
                c.result("reindex", {"workspace": name, "wait": True})
                assert c.result("search", {"query": "fern", "workspace": name})["results"]
                granted = short_slice.ANSWER_SLICE_NS / 1e6
                assert c.result("status")["server"]["answer_slice_ms"] == granted
            assert wait_for(lambda: "background_ready" in d.events(), 60, 0.1)
            slices = sched_slices(d.p.pid)
            assert slices.pop(d.p.pid) == short_slice.ANSWER_SLICE_NS  # the event loop's
            assert slices, "the daemon has other threads (writer, watcher, hit counting)"
            assert set(slices.values()) == {DEFAULT}
            [startup] = [e for e in d.logs() if e.get("event") == "startup"]
            assert startup["answer_slice_ms"] == granted  # said where a user looks
        finally:
            d.p.send_signal(signal.SIGTERM)
            d.wait()


@needs_slices
def test_a_thread_that_resets_on_fork_already_is_still_served() -> None:
    """sched_getscheduler adds SCHED_RESET_ON_FORK to the policy of a thread that has it (a
    second call, or systemd's CPUSchedulingResetOnFork=): still SCHED_OTHER."""

    def run() -> tuple[bool, bool, int | None]:
        first = short_slice.answer_promptly()
        return first, short_slice.answer_promptly(), short_slice.slice_of_this_thread()

    assert in_a_thread(run) == (True, True, short_slice.ANSWER_SLICE_NS)


def test_a_32_bit_python_makes_no_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """uname says x86_64 or aarch64 under a 32-bit user space too, whose system call
    numbers differ (314 is sync_file_range on i386, 274 mq_open on arm)."""
    monkeypatch.setattr(short_slice, "_LP64", False)
    called: list[object] = []
    monkeypatch.setattr("ctypes.CDLL", lambda *a, **k: called.append(a))
    assert in_a_thread(short_slice.answer_promptly) is False
    assert in_a_thread(short_slice.slice_of_this_thread) is None
    assert not called


def test_what_cannot_be_asked_leaves_the_start_going(monkeypatch: pytest.MonkeyPatch) -> None:
    """A start never fails for the slice: a sandbox refusing sched_getscheduler (EPERM),
    a Python without ctypes, or without a dynamic loader (a static musl build)."""

    def refused(*args: object) -> int:
        raise PermissionError(1, "Operation not permitted")

    with monkeypatch.context() as m:
        m.setattr(os, "sched_getscheduler", refused)
        assert in_a_thread(short_slice.answer_promptly) is False
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "ctypes", None)  # import ctypes raises ImportError
        assert in_a_thread(short_slice.answer_promptly) is False
        assert in_a_thread(short_slice.slice_of_this_thread) is None

    def no_loader(*args: object, **kwargs: object) -> object:
        raise OSError("Dynamic loading not supported")

    with monkeypatch.context() as m:
        m.setattr("ctypes.CDLL", no_loader)
        assert in_a_thread(short_slice.answer_promptly) is False
        assert in_a_thread(short_slice.slice_of_this_thread) is None
