"""Fleet and sync together: a workspace synced to two hosts and published by both is read
once by fleet search, not once per host (docs/sync.md)."""

from __future__ import annotations

from pathlib import Path

from daemon_util import wait_for
from memoryd_client.errors import NotFound
from sync_util import host, make_remote, settle


def _fleet(dsn: str, name: str) -> dict[str, object]:
    return {"fleet": {"dsn": dsn, "host": name, "lease_seconds": 3}}


def test_fleet_search_reads_a_synced_workspace_once(fleet_dsn: str, tmp_path: Path) -> None:
    remote = f"file://{make_remote(tmp_path)}"
    with (
        host("laptop", remote=remote, extra=_fleet(fleet_dsn, "laptop")) as a,
        host("desktop", remote=remote, extra=_fleet(fleet_dsn, "desktop")) as b,
    ):
        a.append("- the walrus budget is approved")
        settle(a, b)
        assert "walrus budget" in b.read("memory/2026-03-02.md")

        def published_by_both() -> bool:
            """Each host finds the line in the other's copy (a host not yet published is
            not found: the daemons now start in a fraction of a second)."""
            for client, other in ((a, "desktop"), (b, "laptop")):
                with client.client() as c:
                    try:
                        one = c.call(
                            "search",
                            {
                                "query": "walrus budget",
                                "workspace": f"{other}:notes",
                                "mode": "keyword",
                            },
                        )
                    except NotFound:
                        return False
                if not one["results"]:
                    return False
            return True

        assert wait_for(published_by_both, 30)
        with a.client() as c:
            out = c.call("search", {"query": "walrus budget", "fleet": True, "mode": "keyword"})
        hits = [r for r in out["results"] if "walrus" in r["snippet"]]
        assert len(hits) == 1, hits
        assert hits[0]["host"] == "laptop"  # this host's own copy is the one read
        folded = [f for f in out["fleet"] if f.get("same_as")]
        assert folded == [{"host": "desktop", "workspace": "notes", "same_as": "laptop:notes"}]
        # An explicit host:name still reads that host's copy.
        with b.client() as c:
            one = c.call(
                "search", {"query": "walrus budget", "workspace": "laptop:notes", "mode": "keyword"}
            )
        assert one["results"] and one["results"][0]["host"] == "laptop"
