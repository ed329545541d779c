"""Background loops step aside while a quick request is being answered, never for long."""

from __future__ import annotations

import gc
import threading

from memoryd.runtime.foreground import (
    HELD_COLLECTIONS_MAX,
    PAUSE_S,
    QUIET_S,
    SLICE_S,
    Foreground,
    Share,
)


def test_step_aside_waits_for_the_request_and_returns_when_it_ends() -> None:
    fg = Foreground()
    fg.step_aside(most=5.0)  # nothing in flight: returns at once
    fg.begin()
    fg.begin()
    fg.end()
    assert fg.busy
    done = threading.Event()

    def background() -> None:
        fg.step_aside(most=30.0)
        done.set()

    t = threading.Thread(target=background)
    t.start()
    assert not done.wait(0.05)  # still stepping aside: one request is in flight
    fg.end()
    assert done.wait(5.0)
    t.join()
    assert not fg.busy


def test_a_request_waiting_for_background_work_lets_it_go_on() -> None:
    fg = Foreground()
    fg.begin()  # a search, which now waits for the sync of the file it needs
    done = threading.Event()

    def background() -> None:
        fg.step_aside(most=30.0)
        done.set()

    t = threading.Thread(target=background)
    t.start()
    with fg.aside():
        assert not fg.busy
        assert done.wait(5.0)  # released by the request setting itself aside
        t.join()
    assert fg.busy  # in flight again until it ends
    fg.end()
    assert not fg.busy


def test_a_request_set_aside_beside_another_keeps_that_one_in_flight() -> None:
    fg = Foreground(hold_collections=True)
    gc_was = gc.isenabled()
    try:
        gc.enable()
        fg.begin()
        fg.begin()
        with fg.aside():
            assert fg.busy and not gc.isenabled()  # the other one still holds both
        fg.end()
        with fg.aside():
            assert not fg.busy and gc.isenabled()  # nobody in flight: collections run
        assert fg.busy and not gc.isenabled()
        fg.end()
        assert gc.isenabled()
    finally:
        if not gc_was:
            gc.disable()


def test_step_aside_is_bounded_under_a_stream_of_requests() -> None:
    fg = Foreground()
    fg.begin()  # never ends
    fg.step_aside(most=0.01)  # returns: it gives up waiting (or the test would hang)
    assert fg.busy


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self.late = 0.0  # a sleep returns this much after its time (a loaded machine)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds + self.late


def test_a_share_gives_the_lock_up_once_a_slice_of_work_went_by() -> None:
    clock = _Clock()
    share = Share(Foreground(), clock=clock, sleep=clock.sleep)
    share.tick()  # no work yet: goes on
    clock.now += SLICE_S / 2
    share.tick()
    assert clock.slept == []
    clock.now += SLICE_S / 2
    share.tick()  # a slice's work: a pause, the lock released
    assert clock.slept == [PAUSE_S]
    share.tick()  # the slice counts again from the pause
    assert clock.slept == [PAUSE_S]


def test_a_share_steps_aside_for_a_request_in_flight() -> None:
    clock = _Clock()
    fg = Foreground()
    share = Share(fg, clock=clock, sleep=clock.sleep)
    fg.begin()  # a request in flight: the tick waits for it (bounded), without a pause
    share.tick()
    assert clock.slept == []
    fg.end()
    clock.now += SLICE_S  # the slice counts from the step aside
    share.tick()
    assert clock.slept == [PAUSE_S]


def test_a_share_pauses_only_while_requests_keep_coming() -> None:
    clock = _Clock()
    fg = Foreground()
    share = Share(fg, clock=clock, sleep=clock.sleep)
    clock.now += QUIET_S + SLICE_S  # no request since the share began: nobody waits
    share.tick()
    clock.now += SLICE_S
    share.tick()
    assert clock.slept == []
    fg.begin()
    fg.end()  # a request came and went: more may follow
    clock.now += SLICE_S
    share.tick()
    assert clock.slept == [PAUSE_S]


def test_a_bounded_share_s_slice_is_twice_its_last_pause_as_it_went() -> None:
    """A pause that took 1 ms (a loaded machine) gives the next 2 ms of work no pause: at
    most a third of the time goes to pauses. A plain share keeps its slice."""
    for bounded, paused in ((True, [PAUSE_S]), (False, [PAUSE_S, PAUSE_S])):
        clock = _Clock()
        fg = Foreground()
        share = Share(fg, clock=clock, sleep=clock.sleep, bounded=bounded)
        fg.begin()
        fg.end()  # requests are coming
        clock.now += SLICE_S
        clock.late = 0.001 - PAUSE_S  # the sleep returns 1 ms later
        share.tick()
        clock.late = 0.0
        clock.now += SLICE_S
        share.tick()
        assert clock.slept == paused
    clock = _Clock()
    share = Share(fg, clock=clock, sleep=clock.sleep, bounded=True)
    fg.begin()
    fg.end()
    clock.late, clock.now = 0.001 - PAUSE_S, clock.now + SLICE_S
    share.tick()  # a 1 ms pause: the next 2 ms of work without one
    clock.late, clock.now = 0.0, clock.now + 0.002
    share.tick()  # a quick pause: back to slices of about SLICE_S, not 2 ms
    clock.now += 1.5 * SLICE_S
    share.tick()
    assert clock.slept == [PAUSE_S] * 3


def test_collections_wait_until_the_requests_in_flight_are_answered() -> None:
    fg = Foreground(hold_collections=True)
    assert gc.isenabled()
    try:
        fg.begin()
        assert not gc.isenabled()  # none starts inside the request
        fg.begin()
        fg.end()
        assert not gc.isenabled()  # one is still in flight
        fg.end()
        assert gc.isenabled()  # the ones due run from the next allocation on
    finally:
        gc.enable()


def test_collections_turned_off_elsewhere_stay_off_and_a_plain_foreground_never_touches_them() -> (
    None
):
    try:
        gc.disable()  # e.g. the daemon's start (runtime/heap.pause_collection)
        held = Foreground(hold_collections=True)
        held.begin()
        held.end()
        assert not gc.isenabled()
        gc.enable()
        plain = Foreground()
        plain.begin()
        assert gc.isenabled()
        plain.end()
    finally:
        gc.enable()


def test_requests_overlapping_for_long_let_the_collections_run() -> None:
    fg = Foreground(hold_collections=True)
    try:
        fg.begin()
        kept = [[i] for i in range(HELD_COLLECTIONS_MAX * gc.get_threshold()[0] + 100)]
        assert not gc.isenabled()
        fg.begin()  # another request while the first is in flight, past the bound
        assert gc.isenabled()
        fg.end()
        fg.end()
        assert gc.isenabled() and len(kept) > 0
    finally:
        gc.enable()
