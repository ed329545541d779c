"""The sliding-window rate behind memctl's progress and the daemon's embedding status."""

from __future__ import annotations

from memoryd_client.rate import WINDOW_S, Rate, clock_text


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_is_measured_over_the_last_window_and_gives_the_time_left() -> None:
    clock = Clock()
    rate = Rate(clock)
    assert rate.per_second() is None  # one count is no rate
    rate.add(0)
    for _ in range(20):  # 10 per second for 20 s
        clock.now += 1
        rate.add(rate.samples[-1][1] + 10)
    assert rate.per_second() == 10.0
    for _ in range(int(WINDOW_S)):  # then 2 per second: the old pace has left the window
        clock.now += 1
        rate.add(rate.samples[-1][1] + 2)
    assert abs((rate.per_second() or 0) - 2.0) < 0.01
    assert rate.eta_s(60) == 30.0 and rate.eta_s(0) is None


def test_a_stalled_or_restarted_count_has_no_rate() -> None:
    clock = Clock()
    rate = Rate(clock)
    rate.add(0)
    clock.now += 1
    rate.add(5)
    assert rate.per_second() == 5.0
    clock.now += WINDOW_S + 1  # nothing for a whole window: not 5/s any more
    assert rate.per_second() is None
    rate.add(1)  # a smaller count: a new phase begins
    assert rate.per_second() is None and len(rate.samples) == 1


def test_clock_text() -> None:
    assert (clock_text(0), clock_text(59.6), clock_text(61), clock_text(3725)) == (
        "0:00",
        "1:00",
        "1:01",
        "1:02:05",
    )
