"""Hippocampus's ranking weighs each query by how specific the words that tied it to a line
are: a line returned for rare words outranks lines returned only because they name a person
who is on every other line (a real daemon, real searches, no LLM)."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from daemon_util import DaemonThread
from fakes.clock import FakeClock
from memoryd.jobs.curation import rarity
from memoryd_client import MemoryClient, cli

pytestmark = pytest.mark.timeout(90)

NOW = dt.datetime(2025, 3, 20, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))
ACTIVITIES = ("pottery", "cycling", "baking", "chess", "painting", "hiking", "singing", "rowing")
KAYAK = "- The kayak rental by the lake closes at dusk."


def test_rarity_weighs_a_word_by_how_few_lines_hold_it() -> None:
    weigh = rarity([f"- Alice likes {a}." for a in ACTIVITIES] + [KAYAK])
    assert weigh("alice") < 0.1 < 0.6 < weigh("kayak") < weigh("zebra") == 1.0
    assert weigh("alice kayak") == weigh("kayak")  # the rarest word decides
    assert weigh("") == 0.5  # matched by meaning only


def test_a_line_found_by_rare_words_outranks_lines_found_by_a_common_name(
    md_home: Path,
) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    for i, activity in enumerate(ACTIVITIES):
        (ws / "memory" / f"2025-03-{10 + i:02d}.md").write_text(
            f"# 2025-03-{10 + i:02d}\n\n- Alice spent the afternoon on {activity}.\n"
        )
    (ws / "memory" / "2025-03-09.md").write_text(f"# 2025-03-09\n\n{KAYAK}\n")
    config = {
        "workspaces": [{"path": str(ws), "name": "ws"}],
        "jobs": {"hippocampus": {"lookback_days": 30}},
    }
    with DaemonThread(md_home, config, clock=FakeClock(NOW)) as d:
        with MemoryClient(d.socket_path) as c:
            c.reindex(workspace="ws")
            # Questions in the words every Alice line shares: each brings all of them back.
            for q in ("Alice", "afternoon", "Alice afternoon", "Alice spent", "spent afternoon"):
                c.search(q, workspace="ws", mode="keyword", max_results=20)
            for q in ("kayak rental", "when does the kayak place close"):
                c.search(q, workspace="ws", mode="keyword", max_results=20)
        assert d.daemon is not None and d.daemon.services.hits is not None
        assert d.daemon.services.hits.wait_idle()
        out = io.StringIO()
        argv = ["jobs", "run", "hippocampus", "-w", "ws", "--dry-run", "--json"]
        code = cli.main([*argv, "--socket", str(d.socket_path)], stdout=out, stderr=io.StringIO())
    assert code == 0, out.getvalue()
    candidates = json.loads(out.getvalue())["report"]["candidates"]
    best, *rest = candidates
    assert "kayak" in best["line"], candidates
    alice = [c for c in rest if "Alice" in c["line"]]
    # The Alice lines were returned more often and to more queries, and still rank lower.
    assert alice and all(c["hits"] > best["hits"] and c["queries"] > best["queries"] for c in alice)
    assert all(c["weight"] < best["weight"] for c in alice)
