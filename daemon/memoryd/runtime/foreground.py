"""Requests being answered now, and the background threads that step aside for them.

The daemon's threads share one interpreter lock (the GIL). A thread that computes in Python
(a restart's scan stat-ing 27k files, hit counting's batch) keeps it until the interpreter
takes it away, at the switch interval, and takes it back each time the event loop waits on
its socket: a search paid that interval several times over (issue 38: keyword p50 x5.4
while a restart's scan ran). So:

- the interval is 1 ms instead of Python's 5 (``configure``): a thread that wants the lock
  waits at most that long for one that computes;
- a quick request marks itself (``begin``/``end``, the event loop's thread only) and the
  background loops call ``step_aside`` between two pieces of work: while one is being
  answered they wait, the lock released, until it is (at most ``MAX_WAIT_S`` each time, so a
  stream of requests slows the background work but never stops it).
"""

from __future__ import annotations

import sys
import threading
from typing import Final

SWITCH_INTERVAL_S: Final = 0.001
MAX_WAIT_S: Final = 0.002


class Foreground:
    def __init__(self) -> None:
        self._busy = 0
        # Only a background thread about to wait touches the event (cleared under the lock,
        # set by the request that ends last while one waits): a request costs two integer
        # updates, not an Event's Condition twice.
        self._lock = threading.Lock()
        self._waiting = 0
        self._idle = threading.Event()
        self._idle.set()

    def begin(self) -> None:
        """A quick request started (called on the event loop's thread)."""
        self._busy += 1

    def end(self) -> None:
        self._busy -= 1
        if self._busy == 0 and self._waiting:
            with self._lock:
                if self._busy == 0 and self._waiting:
                    self._idle.set()

    @property
    def busy(self) -> bool:
        return self._busy > 0

    def step_aside(self, most: float = MAX_WAIT_S) -> None:
        """Between two pieces of background work: while a quick request is being answered,
        wait (the GIL released) until it is, at most ``most`` seconds."""
        if not self._busy:
            return
        with self._lock:
            # Counted before busy is read again: a request that ends meanwhile either ended
            # before this (busy is 0 here) or sees a waiter and sets the event.
            self._waiting += 1
            busy = self._busy > 0
            if busy:
                self._idle.clear()
        try:
            if busy:
                self._idle.wait(most)
        finally:
            with self._lock:
                self._waiting -= 1


FOREGROUND = Foreground()


def configure() -> None:
    """The daemon's switch interval (see above); a process that is not the daemon keeps
    Python's."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
