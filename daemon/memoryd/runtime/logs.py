"""Logging: structlog events, one JSON line each off a TTY (runtime/log_output.py writes
them: renderers, secrets masked, repeats counted, syslog priorities under systemd).

Every module asks ``get_logger(name)`` at import, before anything is configured. ``memoryd
run`` configures with ``hold=True``: its info and debug lines wait in a list until the
daemon has answered the question that started it (``release``, from the daemon), so that
structlog and the processors' imports (~0.1 G instructions) are not on that answer's path
(issue 38, spawn -> first answer). A held line keeps the time it was logged and comes out
as it would have, in order, before any later line; a warning or worse releases the hold at
once (it is never late), and so does the end of ``memoryd run``.
"""

from __future__ import annotations

import datetime
import threading
from typing import TYPE_CHECKING, Any, TextIO

from memoryd.runtime.log_names import LEVELS, LOGGED_AT

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

__all__ = [
    "LEVELS",
    "Logger",
    "configure_logging",
    "debug_enabled",
    "get_logger",
    "release",
    "release_soon",
]

_DEBUG = [True]  # whether debug lines are written (configure_logging sets it)


class _Hold:
    """The lines held until ``release``, and the set-up they wait for."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # threads log too; so may what release() imports
        # Held by release while it writes the held lines: a warning waits for them (written
        # on its own thread, its traceback read there), an info line joins them meanwhile.
        self.writing = threading.RLock()
        self.lines: list[tuple[Logger, str, str, dict[str, Any]]] | None = None
        self.setup: tuple[str, bool | None, TextIO | None] | None = None
        self.lowest = 0  # the lowest level written, as an index of LEVELS


_HOLD = _Hold()
_RELEASING: list[threading.Thread] = []  # release_soon's thread, once started


class Logger:
    """What ``get_logger`` gives: structlog's lazy logger (bound to ``component=name``) once
    logging is set up, the hold's list before."""

    __slots__ = ("_bound", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._bound: FilteringBoundLogger | None = None

    def bound(self) -> FilteringBoundLogger:
        bound = self._bound
        if bound is None:
            import structlog

            bound = self._bound = structlog.get_logger(component=self.name)
        return bound

    def _held(self, method: str, event: str, kw: dict[str, Any]) -> bool:
        with _HOLD.lock:
            if _HOLD.lines is None:
                return False
            if LEVELS.index(method) >= _HOLD.lowest:  # else structlog would drop it
                kw[LOGGED_AT] = datetime.datetime.now()
                _HOLD.lines.append((self, method, event, kw))
            return True

    def debug(self, event: str, **kw: Any) -> None:
        if _HOLD.lines is None or not self._held("debug", event, kw):
            self.bound().debug(event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        if _HOLD.lines is None or not self._held("info", event, kw):
            self.bound().info(event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        release()
        self.bound().warning(event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        release()
        self.bound().error(event, **kw)

    def exception(self, event: str, **kw: Any) -> None:
        release()
        self.bound().exception(event, **kw)

    def critical(self, event: str, **kw: Any) -> None:
        release()
        self.bound().critical(event, **kw)


def configure_logging(
    level: str = "info",
    *,
    json: bool | None = None,
    stream: TextIO | None = None,
    hold: bool = False,
) -> None:
    """Set up logging for the process; ``json=None`` decides by ``isatty``. ``hold``: the
    set-up and the info and debug lines wait for ``release``."""
    _DEBUG[0] = level.lower() == "debug"
    with _HOLD.lock:
        if hold:
            _HOLD.setup = (level, json, stream)
            _HOLD.lowest = LEVELS.index(level.lower())
            if _HOLD.lines is None:
                _HOLD.lines = []
            return
        _HOLD.setup, lines, _HOLD.lines = None, _HOLD.lines, None
    from memoryd.runtime import log_output

    log_output.configure(level, json, stream)
    _write(lines)


def release() -> None:
    """Set logging up as ``configure_logging(hold=True)`` asked and write the held lines,
    in order (once; a no-op when nothing is held)."""
    if _HOLD.lines is None:
        return
    with _HOLD.writing:  # released meanwhile by another thread: after its held lines
        if _HOLD.setup is None:  # released, or being released by this thread (in _write)
            return
        from memoryd.runtime import log_output

        log_output.configure(*_HOLD.setup)
        _HOLD.setup = None
        # The hold ends once its lines are written, not before: a line logged meanwhile
        # (the loop's, while release_soon's lowered thread is stopped between two held
        # lines on a loaded machine) joins them, in order, and its thread does not wait.
        try:
            while True:
                with _HOLD.lock:
                    lines, _HOLD.lines = _HOLD.lines, []
                    if not lines:
                        _HOLD.lines = None
                        return
                _write(lines)
        finally:  # a line that failed to write: later ones are not held for good
            _HOLD.lines = None


def release_soon() -> None:
    """``release`` from a thread of its own (lowered, runtime/priority.py), once that thread
    has done the slow part of writing the held lines: structlog's imports and the secret
    detectors that mask them (on a first start a child process reads them: 0.2-0.3 s at
    load 6 here, seconds at load 12). Done on the event loop, every answer waited for it
    (a status during a first index timed out at 10 s in CI). Lines logged meanwhile are
    held as before; a warning releases at once. Asked again while its thread runs (a start
    without a workspace asks at start and after its first answer): that thread writes
    them, and the detectors are not read twice (a child process each)."""
    if _HOLD.setup is None or any(t.is_alive() for t in _RELEASING):
        return

    def warm_then_release() -> None:
        from memoryd.runtime.priority import lower_this_thread  # it logs: imported here

        lower_this_thread()
        try:
            from memoryd import secrets
            from memoryd.runtime import log_output  # noqa: F401 (structlog's imports)

            secrets.warm()
        finally:  # failed: release() meets it again and says so, on this thread
            release()

    thread = threading.Thread(target=warm_then_release, name="memoryd-log-release", daemon=True)
    _RELEASING[:] = [thread]
    thread.start()


def _write(lines: list[tuple[Logger, str, str, dict[str, Any]]] | None) -> None:
    for logger, method, event, kw in lines or ():
        getattr(logger.bound(), method)(event, **kw)


def debug_enabled() -> bool:
    """Whether a debug line would be written: a hot path asks before it builds one (the
    event's fields, and the lazy logger's bind on every call, cost a search ~10 us)."""
    return _DEBUG[0]


def get_logger(name: str) -> Logger:
    """A logger carrying ``component=name`` on every event."""
    # Lazy: modules call this at import, before configure_logging() has run.
    return Logger(name)
