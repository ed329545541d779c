"""Shared fixtures. Test helpers live in tests/fakes (importable as ``fakes``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

from fakes.openai_server import FakeOpenAIServer

# Tests never assert on timings, and Hypothesis's deadline and too_slow check are timings: a
# busy machine (CI, parallel workers) failed them on input generation alone.
settings.register_profile("memoryd", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memoryd")

# memctl's hooks, `memctl mcp` and `memctl setup` start a daemon when none runs; in tests that
# would leave daemons behind. The tests of that start one on purpose (and stop it).
os.environ["MEMCTL_NO_AUTOSTART"] = "1"


def pytest_configure(config: pytest.Config) -> None:
    # In-process daemons log JSON from their own threads: never among the progress dots.
    from log_sink import CapturedStderr, log_to_the_tests_stderr

    CapturedStderr.capturing = config.option.capture != "no"
    log_to_the_tests_stderr()


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible server on 127.0.0.1 (embeddings and chat), stopped after."""
    with FakeOpenAIServer() as server:
        yield server


# --- client library / memctl fixtures -------------------------------------------------


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh directory with a short path under /tmp: Unix socket paths are ~104 bytes max."""
    import shutil
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="md-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_memoryd(short_tmp: Path) -> Iterator[FakeMemoryd]:
    """A scripted memoryd (tests/fakes/memoryd_server.py) listening on ``short_tmp/d.sock``."""
    from fakes.memoryd_server import FakeMemoryd

    with FakeMemoryd(short_tmp / "d.sock") as fake:
        yield fake


if TYPE_CHECKING:
    from pathlib import Path

    from fakes.memoryd_server import FakeMemoryd


# --- daemon fixtures (tests/daemon_util.py): a real daemon on a short /tmp socket -------


@pytest.fixture
def md_home() -> Iterator[Path]:
    """A short, private MEMORYD_HOME under /tmp (Unix socket paths are limited)."""
    from daemon_util import short_home

    with short_home() as home:
        yield home


@pytest.fixture
def md_daemon(md_home: Path) -> Iterator[DaemonThread]:
    """A running daemon (provider none, no workspace) in a background thread."""
    from daemon_util import DaemonThread

    with DaemonThread(md_home) as d:
        yield d


if TYPE_CHECKING:
    from daemon_util import DaemonThread


# --- engine fixtures: a real WorkspaceIndex on a tmp workspace ---------------------------


@pytest.fixture
def make_index(tmp_path: Path) -> Iterator[IndexFactory]:
    """``make_index(config_overrides, provider=None)`` -> an opened WorkspaceIndex over
    ``tmp_path / "ws"``; every index made is closed after the test."""
    from engine_util import IndexFactory

    factory = IndexFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.close_all()


if TYPE_CHECKING:
    from engine_util import IndexFactory


# --- fleet fixtures (tests/fleet_util.py): a real Postgres with pgvector ---------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[ScratchPostgres]:
    """One Postgres for the session (each test gets a database of its own: fleet_dsn)."""
    from fleet_util import scratch_postgres

    yield from scratch_postgres()


@pytest.fixture
def fleet_dsn(pg_server: ScratchPostgres) -> str:
    from fleet_util import new_database

    return new_database(pg_server)


if TYPE_CHECKING:
    from scratch_postgres import ScratchPostgres


@pytest.fixture(scope="session")
def client_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a fresh venv with memoryd-client installed from its wheel, as a user
    installs it (tests/client_wheel.py): memctl there runs nothing of the checkout."""
    from client_wheel import fresh_venv

    return fresh_venv(tmp_path_factory.mktemp("client-wheel"))
