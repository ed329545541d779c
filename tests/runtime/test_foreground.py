"""Background loops step aside while a quick request is being answered, never for long."""

from __future__ import annotations

import threading

from memoryd.runtime.foreground import PAUSE_S, QUIET_S, SLICE_S, Foreground, Share


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


def test_step_aside_is_bounded_under_a_stream_of_requests() -> None:
    fg = Foreground()
    fg.begin()  # never ends
    fg.step_aside(most=0.01)  # returns: it gives up waiting (or the test would hang)
    assert fg.busy


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


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
