"""Daemon logs: JSON lines off a TTY, console on one, secrets never written."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from daemon_util import DaemonThread, RawConn, wait_for
from fakes.clock import FakeClock
from jobs_util import NOW
from log_sink import CapturedStderr, log_to_the_tests_stderr
from memoryd.runtime.logs import Logger, configure_logging, get_logger, release, release_soon


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def restore_logging() -> Iterator[None]:
    yield
    log_to_the_tests_stderr()  # what every test process runs with


def test_json_lines_when_not_a_tty_with_secrets_masked(restore_logging: None) -> None:
    out = io.StringIO()
    configure_logging("info", stream=out)
    log = get_logger("memoryd.test")
    log.info("request", method="search", ms=1.5, api_key="sk-live-1234567890abcdef")
    log.error(
        "config_error",
        error="unknown config key embedding.api_kye (value 'sk-proj-abcdefghijklmnop')",
    )
    log.debug("hidden")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["event"] for e in lines] == ["request", "config_error"]
    assert lines[0]["component"] == "memoryd.test" and lines[0]["method"] == "search"
    assert lines[0]["api_key"] == "***"
    assert "abcdefghijklmnop" not in out.getvalue() and "1234567890" not in out.getvalue()


def test_an_ordinary_line_never_loads_the_secret_detectors() -> None:
    """The timestamp (a long run with digits) is the log's own: it used to send every line,
    the first one at start among them, through detect-secrets' detectors."""
    script = (
        "import io\n"
        "from memoryd import secret_rules\n"
        "from memoryd.runtime.logs import configure_logging, get_logger\n"
        "configure_logging('info', stream=io.StringIO(), json=True)\n"
        "get_logger('memoryd.test').info('startup', socket='/run/memoryd.sock', pid=4242)\n"
        "print(secret_rules.detectors.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


def test_console_format_on_a_tty(restore_logging: None) -> None:
    out = Tty()
    configure_logging("debug", stream=out)
    get_logger("memoryd.test").debug("hello", n=1)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())  # colours on a TTY
    assert "hello" in text and "n=1" in text and "component=memoryd.test" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


# ---------------------------------------------------------------- under systemd


def test_under_systemd_each_line_starts_with_its_syslog_priority(
    restore_logging: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal"
    with open(path, "w") as stream:
        st = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        configure_logging("debug", stream=stream)
        log = get_logger("memoryd.test")
        log.debug("d")
        log.info("i")
        log.warning("w")
        log.error("e")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("x")
        log.critical("c")
    lines = path.read_text().splitlines()
    starts = [line[:3] for line in lines if line.startswith("<")]
    assert starts == ["<7>", "<6>", "<4>", "<3>", "<3>", "<2>"], lines
    assert json.loads(lines[1][3:])["event"] == "i"


def test_a_journal_stream_inherited_but_not_written_to_gets_no_prefix(
    restore_logging: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.write_text("")
    st = os.stat(other)
    monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
    with open(tmp_path / "log", "w") as stream:
        configure_logging("info", stream=stream)
        get_logger("memoryd.test").info("i")
    assert (tmp_path / "log").read_text().startswith("{")
    out = io.StringIO()  # no file descriptor at all
    configure_logging("info", stream=out)
    get_logger("memoryd.test").info("i")
    assert out.getvalue().startswith("{")


# ---------------------------------------------------------------- what is logged at info


def test_llm_jobs_without_an_llm_are_said_once_at_start_not_at_every_scheduled_skip(
    md_home: Path,
) -> None:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / "sessions").mkdir()
    clock = FakeClock(NOW)
    with (
        capture_logs() as logs,
        DaemonThread(
            md_home, {"workspaces": [{"path": str(ws), "name": "alice"}]}, clock=clock
        ) as d,
    ):

        def fallback_runs() -> int:  # finished ones: a slot while one runs is another skip
            with RawConn(d.socket_path) as conn:
                jobs = conn.result("jobs.list", {"history": 10})["jobs"]
            return sum(
                r["status"] != "running"
                for j in jobs
                if j["name"] == "fallback_summary"
                for r in j["history"]
            )

        for step in range(1, 4):  # three 15-minute slots of fallback_summary
            d.call_in_loop(clock.set, NOW + dt.timedelta(minutes=15 * step))
            assert wait_for(lambda s=step: fallback_runs() >= s, 10)  # type: ignore[misc]
        with RawConn(d.socket_path) as conn:  # recorded all the same, for `memctl jobs list`
            jobs = conn.result("jobs.list", {"history": 10})["jobs"]
        runs = [r for j in jobs if j["name"] == "fallback_summary" for r in j["history"]]
        assert {(r["status"], r["message"][:17]) for r in runs} == {
            ("skipped", "no LLM configured")
        }
    said = [e for e in logs if e["event"] == "llm_not_configured"]
    assert len(said) == 1, said
    assert said[0]["jobs"] == ["hippocampus", "fallback_summary"]
    assert "[llm]" in said[0]["reason"]
    skips = [e for e in logs if e["event"] == "job_run" and e.get("status") == "skipped"]
    assert skips == [], [e.get("message") for e in skips]


def test_a_warning_repeated_thousands_of_times_is_written_a_few_times_then_counted(
    restore_logging: None,
) -> None:
    """The accept loop out of file descriptors wrote 74,033 identical lines in 20 s."""
    out = io.StringIO()
    configure_logging("info", stream=out)
    log = get_logger("memoryd.test")
    for pid in range(10_000):
        log.error("asyncio_error", message="socket.accept() out of system resource", pid=pid)
        log.info("request", method="hello", id=pid, result="ok")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    errors = [e for e in lines if e["event"] == "asyncio_error"]
    assert 1 <= len(errors) <= 5
    assert sum(e["event"] == "request" for e in lines) == 10_000  # one line per request, always
    log.error("something_else")
    assert json.loads(out.getvalue().splitlines()[-1])["event"] == "something_else"


def test_the_line_after_the_window_says_how_many_repeats_were_dropped() -> None:
    import structlog

    from memoryd.runtime.log_output import RepeatLimiter

    now = [0.0]
    limiter = RepeatLimiter(burst=2, window=10.0, clock=lambda: now[0])
    written = []
    for _ in range(50):
        with contextlib.suppress(structlog.DropEvent):
            written.append(limiter(None, "warning", {"event": "x", "level": "warning"}))
    assert len(written) == 2
    now[0] = 11.0
    event = limiter(None, "warning", {"event": "x", "level": "warning"})
    assert event["repeats_dropped"] == 48


def test_a_daemon_line_logged_while_pytest_capture_is_suspended_never_reaches_the_terminal(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Between a test's phases pytest puts the terminal back as sys.stderr; a daemon thread
    # logging then wrote among the progress dots. capfd stands in for the terminal's fd 2.
    monkeypatch.setattr(CapturedStderr, "capturing", True)  # as under pytest without -s
    log_to_the_tests_stderr()
    log = get_logger("memoryd.test")
    log.info("while_captured")
    with monkeypatch.context() as m:
        m.setattr(sys, "stderr", sys.__stderr__)
        log.info("between_phases")
        sys.__stderr__.flush()
    err = capfd.readouterr().err
    assert '"event": "while_captured"' in err and "between_phases" not in err


# ---------------------------------------------------------------- held until the first answer


def _lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_held_lines_come_out_at_release_as_they_would_have_in_order(
    restore_logging: None,
) -> None:
    def log_some(log: Logger) -> None:
        log.info("opened", workspace="conv-26", ms=1.5, api_key="sk-live-1234567890abcdef")
        log.debug("not_at_info")
        log.info("second", n=2)

    twin = io.StringIO()
    configure_logging("info", json=True, stream=twin)
    log_some(get_logger("memoryd.test"))
    held = io.StringIO()
    configure_logging("info", json=True, stream=held, hold=True)
    log_some(get_logger("memoryd.test"))
    assert held.getvalue() == ""
    release()
    get_logger("memoryd.test").info("after")
    release()  # once
    lines, expected = _lines(held.getvalue()), _lines(twin.getvalue())
    assert [e["event"] for e in lines] == ["opened", "second", "after"]
    assert lines[0]["api_key"] == "***"
    for line, want in zip(lines, expected, strict=False):  # the same keys, in the same order
        assert list(line) == list(want)
        assert {k: v for k, v in line.items() if k != "timestamp"} == {
            k: v for k, v in want.items() if k != "timestamp"
        }
        dt.datetime.fromisoformat(str(line["timestamp"]))  # the time it was logged


def test_release_soon_masks_on_a_thread_of_its_own_while_the_caller_logs_on(
    restore_logging: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The daemon's release after its first answer: the secret detectors (a child process
    # on a first start) are made ready on another thread, and the event loop that called
    # it answers meanwhile; what it logs then is held and comes out after, in order.
    from memoryd import secrets

    ready, warming = threading.Event(), threading.Event()

    def slow_warm() -> None:
        warming.set()
        assert ready.wait(30)

    monkeypatch.setattr(secrets, "warm", slow_warm)
    out = io.StringIO()
    configure_logging("info", json=True, stream=out, hold=True)
    log = get_logger("memoryd.test")
    log.info("held", api_key="sk-live-1234567890abcdef")
    release_soon()
    assert warming.wait(30)
    log.info("meanwhile")  # not blocked: held behind the first
    warming.clear()
    release_soon()  # a start without a workspace asks twice: one thread, one warm
    assert out.getvalue() == ""
    ready.set()
    assert wait_for(lambda: len(out.getvalue().splitlines()) == 2, 30), out.getvalue()
    lines = _lines(out.getvalue())
    assert [e["event"] for e in lines] == ["held", "meanwhile"]
    assert lines[0]["api_key"] == "***"
    release_soon()  # nothing held: nothing to do
    log.info("after")
    assert [e["event"] for e in _lines(out.getvalue())][-1] == "after"
    assert not warming.is_set()  # the detectors were made ready once (a child process)


class _Gated(Logger):
    """A logger whose lines wait, at their writing, for ``gate`` (once ``reached`` says so)."""

    __slots__ = ("gate", "reached")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.gate, self.reached = threading.Event(), threading.Event()

    def bound(self) -> Any:
        if self._bound is None:
            self.reached.set()
            assert self.gate.wait(30)
        return super().bound()


@pytest.mark.parametrize("level", ["info", "warning"])
def test_a_line_logged_by_another_thread_while_the_held_ones_are_written_comes_after_them(
    restore_logging: None, level: str
) -> None:
    # release_soon writes the held lines from a lowered thread, which a loaded machine may
    # stop between two of them for long: what the event loop logs meanwhile (the startup
    # line) must not overtake the held lines still to be written, nor wait for them.
    out = io.StringIO()
    configure_logging("info", json=True, stream=out, hold=True)
    get_logger("memoryd.test").info("first")
    slow = _Gated("memoryd.test")
    slow.info("second")
    releasing = threading.Thread(target=release)
    releasing.start()
    other = threading.Thread(target=getattr(get_logger("memoryd.test"), level), args=("later",))
    try:
        assert slow.reached.wait(30)  # "first" written, "second" on its way
        other.start()
        if level == "info":  # held behind them: its thread (the event loop) never waits
            other.join(30)
            assert not other.is_alive() and out.getvalue().count("\n") == 1
        else:  # written on its thread once they are
            other.join(0.5)
    finally:
        slow.gate.set()
        releasing.join(30)
        if other.ident is not None:
            other.join(30)
    assert [e["event"] for e in _lines(out.getvalue())] == ["first", "second", "later"]


def test_a_warning_releases_the_hold_at_once_after_the_lines_held_before_it(
    restore_logging: None,
) -> None:
    out = io.StringIO()
    configure_logging("info", json=True, stream=out, hold=True)
    log = get_logger("memoryd.test")
    log.info("first")
    log.warning("trouble")
    log.info("then")
    assert [e["event"] for e in _lines(out.getvalue())] == ["first", "trouble", "then"]


def test_a_held_level_drops_what_its_level_drops(restore_logging: None) -> None:
    out = io.StringIO()
    configure_logging("warning", json=True, stream=out, hold=True)
    get_logger("memoryd.test").info("quiet")
    release()
    get_logger("memoryd.test").error("loud")
    assert [e["event"] for e in _lines(out.getvalue())] == ["loud"]


def test_holding_imports_no_structlog_until_the_release() -> None:
    script = (
        "import sys\n"
        "from memoryd.runtime.logs import configure_logging, get_logger, release\n"
        "configure_logging('info', json=True, hold=True)\n"
        "get_logger('memoryd.test').info('held', n=1)\n"
        "print('structlog' in sys.modules, flush=True)\n"
        "release()\n"
        "print('structlog' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]
    assert [e["event"] for e in _lines(out.stderr)] == ["held"]
