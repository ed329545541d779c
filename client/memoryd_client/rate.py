"""Items per second over a sliding window, and the time left at that rate.

Shared by memctl's progress display and the daemon's embedding status (a leaf: stdlib only).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 10.0  # the rate of the last seconds, not since the start


class Rate:
    """Feed it a growing count (``add(done)``); a count that shrinks starts over."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.samples: deque[tuple[float, int]] = deque()

    def add(self, done: int) -> None:
        now = self.clock()
        if self.samples and done < self.samples[-1][1]:
            self.samples.clear()
        self.samples.append((now, done))
        while len(self.samples) > 2 and now - self.samples[0][0] > WINDOW_S:
            self.samples.popleft()

    def per_second(self) -> float | None:
        """None until two counts apart, or when nothing moved for a whole window."""
        if len(self.samples) < 2 or self.clock() - self.samples[-1][0] > WINDOW_S:
            return None
        (t0, d0), (t1, d1) = self.samples[0], self.samples[-1]
        return (d1 - d0) / (t1 - t0) if t1 > t0 and d1 > d0 else None

    def eta_s(self, left: int) -> float | None:
        """Seconds for ``left`` more items at the current rate."""
        rate = self.per_second()
        return None if rate is None or left <= 0 else left / rate


def clock_text(seconds: float) -> str:
    s = int(seconds + 0.5)
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"
