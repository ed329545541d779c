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
  stream of requests slows the background work but never stops it);
- a background loop that computes in Python for milliseconds at a time (hit counting's
  batch) also gives the lock up for a moment every ``SLICE_S`` of its work (``Share``): a
  request the loop wakes for while that thread computes cannot mark itself before it holds
  the lock, so it would otherwise wait the whole switch interval (issue 38's tail: the 1%
  of searches that met hit counting's batch took 2-4x the others).
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Final

SWITCH_INTERVAL_S: Final = 0.001
MAX_WAIT_S: Final = 0.002
SLICE_S: Final = 0.0001  # a background thread's work between two chances for a request
PAUSE_S: Final = 0.00005  # the lock given up for this long (a waiting thread wakes in it)
QUIET_S: Final = 0.05  # no request begun for this long: no pauses (nobody is about to wait)
# Collections held while requests overlap without a pause: at most this many times the
# youngest generation's threshold of new objects, then they run (a bound, not a schedule).
HELD_COLLECTIONS_MAX: Final = 20


class Foreground:
    """``hold_collections``: no automatic garbage collection while a quick request is in
    flight; the ones it would have started run once it is answered (the daemon's instance).
    A young collection that lands in a search costs a few tenths of a millisecond, an older
    generation's 0.7-1.3 ms, once or twice in 450 searches (issue 38's tail): the same work,
    moved to after the answer, where nobody waits for it."""

    def __init__(self, *, hold_collections: bool = False) -> None:
        self._busy = 0
        self._holds_collections = hold_collections
        self._held = False  # this instance turned automatic collection off
        self.begun = 0  # quick requests begun so far (Share: are requests coming?)
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
        self.begun += 1
        if self._holds_collections:
            if self._busy == 1:
                if gc.isenabled():
                    gc.disable()
                    self._held = True
            elif self._held and gc.get_count()[0] > HELD_COLLECTIONS_MAX * gc.get_threshold()[0]:
                self._release()  # requests overlapping for long: collections run meanwhile

    def end(self) -> None:
        self._busy -= 1
        if self._busy == 0:
            if self._held:
                self._release()
            if self._waiting:
                with self._lock:
                    if self._busy == 0 and self._waiting:
                        self._idle.set()

    def _release(self) -> None:
        self._held = False
        gc.enable()  # what is due runs at the next allocation, after the answer

    @property
    def busy(self) -> bool:
        return self._busy > 0

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """A quick request (between its ``begin`` and ``end``) that waits for background
        work, a scan or the sync of a file it needs: not in flight meanwhile, or that work
        would step aside for the very request waiting for it."""
        self.end()
        try:
            yield
        finally:
            self.begin()

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


FOREGROUND = Foreground(hold_collections=True)


class Share:
    """A background thread's share of the interpreter lock: ``tick()`` between two small
    pieces of its work (a few tens of microseconds each). While a quick request is being
    answered it steps aside; otherwise, once ``SLICE_S`` of work went by since the last
    time, it sleeps ``PAUSE_S``, the lock released. Releasing the lock alone would not do:
    the releasing thread usually takes it back before a waiting one has woken. So a
    request arriving meanwhile waits about a slice for the lock, not a switch interval.
    A pause costs ~20 us of CPU here (the timer), so there is none while no request has
    begun for ``QUIET_S``: then nobody is about to wait.

    ``bounded``: the slice is at least twice the last pause as it really went (a sleep of
    50 us can take a millisecond on a loaded machine, before this thread has a core again):
    the work gives at most a third of its time away to pauses (a restart's scan under
    back-to-back searches took 2.5-3.7x as long with fixed slices)."""

    def __init__(
        self,
        foreground: Foreground = FOREGROUND,
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
        bounded: bool = False,
    ) -> None:
        self._fg = foreground
        self._clock = clock
        self._sleep = sleep
        self._since = self._asked = clock()
        self._begun = foreground.begun
        self._bounded = bounded
        self._slice = SLICE_S

    def tick(self) -> None:
        fg = self._fg
        if fg.busy:  # this thread took the lock while a request waited on I/O: give it back
            fg.step_aside()
        else:
            now = self._clock()
            if now - self._since < self._slice:
                return
            if fg.begun != self._begun:
                self._begun, self._asked = fg.begun, now
            elif now - self._asked > QUIET_S:  # nobody is about to wait
                self._since = now
                return
            self._sleep(PAUSE_S)
            if self._bounded:
                self._slice = max(SLICE_S, 2 * (self._clock() - now))
            fg.step_aside()  # a request that took the lock meanwhile
        self._since = self._clock()


def configure() -> None:
    """The daemon's switch interval (see above); a process that is not the daemon keeps
    Python's."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
