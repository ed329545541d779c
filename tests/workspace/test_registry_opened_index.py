"""Registry.opened_index: an opened workspace's index without awaits (a search's first step,
workspace/search_service.py), by the same rule as index_of."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memoryd.errors import Unavailable
from memoryd.runtime.config import config_from_mapping
from memoryd.runtime.state import StateDB
from memoryd.workspace.registry import Registry


def test_an_index_is_given_once_opened_none_before_and_unavailable_when_it_could_not_be(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "gone").mkdir()
    config = config_from_mapping(
        {
            "workspaces": [{"path": str(tmp_path / "notes")}, {"path": str(tmp_path / "gone")}],
            "embedding": {"provider": "none"},
        }
    )
    state = StateDB(tmp_path / "state.sqlite")
    (tmp_path / "index").mkdir()

    async def run() -> None:
        registry = Registry(config, tmp_path / "index", state)
        registry.load()
        ws, index = registry.opened_index("notes")
        assert ws.name == "notes" and index is None  # still opening: index_of waits
        (tmp_path / "gone").rmdir()  # its index cannot be opened
        waiting = asyncio.ensure_future(registry.index_of("notes"))
        await asyncio.sleep(0)
        assert not waiting.done()
        await registry.open_all()
        try:
            ws, index = registry.opened_index("notes")
            assert index is not None and index is ws.index
            assert await waiting == (ws, index) == await registry.index_of(str(tmp_path / "notes"))
            for ask in (registry.opened_index, registry.index_of):
                with pytest.raises(Unavailable, match="workspace gone is not available"):
                    got = ask("gone")
                    if asyncio.iscoroutine(got):
                        await got
        finally:
            await registry.close()

    try:
        asyncio.run(run())
    finally:
        state.close()
