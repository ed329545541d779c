"""Secrets in every field that reaches the disk are redacted (issue 34 item 5: the heading
and the session id, through memctl, the wire and MCP), and ``status`` masks what memory
files said as search, get and recall do (item 6). Real daemon, real files: the workspace,
the index, an export and the state are read back byte for byte."""

from __future__ import annotations

import asyncio
import gzip
import tarfile
from pathlib import Path

from daemon_util import DaemonThread, memctl, wait_for
from mcp_util import stdio_session
from memoryd_client import MemoryClient

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"


def _holding(folder: Path, secret: str) -> list[str]:
    """The files under ``folder`` holding ``secret`` (gzip members read unpacked)."""
    found = []
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if secret.encode() in data:
            found.append(str(path.relative_to(folder)))
    return found


def test_a_secret_in_the_heading_or_the_session_id_never_reaches_the_disk(
    md_home: Path,
) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    with DaemonThread(md_home) as d:
        with MemoryClient(d.socket_path) as c:
            c.workspace_add(ws, "ws", wait=True)
            out = c.append(
                "- The release checklist lives in docs/release.md.",
                workspace="ws",
                date="2026-03-02",
                heading=f"Deploy with {GITHUB}",
                session_id=f"s-{GITHUB}",
            )
            assert out.redacted == ["github_token"]
        code, _, err = memctl(
            d,
            "append",
            "- Staging moved to the new cluster.",
            "-w",
            "ws",
            "--date",
            "2026-03-02",
            "--heading",
            f"Staging {SLACK}",
            "--session-id",
            SLACK,
        )
        assert code == 0, err

        async def by_mcp() -> None:
            async with stdio_session(md_home, ws) as s:
                args = {
                    "text": "- Backups run nightly.",
                    "heading": f"Ops {GITHUB}",
                    "sessionId": f"mcp-{GITHUB}",
                    "date": "2026-03-03",
                }
                done = await s.call_tool("memory_append", args)
                assert not done.isError, done

        asyncio.run(by_mcp())
        with MemoryClient(d.socket_path) as c:
            c.observe(f"o-{GITHUB}", "read", tool="WebFetch", what=f"https://x/?t={SLACK}")
            c.reindex(workspace="ws", wait=True)
            exported = Path(c.export(workspace="ws").path)
            with tarfile.open(exported) as tar:
                members = [tar.extractfile(m) for m in tar.getmembers() if m.isfile()]
                blob = b"".join(m.read() for m in members if m is not None)
    daily = (ws / "memory" / "2026-03-02.md").read_text()
    assert "## Deploy with [REDACTED:github_token]" in daily
    assert "[REDACTED:" in (ws / "memory" / ".provenance.jsonl").read_text()
    for secret in (GITHUB, SLACK):
        assert secret.encode() not in blob
        assert _holding(ws, secret) == []  # the markdown, the ledger, the exports
        assert _holding(md_home / "data", secret) == []  # the index
        assert _holding(md_home / "state", secret) == []  # the state database, the logs


def test_status_masks_a_hand_written_secret_it_shows(md_home: Path) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(f"# Memory\n\n- The deploy token is {GITHUB} for now.\n")
    with DaemonThread(md_home) as d, MemoryClient(d.socket_path) as c:
        c.workspace_add(ws, "ws", wait=True)
        hits = c.search("deploy token", workspace="ws").results
        assert hits and GITHUB not in hits[0].snippet  # search masks it

        def counted() -> bool:
            status = c.status(workspace="ws").raw["workspaces"][0]
            return bool(status.get("line_hits"))

        assert wait_for(counted, timeout=10)
        shown = c.status(workspace="ws").raw
        code, out, _ = memctl(d, "status", "--json")
    assert code == 0
    assert "[REDACTED:github_token]" in str(shown["workspaces"][0]["line_hits"])
    assert GITHUB not in str(shown) and GITHUB not in out
