"""Duplicate appends: a line already in that day's note or MEMORY.md is not written again."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
from pathlib import Path

from daemon_util import DaemonThread
from mcp_util import daemon_with, make_workspace, stdio_session, text_of
from memoryd.files.append import Appender
from memoryd_client import MemoryClient, cli

DAY = dt.date(2025, 3, 12)
DAILY = "memory/2025-03-12.md"


def test_the_same_line_normalised_is_not_written_twice(tmp_path: Path) -> None:
    appender = Appender()
    first = appender.append(tmp_path, "- The deploy target is fly.io.", DAY)
    data = (tmp_path / DAILY).read_bytes()
    for again in (
        "- The deploy target is fly.io.",
        "*   the DEPLOY target is   fly.io. <!-- importance: 7 -->",
        "1. The deploy target is fly.io.",
    ):
        res = appender.append(tmp_path, again, DAY)
        assert res.duplicate and res.bytes == 0
        assert (res.path, res.start_line) == (DAILY, first.start_line)
        assert res.to_dict()["existing"] == {"path": DAILY, "line": first.start_line}
    assert (tmp_path / DAILY).read_bytes() == data


def test_a_line_in_memory_md_is_a_duplicate_too_and_a_new_day_file_is_not_left_empty(
    tmp_path: Path,
) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n\n- Dana owns the billing service.\n")
    res = Appender().append(tmp_path, "Dana owns the billing service.", DAY)
    assert res.duplicate and (res.path, res.start_line) == ("MEMORY.md", 3)
    assert not (tmp_path / DAILY).exists()


def test_of_a_block_only_the_lines_already_there_are_dropped(tmp_path: Path) -> None:
    appender = Appender()
    appender.append(tmp_path, "- Old fact.", DAY)
    res = appender.append(tmp_path, "- Old fact.\n- New fact.\n- New fact.", DAY)
    assert not res.duplicate and len(res.dropped) == 2
    assert (tmp_path / DAILY).read_text() == "- Old fact.\n\n- New fact.\n"


def test_a_line_removed_by_hand_can_be_appended_again(tmp_path: Path) -> None:
    appender = Appender()
    appender.append(tmp_path, "- Keep me.\n- Drop me.", DAY)
    assert appender.append(tmp_path, "- Drop me.", DAY).duplicate  # cached keys
    path = tmp_path / DAILY
    path.write_text(path.read_text().replace("- Drop me.\n", "- Dropped me, longer now.\n"))
    res = appender.append(tmp_path, "- Drop me.", DAY)
    assert not res.duplicate and path.read_text().endswith("\n\n- Drop me.\n")


def test_memctl_append_says_already_there(md_home: Path) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("- The user prefers tabs.\n")
    with DaemonThread(md_home, {"workspaces": [{"path": str(ws), "name": "ws"}]}) as d:
        out = io.StringIO()
        code = cli.main(
            ["append", "-w", "ws", "the user prefers TABS.", "--socket", str(d.socket_path)],
            stdout=out,
            stderr=io.StringIO(),
        )
        assert code == 0 and out.getvalue() == "already there: MEMORY.md:1 (nothing written)\n"
        with MemoryClient(d.socket_path) as c:
            res = c.append("- The user prefers tabs.", workspace="ws")
        assert res.duplicate and res.raw["existing"] == {"path": "MEMORY.md", "line": 1}
    assert not list((ws / "memory").iterdir())


def test_mcp_memory_append_of_a_known_fact_says_it_is_already_there(md_home: Path) -> None:
    ws = make_workspace(md_home)

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            out = await s.call_tool("memory_append", {"text": "The user prefers tabs over spaces."})
            assert not out.isError and out.structuredContent is not None
            assert out.structuredContent["duplicate"] is True
            assert out.structuredContent["path"] == "MEMORY.md"
            assert "nothing written" in text_of(out)

    with daemon_with(md_home, ws):
        asyncio.run(main())
    assert not list((ws / "memory").glob("2*.md")) or all(
        "tabs" not in p.read_text() for p in (ws / "memory").glob("2*.md")
    )
