"""Background loops step aside while a quick request is being answered, never for long."""

from __future__ import annotations

import threading

from memoryd.runtime.foreground import Foreground


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
