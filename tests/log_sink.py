"""Where the daemons the tests run in process write their JSON log lines.

They log from their own threads, at any moment. While pytest captures a test's output the
lines go to the current ``sys.stderr`` (shown with a failing test, read by ``capsys``). Between
a test's phases pytest suspends its capture and ``sys.stderr`` is the terminal again: a line
logged then (a watcher's late event, a request finishing) landed among the progress dots.
Those lines are dropped. With ``-s`` (no capture at all), and outside pytest (the benches),
every line shows.
"""

from __future__ import annotations

import io
import sys

from memoryd.runtime.logs import configure_logging


class CapturedStderr(io.TextIOBase):
    capturing = False  # conftest.py: True under pytest, unless ``-s``

    def write(self, text: str) -> int:
        stream = sys.stderr
        if stream is sys.__stderr__ and self.capturing:
            return len(text)  # pytest's capture is suspended: this is the terminal
        return stream.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


SINK = CapturedStderr()


def log_to_the_tests_stderr() -> None:
    """The logging every test process runs with (info: capture_logs must see info events)."""
    configure_logging("info", json=True, stream=SINK)
