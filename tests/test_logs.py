"""Daemon logs: JSON lines off a TTY, console on one, secrets never written."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator

import pytest

from memoryd.runtime.logs import configure_logging, get_logger


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def restore_logging() -> Iterator[None]:
    yield
    configure_logging("info", json=True)  # what tests/daemon_util.py sets


def test_json_lines_when_not_a_tty_with_secrets_masked(restore_logging: None) -> None:
    out = io.StringIO()
    configure_logging("info", stream=out)
    log = get_logger("memoryd.test")
    log.info("request", method="search", ms=1.5, api_key="sk-live-1234567890abcdef")
    log.error("config_error", error="unknown config key embedding.api_kye "
                                    "(value 'sk-proj-abcdefghijklmnop')")
    log.debug("hidden")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["event"] for e in lines] == ["request", "config_error"]
    assert lines[0]["component"] == "memoryd.test" and lines[0]["method"] == "search"
    assert lines[0]["api_key"] == "***"
    assert "abcdefghijklmnop" not in out.getvalue() and "1234567890" not in out.getvalue()


def test_console_format_on_a_tty(restore_logging: None) -> None:
    out = Tty()
    configure_logging("debug", stream=out)
    get_logger("memoryd.test").debug("hello", n=1)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())  # colours on a TTY
    assert "hello" in text and "n=1" in text and "component=memoryd.test" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
