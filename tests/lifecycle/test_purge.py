"""``forget --purge`` reaches every copy: after it, no file under the workspace or the
daemon's home holds the words (markdown, earlier pre-images, hippocampus's backups and
reports, kept exports, index database and WAL, the keyword copy beside it, the state
database), nor the daemon's log or ``status``; what it cannot reach is named."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import word_grep
from daemon_util import DaemonThread, memctl
from fakes.clock import FakeClock
from memoryd.lifecycle.archive import write_archive
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(120)

NOW = dt.datetime(2025, 3, 12, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))
DAY = "memory/2025-03-11.md"
SECRET = "- The vault code is quetzal kumquat zeppelin. <!-- promote -->"
WORDS = (b"quetzal", b"kumquat", b"zeppelin")
SECOND = "- The alarm phrase is marmalade obelisk."
DAY_TEXT = (
    "# 2025-03-11\n\n"
    "- The deploy target is heroku.\n"
    f"{SECRET}\n"
    "- Dana owns the billing service.\n"
    f"{SECOND}\n"
)


def holders(*tops: Path, words: tuple[bytes, ...] = WORDS) -> list[str]:
    """Every file under ``tops`` whose bytes hold one of the words (any case)."""
    return word_grep.holders(*tops, words=words)


@pytest.fixture
def workspace(md_home: Path) -> Path:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tabs.\n")
    (ws / DAY).write_text(DAY_TEXT)
    return ws


@contextlib.contextmanager
def daemon_on(md_home: Path, workspace: Path) -> Iterator[DaemonThread]:
    config = {"workspaces": [{"path": str(workspace), "name": "ws"}]}
    with DaemonThread(md_home, config, clock=FakeClock(NOW)) as d:
        with MemoryClient(d.socket_path) as c:
            c.reindex(workspace="ws", wait=True)
        yield d


def test_purge_leaves_no_byte_of_the_line_under_the_workspace_or_the_home(
    workspace: Path,
    md_home: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    outside = tmp_path / "elsewhere" / "backup.tar.gz"
    outside.parent.mkdir()
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        # Every place a line is copied to in a normal life:
        for q in ("vault code", "quetzal kumquat", "zeppelin vault"):  # hit counts, samples
            c.search(q, workspace="ws", mode="keyword")
        assert daemon.daemon is not None and daemon.daemon.services.hits is not None
        assert daemon.daemon.services.hits.wait_idle()
        c.forget(workspace="ws", path=DAY, lines="3")  # a pre-image of the whole day
        src = tmp_path / "src"
        (src / "memory").mkdir(parents=True)
        (src / "memory" / "2025-03-01.md").write_text("- imported fact\n")
        archive = tmp_path / "a.tar.gz"
        write_archive(src, "src", archive)
        c.import_archive(archive, workspace="ws")  # no copy itself; a pre-image of nothing
        code, out, _ = memctl(daemon, "jobs", "run", "hippocampus", "-w", "ws", "--json")
        assert code == 0 and json.loads(out)["status"] == "ok", out  # promoted: a copy
        assert "quetzal" in (workspace / "MEMORY.md").read_text()
        c.forget(workspace="ws", path="MEMORY.md", lines="3")  # MEMORY.md's pre-image
        c.export(workspace="ws")  # kept under memory/.history/exports
        c.export(outside, workspace="ws")  # the person's copy elsewhere
        status = json.dumps(c.status(workspace="ws").workspaces[0].raw)
        assert "quetzal" in status  # line_hits' top line
    # A clean stop: the databases' WAL is checkpointed into their files, the keyword copy's
    # sidecar is written (its stems).
    held = holders(workspace, md_home)
    for copy in ("/index/", "state.sqlite", "/.history/exports/", ".bm25", "/changes/"):
        assert any(copy in h for h in held), (copy, held)  # the test sees the copies it made
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        n = (workspace / DAY).read_text().splitlines().index(SECRET) + 1
        done = c.forget(workspace="ws", path=DAY, lines=str(n), purge=True)
        purged = done.raw["purged"]
        assert "quetzal" not in json.dumps(c.status(workspace="ws").workspaces[0].raw)
        assert c.search("quetzal kumquat", workspace="ws", mode="keyword").results == []
        assert holders(workspace, md_home) == []  # while the daemon runs (its WAL too)
    # What it could not reach is named: the archive written elsewhere, left as it was.
    assert [n["path"] for n in purged["not_reached"]] == [str(outside)]
    assert outside.stat().st_size > 0
    assert holders(workspace, md_home) == []  # after a clean stop (the keyword sidecar)

    # A second purge of the same index (no VACUUM this time: secure_delete and the merge of
    # the keyword index's segments are what leave nothing).
    second = (b"marmalade", b"obelisk")
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        c.search("marmalade obelisk", workspace="ws", mode="keyword")
    assert holders(workspace, md_home, words=second), (workspace / DAY).read_text()
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        n = (workspace / DAY).read_text().splitlines().index(SECOND) + 1
        done = c.forget(workspace="ws", path=DAY, lines=str(n), purge=True)
        assert "vacuum_ms" not in done.raw["purged"]["index"]
        assert holders(workspace, md_home, words=second) == []
    logged = capfd.readouterr()
    assert not any(w.decode() in (logged.out + logged.err).lower() for w in WORDS)


def test_purge_names_a_transcript_quoting_the_line_and_leaves_it(
    md_home: Path, workspace: Path
) -> None:
    quoted = workspace / "sessions" / "s-1.jsonl"
    quoted.parent.mkdir()
    quoted.write_text(
        json.dumps({"type": "message", "message": {"role": "user", "content": SECOND[2:]}}) + "\n"
    )
    before = quoted.read_bytes()
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        n = (workspace / DAY).read_text().splitlines().index(SECOND) + 1
        done = c.forget(workspace="ws", path=DAY, lines=str(n), purge=True)
    assert done.raw["purged"]["still_in"] == ["sessions/s-1.jsonl"]
    assert quoted.read_bytes() == before  # the agent's file: named, not changed


def test_memctl_purge_tells_the_person_what_it_could_not_reach(
    md_home: Path, workspace: Path, tmp_path: Path
) -> None:
    """What the purge could not reach is the person's to deal with: memctl says it, not
    only the wire answer (before, `memctl forget --purge --yes` printed the lines only)."""
    quoted = workspace / "sessions" / "s-1.jsonl"
    quoted.parent.mkdir()
    quoted.write_text(
        json.dumps({"type": "message", "message": {"role": "user", "content": SECOND[2:]}}) + "\n"
    )
    mine = tmp_path / "mine.tar.gz"
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        c.export(mine, workspace="ws")
        n = (workspace / DAY).read_text().splitlines().index(SECOND) + 1
        argv = ("forget", "-w", "ws", "--path", DAY, "--lines", str(n), "--purge", "--yes")
        code, out, err = memctl(daemon, *argv)
    assert code == 0, err
    assert f"forgot {DAY}:{n}" in out
    assert "purged: no pre-image kept" in err
    assert f"NOT reached: {mine}: an export written outside the workspace" in err
    assert "still in sessions/s-1.jsonl" in err
    assert SECOND not in (workspace / DAY).read_text()


def test_purge_finds_copies_however_they_are_cased_marked_or_folded(
    md_home: Path, workspace: Path
) -> None:
    """A copy is the same line by ``line_key`` (case-folded, spacing, list marker, task box,
    annotations): a purge finds it in any memory file, also when its letters fold to the
    line's only by Unicode case-folding (a ligature pasted from a PDF, "ß", the Kelvin sign;
    a line with no ASCII word at all), and leaves a line that only shares its words."""
    lines = ["- The office finance key is in Strasse Kelvin.", "- Größe der Σοφία-Akte: zwölf"]
    (workspace / DAY).write_text(DAY_TEXT + "".join(f"{x}\n" for x in lines))
    copies = {
        "MEMORY.md": "* [x] THE OFFICE FINANCE KEY IS IN STRASSE KELVIN. <!-- importance: 8 -->",
        "memory/2025-03-10.md": "1. The office \ufb01nance key  is in Stra\u00dfe \u212aelvin.",
        "memory/2025-03-09.md": "- GRÖSSE DER ΣΟΦΊΑ-AKTE: ZWÖLF",
    }
    near = "- The office finance key is in the drawer."
    for rel, copy in copies.items():
        (workspace / rel).write_text(f"# Notes\n\n- The user prefers tabs.\n{copy}\n{near}\n")
    with daemon_on(md_home, workspace) as daemon, MemoryClient(daemon.socket_path) as c:
        n = (workspace / DAY).read_text().splitlines().index(lines[0]) + 1
        what = {"workspace": "ws", "path": DAY, "lines": f"{n}-{n + 1}", "purge": True}
        preview = c.forget(**what, dry_run=True)
        assert sorted(r.path for r in preview.removed) == sorted([DAY, *copies])
        c.forget(**what)
    for rel, copy in copies.items():
        text = (workspace / rel).read_text()
        assert copy not in text and near in text and "prefers tabs" in text, rel
