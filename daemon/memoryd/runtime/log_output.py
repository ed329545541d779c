"""How log lines are written: structlog's processors and renderers (runtime/logs.py sets
them up, at once or once a start has answered its first question).

JSON lines when stderr is not a TTY, console output on one. Under systemd (stderr is the
stream that ``$JOURNAL_STREAM`` names) each line starts with its syslog priority, ``<4>``
for a warning, which journald strips and records, so ``journalctl -p warning`` filters.
Keys that look like secrets are masked whatever logs them, so an API key cannot reach a log
by accident. A warning or error repeated many times a second (a failing accept loop, a
flood of refused connections) is written a few times per window, then counted, never
written 70,000 times.
"""

from __future__ import annotations

import datetime
import functools
import io
import json as _json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import Any, Final, TextIO

import structlog

from memoryd.runtime.log_names import LOGGED_AT
from memoryd.secrets import mask

_SECRET_KEY = re.compile(
    r"(api_?key|token|secret|password|passwd|authorization|credential)", re.IGNORECASE
)
# Key-shaped values inside messages (e.g. a config error quoting a misspelt api_kye's value).
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_-]{6})[A-Za-z0-9_-]{6,}|(Bearer\s+)\S{8,}")

# Fields the processors before _redact wrote themselves: never a secret. (The timestamp, a
# long run with digits, sent every line through the secret detectors.)
_OURS: Final = frozenset({"timestamp", "level"})


class _StderrLogger:
    """Writes each rendered event to the *current* ``sys.stderr`` (tests swap it per test)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def msg(self, message: str) -> None:
        stream = self._stream or sys.stderr
        try:
            stream.write(message + "\n")
            stream.flush()
        except (OSError, ValueError):  # closed or broken stderr: never crash on logging
            pass

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


def _scrub(text: str) -> str:
    # Both alternatives of the pattern need one of these substrings; testing for them first
    # is far cheaper than a regex pass over every string of every event (one per request).
    if "sk-" in text or "Bearer" in text:
        text = _SECRET_VALUE.sub(lambda m: (m.group(1) or m.group(2)) + "***", text)
    return mask(text)  # any other secret a message quotes (memoryd/secrets.py)


@functools.lru_cache(maxsize=1024)
def _secret_key(key: str) -> bool:
    """Whether a key looks like it holds a secret (keys repeat: decided once per key)."""
    return key != "event" and _SECRET_KEY.search(key) is not None


def _redact(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key, value in event.items():
        if key in _OURS:
            continue
        if isinstance(value, str):
            if _secret_key(key) and value:
                event[key] = "***"
            else:
                event[key] = _scrub(value)
        elif value and _secret_key(key):
            event[key] = "***"
    return event


class RepeatLimiter:
    """Drops a warning or error line repeated more than ``burst`` times in ``window``
    seconds; the first line after the window says how many were dropped.

    Lines are the same when they differ only in volatile fields (time, pid, ms). Request
    lines carry their request id, so they are never taken for repeats.
    """

    VOLATILE: Final = frozenset({"timestamp", "peer_pid", "pid", "ms", LOGGED_AT})
    LEVELS: Final = frozenset({"warning", "error", "critical"})
    MAX_KEYS: Final = 4096

    def __init__(
        self, burst: int = 5, window: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.burst, self.window, self.clock = burst, window, clock
        self._seen: dict[str, list[float]] = {}  # key -> [window start, count, dropped]
        self._lock = threading.Lock()  # threads log too

    def __call__(
        self, _logger: Any, _name: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        if event.get("level") not in self.LEVELS:
            return event
        key = repr(sorted((k, repr(v)) for k, v in event.items() if k not in self.VOLATILE))
        now = self.clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or now - seen[0] > self.window:
                if seen is not None and seen[2]:
                    event["repeats_dropped"] = int(seen[2])
                if len(self._seen) >= self.MAX_KEYS:
                    self._seen.clear()
                self._seen[key] = [now, 1, 0]
                return event
            seen[1] += 1
            if seen[1] <= self.burst:
                return event
            seen[2] += 1
        raise structlog.DropEvent


def _timestamp(
    _logger: Any, _name: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog's ``TimeStamper(fmt="iso", utc=False)``, but a line held while a start
    answered its first question keeps the time it was logged (runtime/logs.py)."""
    at = event.pop(LOGGED_AT, None)
    event["timestamp"] = (at if at is not None else datetime.datetime.now()).isoformat()
    return event


def _json_default(obj: Any) -> Any:
    """What JSON cannot encode: its ``__structlog__()`` if it has one, else its repr."""
    as_log = getattr(obj, "__structlog__", None)
    return as_log() if callable(as_log) else repr(obj)


# One encoder for every line: json.dumps(default=...) would build a new one per call.
_ENCODER = _json.JSONEncoder(default=_json_default)


def _dumps(obj: Any, **_kw: Any) -> str:
    return _ENCODER.encode(obj)


# sd-daemon(3) priorities by structlog method name ("exception" logs at error level).
_PRIORITY: Final = {
    "debug": 7,
    "info": 6,
    "warning": 4,
    "warn": 4,
    "error": 3,
    "exception": 3,
    "critical": 2,
    "fatal": 2,
}


def _priority_prefix(_logger: Any, method: str, line: str) -> str:
    return f"<{_PRIORITY.get(method, 6)}>{line}"


def writes_to_journal(stream: TextIO, env: dict[str, str] | None = None) -> bool:
    """Whether ``stream`` is the journal stream systemd gave us (``JOURNAL_STREAM=dev:ino``;
    a child that inherited the variable but writes elsewhere must not prefix)."""
    value = (os.environ if env is None else env).get("JOURNAL_STREAM", "")
    try:
        dev, ino = (int(part) for part in value.split(":"))
        st = os.fstat(stream.fileno())
    except (ValueError, OSError, io.UnsupportedOperation):
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


def configure(level: str, json: bool | None, stream: TextIO | None) -> None:
    """Set up structlog for the process; ``json=None`` decides by ``isatty``."""
    out = stream or sys.stderr
    if json is None:
        json = not out.isatty()
    renderer: Any = (
        structlog.processors.JSONRenderer(_dumps)
        if json
        else structlog.dev.ConsoleRenderer(colors=out.isatty())
    )
    numeric = logging.getLevelNamesMapping()[level.upper()]
    # After the renderer: structlog passes its string on (its Processor type says a dict).
    journal: list[Any] = [_priority_prefix] if writes_to_journal(out) else []
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            RepeatLimiter(),
            _timestamp,
            structlog.processors.format_exc_info,
            _redact,  # after the traceback is text: a secret quoted in it is masked too
            renderer,
            *journal,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=lambda *_args: _StderrLogger(stream),
        cache_logger_on_first_use=False,
    )
