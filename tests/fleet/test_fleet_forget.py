"""A forget reaches fleet search at once: the forgetting daemon publishes the workspace
before it answers, not at its publisher's next pass (a real Postgres, two daemons)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from daemon_util import wait_for
from fleet.test_fleet import host, make_workspace, remote_paths

NOTES = {
    "MEMORY.md": "# Memory\n\n- The zeppelin hangar moves to Tromso in March.\n",
    "memory/2024-03-01.md": (
        "# 2024-03-01\n\n- The walrus budget is approved.\n- Lunch was at noon.\n"
    ),
}


def test_a_forgotten_line_leaves_fleet_search_before_forget_answers(
    fleet_dsn: str, tmp_path: Path
) -> None:
    ws = make_workspace(tmp_path / "a", NOTES)
    with host(fleet_dsn, "A", ws) as (_, a), host(fleet_dsn, "B") as (_, b):
        assert wait_for(lambda: remote_paths(b, "walrus budget") == ["memory/2024-03-01.md"], 15)
        for word in ("ocelot", "pangolin", "axolotl"):  # a fresh line, forgotten, gone at once
            line = f"- The {word} exhibit budget is approved."
            a.result("append", {"text": line, "workspace": "notes", "date": "2024-03-01"})
            assert wait_for(lambda w=word: remote_paths(b, w) != [], 15)
            text = (ws / "memory" / "2024-03-01.md").read_text().splitlines()
            n = text.index(line) + 1
            done = a.result(
                "forget",
                {"workspace": "notes", "path": "memory/2024-03-01.md", "lines": str(n)},
            )
            assert done["fleet"] == "published" and done["lines"] == 1
            # The very next searches, on both hosts, no longer find it.
            assert remote_paths(b, word) == []
            assert remote_paths(a, word) == []
            got = b.result("get", {"path": "memory/2024-03-01.md", "workspace": "A:notes"})
            assert line not in got["text"]
        assert remote_paths(b, "zeppelin hangar") == ["MEMORY.md"]  # the rest stays


def walrus_rows(dsn: str) -> list[tuple[str]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT 'chunks' FROM memoryd_fleet.chunks WHERE text ILIKE '%walrus%' "
            "UNION ALL SELECT 'files' FROM memoryd_fleet.files WHERE body ILIKE '%walrus%' "
            "UNION ALL SELECT 'postings' FROM memoryd_fleet.postings WHERE stem = 'walru'"
        ).fetchall()


def test_a_purged_line_leaves_no_row_in_postgres(fleet_dsn: str, tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "a", NOTES)
    with host(fleet_dsn, "A", ws) as (_, a), host(fleet_dsn, "B") as (_, b):
        assert wait_for(lambda: remote_paths(b, "walrus budget") == ["memory/2024-03-01.md"], 15)
        assert {r[0] for r in walrus_rows(fleet_dsn)} == {"chunks", "files", "postings"}
        done = a.result(
            "forget",
            {"workspace": "notes", "path": "memory/2024-03-01.md", "lines": "3", "purge": True},
        )
        assert done["fleet"] == "published"
        assert walrus_rows(fleet_dsn) == []
