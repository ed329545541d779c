"""Fixtures the jobs tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine_util import IndexFactory
from fakes.openai_server import FakeOpenAIServer
from jobs_util import JobHarness, llm_config
from memoryd.index.workspace import WorkspaceIndex


@pytest.fixture
def index(make_index: IndexFactory) -> WorkspaceIndex:
    """An index of the workspace ``make_index`` writes, on the default settings."""
    return make_index()


@pytest.fixture
def llm_harness(
    make_index: IndexFactory, index: WorkspaceIndex, tmp_path: Path, openai_server: FakeOpenAIServer
) -> Iterator[JobHarness]:
    """A JobHarness over ``index``'s workspace, its LLM the fake OpenAI server; closed after."""
    h = JobHarness(
        make_index.ws,
        tmp_path / "state.sqlite",
        {"llm": llm_config(openai_server.base_url)},
        index=index,
    )
    yield h
    h.close()
