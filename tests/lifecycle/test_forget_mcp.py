"""memory_forget over MCP: a dry run unless confirm, a destructive tool by its annotations,
and confined to the workspace of ``memctl mcp -w`` like every other tool."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp_util import daemon_with, make_workspace, stdio_session, text_of


def test_memory_forget_lists_first_and_removes_only_with_confirm(md_home: Path) -> None:
    ws = make_workspace(md_home)
    daily = ws / "memory" / "2025-03-01.md"
    before = daily.read_text()

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            hints = tools["memory_forget"].annotations
            assert hints is not None
            assert hints.destructiveHint is True and hints.readOnlyHint is False
            assert "confirm" in (tools["memory_forget"].inputSchema["properties"])

            args = {"path": "memory/2025-03-01.md", "lines": "3"}
            preview = await s.call_tool("memory_forget", args)
            assert not preview.isError, text_of(preview)
            data = preview.structuredContent
            assert data is not None and data["dryRun"] is True
            assert data["removed"][0]["path"] == "memory/2025-03-01.md"
            assert "invoices immutable" in data["removed"][0]["text"]
            assert "confirm: true" in text_of(preview) and "Would forget" in text_of(preview)
            assert daily.read_text() == before  # nothing went

            found = await s.call_tool("memory_search", {"query": "billing invoices immutable"})
            assert (found.structuredContent or {})["results"]

            done = await s.call_tool("memory_forget", {**args, "confirm": True})
            assert not done.isError, text_of(done)
            assert (done.structuredContent or {})["dryRun"] is False
            assert "Forgot memory/2025-03-01.md:3" in text_of(done)
            assert "invoices immutable" not in daily.read_text()
            gone = await s.call_tool("memory_search", {"query": "billing invoices immutable"})
            assert (gone.structuredContent or {})["results"] == []

            q = await s.call_tool("memory_forget", {"query": "tabs over spaces"})
            assert (q.structuredContent or {})["dryRun"] is True
            assert "tabs over spaces" in text_of(q)
            assert "tabs over spaces" in (ws / "MEMORY.md").read_text()

    with daemon_with(md_home, ws):
        asyncio.run(main())


def test_memory_forget_bad_arguments_are_tool_errors(md_home: Path) -> None:
    ws = make_workspace(md_home)

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            none = await s.call_tool("memory_forget", {})
            assert none.isError and "exactly one of" in text_of(none)
            two = await s.call_tool("memory_forget", {"query": "tabs", "sessionId": "s-1"})
            assert two.isError and "exactly one of" in text_of(two)
            alone = await s.call_tool("memory_forget", {"path": "MEMORY.md"})
            assert alone.isError and "lines" in text_of(alone)
            word = await s.call_tool("memory_forget", {"query": "tabs", "confirm": "yes"})
            assert word.isError and "argument confirm" in text_of(word)
            assert "tabs over spaces" in (ws / "MEMORY.md").read_text()

    with daemon_with(md_home, ws):
        asyncio.run(main())


def test_memory_forget_respects_the_confinement_of_mcp_w(md_home: Path) -> None:
    a, b = make_workspace(md_home, "alpha"), make_workspace(md_home, "beta")
    b_memory = (b / "MEMORY.md").read_text()

    async def main() -> None:
        async with stdio_session(md_home, md_home, "-w", "alpha") as s:
            for other in ("beta", str(b)):
                out = await s.call_tool(
                    "memory_forget",
                    {"query": "tabs over spaces", "workspace": other, "confirm": True},
                )
                assert out.isError and "serves workspace alpha only" in text_of(out)
            own = await s.call_tool(
                "memory_forget", {"path": "MEMORY.md", "lines": "3", "confirm": True}
            )
            assert not own.isError, text_of(own)

    with daemon_with(md_home, a, b):
        asyncio.run(main())
    assert (b / "MEMORY.md").read_text() == b_memory
    assert "tabs" not in (a / "MEMORY.md").read_text()
