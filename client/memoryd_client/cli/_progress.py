"""Progress of long calls (``reindex``, ``jobs run``) on stderr: a bar with the rate and the
time left on a terminal, one JSON object per line otherwise (or with ``--json``), so an
agent or a log file gets the same facts in a form it can read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from memoryd_client.rate import Rate, clock_text
from memoryd_client.types import Progress

JSON_EVERY_S = 0.5  # at most two lines a second per phase, plus each phase's first and last


class ProgressBar:
    """A one-line bar on a terminal: phase, bar, done/total, rate and ETA."""

    WIDTH = 30

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.shown = False
        self.phase: str | None = None
        self.rate = Rate(clock)

    def __call__(self, progress: Progress) -> None:
        label = progress.phase or "working"
        if label != self.phase:
            self.phase, self.rate = label, Rate(self.clock)
        self.rate.add(progress.done)
        if progress.total:
            filled = min(self.WIDTH, self.WIDTH * progress.done // max(progress.total, 1))
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            line = f"{label:<12} [{bar}] {progress.done}/{progress.total}"
        else:
            line = f"{label:<12} {progress.done}"
        rate = self.rate.per_second()
        if rate is not None:
            line += f"  {rate:.1f}/s"
        eta = self.rate.eta_s((progress.total or 0) - progress.done)
        if eta is not None:
            line += f"  ETA {clock_text(eta)}"
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class JsonProgress:
    """``{"event": "progress", "phase", "done", "total", "rate", "eta_s"}`` lines, one only
    when the count moved: the daemon repeats an unchanged count every second (a heartbeat
    for the wait's timeout) while the model loads, which a log needs once."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.phase: str | None = None
        self.rate = Rate(clock)
        self.last_at = 0.0
        self.written: tuple[str | None, int, int | None] | None = None
        self.pending: Progress | None = None  # the newest event not written yet

    def __call__(self, progress: Progress) -> None:
        now = self.clock()
        new_phase = progress.phase != self.phase
        if new_phase:
            self.finish()  # the last count of the phase before, if held back
            self.phase, self.rate = progress.phase, Rate(self.clock)
        self.rate.add(progress.done)
        if (progress.phase, progress.done, progress.total) == self.written:
            return  # a heartbeat: nothing new to say
        last = progress.total is not None and progress.done >= progress.total
        if new_phase or last or now - self.last_at >= JSON_EVERY_S:
            self._write(progress)
            self.last_at = now
        else:
            self.pending = progress

    def _write(self, progress: Progress) -> None:
        import json  # here: a human command at a terminal never needs it

        rate = self.rate.per_second()
        eta = self.rate.eta_s((progress.total or 0) - progress.done)
        line = {
            "event": "progress",
            "phase": progress.phase,
            "done": progress.done,
            "total": progress.total,
            "rate": None if rate is None else round(rate, 2),
            "eta_s": None if eta is None else round(eta, 1),
        }
        self.stream.write(json.dumps(line) + "\n")
        self.stream.flush()
        self.written = (progress.phase, progress.done, progress.total)
        self.pending = None

    def finish(self) -> None:
        if self.pending is not None:
            self._write(self.pending)


def progress_reporter(stderr: TextIO, as_json: bool) -> ProgressBar | JsonProgress:
    """A bar for a person at a terminal, JSON lines for everyone else."""
    if stderr.isatty() and not as_json:
        return ProgressBar(stderr)
    return JsonProgress(stderr)
