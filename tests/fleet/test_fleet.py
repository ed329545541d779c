"""Fleet mode with a real Postgres + pgvector and real daemons: two MEMORYD_HOMEs stand for
two hosts (docs/fleet.md)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from daemon_util import DaemonThread, RawConn, error_code, short_home, wait_for
from fakes.openai_server import FakeOpenAIServer
from fleet_util import scratch_postgres
from memoryd.errors import ConfigError
from memoryd.fleet import lease
from memoryd.fleet.postgres_schema import ensure_schema
from memoryd.runtime.config import config_from_mapping
from memoryd_client import MemoryClient
from memoryd_client.cli._format import format_search
from onnx_util import write_model

NOTE = "# Decisions\n\nThe zeppelin hangar moves to Tromso in March.\n"


def fleet_config(
    dsn: str, host: str, workspace: Path | None = None, **fleet: Any
) -> dict[str, Any]:
    cfg: dict[str, Any] = {"fleet": {"dsn": dsn, "host": host, "lease_seconds": 3, **fleet}}
    if workspace is not None:
        cfg["workspaces"] = [{"path": str(workspace), "name": "notes"}]
    return cfg


def make_workspace(root: Path, files: dict[str, str] | None = None) -> Path:
    (root / "memory").mkdir(parents=True)
    for rel, text in (files or {"MEMORY.md": NOTE}).items():
        (root / rel).write_text(text)
    return root


@contextlib.contextmanager
def host(
    dsn: str, name: str, workspace: Path | None = None, **fleet: Any
) -> Iterator[tuple[DaemonThread, RawConn]]:
    with (
        short_home() as home,
        DaemonThread(home, fleet_config(dsn, name, workspace, **fleet)) as d,
        RawConn(d.socket_path) as conn,
    ):
        yield d, conn


def remote_paths(conn: RawConn, query: str, ws: str = "A:notes") -> list[str]:
    frame = conn.call("search", {"query": query, "workspace": ws, "mode": "keyword"})
    return [r["path"] for r in frame["result"]["results"]] if frame["ok"] else []


def _both_ways(conn: RawConn, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A search of host A's workspace "notes", asked locally and through the fleet."""
    local = conn.result("search", {**params, "workspace": "notes"})
    return local, conn.result("search", {**params, "workspace": "A:notes"})


def _ranked(answer: dict[str, Any], vector_digits: int) -> list[tuple[Any, ...]]:
    """A hybrid answer's hits: path, score, vector score (rounded)."""
    return [
        (r["path"], round(r["score"], 5), round(r["vector_score"], vector_digits))
        for r in answer["results"]
    ]


def test_a_note_written_on_a_is_found_and_read_from_b_with_its_host_and_freshness(
    fleet_dsn: str, tmp_path: Path
) -> None:
    ws = make_workspace(tmp_path / "a")
    with host(fleet_dsn, "A", ws) as (_, a), host(fleet_dsn, "B") as (_, b):
        assert wait_for(lambda: remote_paths(b, "zeppelin hangar") == ["MEMORY.md"], 15)
        (ws / "memory" / "2024-03-01.md").write_text("Standup: the walrus budget is approved.\n")
        started = time.monotonic()
        assert wait_for(lambda: "memory/2024-03-01.md" in remote_paths(b, "walrus budget"), 15)
        assert time.monotonic() - started < 15
        out = b.result("search", {"query": "walrus budget", "workspace": "A:notes"})
        hit = out["results"][0]
        assert (hit["host"], hit["workspace"], hit["start_line"]) == ("A", "notes", 1)
        assert hit["publisher_live"] is True and hit["published_age_s"] >= 0
        assert "walrus" in hit["snippet"]
        got = b.result("get", {"path": "MEMORY.md", "workspace": "A:notes", "from": 3})
        assert got["text"] == "The zeppelin hangar moves to Tromso in March."
        assert (got["total_lines"], got["host"]) == (3, "A")
        # A itself is unaffected, and its own searches stay local.
        local = a.result("search", {"query": "walrus", "workspace": "notes"})
        assert [r["path"] for r in local["results"]] == ["memory/2024-03-01.md"]
        assert "host" not in local["results"][0]


def test_a_host_that_stopped_stays_searchable_and_says_its_publisher_is_gone(
    fleet_dsn: str, tmp_path: Path
) -> None:
    ws = make_workspace(tmp_path / "a")
    with host(fleet_dsn, "B") as (_, b):
        with host(fleet_dsn, "A", ws):
            assert wait_for(lambda: remote_paths(b, "zeppelin") == ["MEMORY.md"], 15)
        out = b.result("search", {"query": "zeppelin", "workspace": "A:notes"})
        assert [r["path"] for r in out["results"]] == ["MEMORY.md"]
        assert out["results"][0]["publisher_live"] is False  # released at a clean stop
        fleet = b.result("fleet.status")["fleet"]
        assert [(w["host"], w["workspace"], w["holder"]) for w in fleet] == [("A", "notes", None)]


def test_fleet_wide_search_finds_every_host_and_unknown_remote_workspaces_are_not_found(
    fleet_dsn: str, tmp_path: Path
) -> None:
    wa = make_workspace(tmp_path / "a", {"MEMORY.md": "Quokka census: 12 quokkas.\n"})
    wb = make_workspace(tmp_path / "b", {"MEMORY.md": "Quokka diet: leaves.\n"})
    with host(fleet_dsn, "A", wa) as (d, a), host(fleet_dsn, "B", wb):

        def hosts() -> list[str]:
            out = a.result("search", {"query": "quokka", "fleet": True, "mode": "keyword"})
            return sorted(r["host"] for r in out["results"])

        assert wait_for(lambda: hosts() == ["A", "B"], 15)
        with MemoryClient(d.socket_path) as client:  # the client library and memctl's lines
            found = client.search("quokka diet", fleet=True, mode="keyword")
            assert (found.results[0].host, found.results[0].workspace) == ("B", "notes")
            assert format_search(found)[0].startswith("B:notes:MEMORY.md:1-1  ")
        frame = a.call("search", {"query": "quokka", "workspace": "C:notes"})
        assert error_code(frame) == "not_found"
        assert "C" in frame["error"]["message"]


def test_a_second_daemon_claiming_the_same_host_and_workspace_is_refused_until_released(
    fleet_dsn: str, tmp_path: Path
) -> None:
    first = make_workspace(tmp_path / "one")
    second = make_workspace(tmp_path / "two", {"MEMORY.md": "Impostor notes about llamas.\n"})
    with host(fleet_dsn, "A", second) as (_, late), host(fleet_dsn, "B") as (_, b):
        with host(fleet_dsn, "A", first) as (_, early):
            pass  # the first claim may go either way: keep one holder alive below
        with host(fleet_dsn, "A", first) as (_, early):

            def states() -> tuple[str, str]:
                return tuple(
                    c.result("status")["fleet"]["workspaces"]["notes"]["state"]
                    for c in (late, early)
                )  # type: ignore[return-value]

            assert wait_for(lambda: "refused" in states() and "published" in states(), 15)
            refused = early if states()[1] == "refused" else late
            info = refused.result("status")["fleet"]
            assert "published by another daemon" in info["workspaces"]["notes"]["error"]
            assert any("another daemon" in d for d in info["degraded"])
            # The refused daemon still serves its own workspace.
            assert refused.result(
                "search", {"query": "notes OR zeppelin OR llamas", "workspace": "notes"}
            )["results"]
        # The holder stopped cleanly (if it was `early`) or is `late`: one daemon publishes.
        assert wait_for(
            lambda: late.result("status")["fleet"]["workspaces"]["notes"]["state"] == "published",
            15,
        )
        assert wait_for(lambda: remote_paths(b, "llamas") == ["MEMORY.md"], 15)


def test_a_crashed_holders_lease_expires_and_the_same_daemon_takes_its_lease_back_at_once(
    fleet_dsn: str, tmp_path: Path
) -> None:
    with psycopg.connect(fleet_dsn, autocommit=True) as conn:
        ensure_schema(conn, "memoryd_fleet")
        ws_id, new = lease.claim(conn, "memoryd_fleet", "A", "notes", "crashed", 1.0)
        assert new
        with pytest.raises(lease.LeaseRefused, match="published by another daemon"):
            lease.claim(conn, "memoryd_fleet", "A", "notes", "other", 1.0)
        assert lease.claim(conn, "memoryd_fleet", "A", "notes", "crashed", 1.0) == (ws_id, False)
        time.sleep(1.2)  # the holder never renewed: it expired
        assert lease.claim(conn, "memoryd_fleet", "A", "notes", "other", 1.0) == (ws_id, False)
    state = tmp_path / "state"
    state.mkdir()
    assert lease.holder_id(state) == lease.holder_id(state)  # kept across restarts


def test_postgres_down_keeps_local_search_and_publishing_catches_up_without_a_republish(
    tmp_path: Path,
) -> None:
    gen = scratch_postgres()
    pg = next(gen)
    try:
        dsn = pg.create_database("outage")
        ws = make_workspace(
            tmp_path / "a", {"MEMORY.md": NOTE, "memory/2024-01-01.md": "Old note about otters.\n"}
        )
        with host(dsn, "A", ws, retry_max_seconds=1) as (_, a):

            def published(path: str) -> Any:
                with psycopg.connect(dsn) as conn:
                    try:
                        row = conn.execute(
                            "SELECT published_at FROM memoryd_fleet.files WHERE path = %s", (path,)
                        ).fetchone()
                    except psycopg.errors.UndefinedTable:  # not created yet
                        return None
                return row[0] if row else None

            assert wait_for(lambda: published("memory/2024-01-01.md") is not None, 15)
            before = published("memory/2024-01-01.md")
            pg.stop()
            (ws / "memory" / "2024-01-02.md").write_text("New note about beavers.\n")
            assert wait_for(lambda: a.result("status")["fleet"]["state"] == "unavailable", 15)
            status = a.result("status")["fleet"]
            assert any("unavailable" in d for d in status["degraded"])
            local = a.result("search", {"query": "beavers", "workspace": "notes"})
            assert [r["path"] for r in local["results"]] == ["memory/2024-01-02.md"]
            frame = a.call("search", {"query": "beavers", "workspace": "A:notes"})
            assert error_code(frame) == "unavailable"
            pg.start()
            assert wait_for(lambda: published("memory/2024-01-02.md") is not None, 20)
            assert published("memory/2024-01-01.md") == before  # caught up, not republished
            assert wait_for(lambda: remote_paths(a, "beavers") == ["memory/2024-01-02.md"], 10)
            assert a.result("status")["fleet"]["state"] == "connected"
    finally:
        gen.close()


def test_a_dropped_schema_is_recreated_and_everything_republished(
    fleet_dsn: str, tmp_path: Path
) -> None:
    ws = make_workspace(tmp_path / "a")
    with host(fleet_dsn, "A", ws) as (_, a):
        assert wait_for(lambda: remote_paths(a, "zeppelin") == ["MEMORY.md"], 15)
        with psycopg.connect(fleet_dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA memoryd_fleet CASCADE")
        (ws / "memory" / "2024-05-05.md").write_text("A note after the drop: ibis.\n")
        assert wait_for(lambda: remote_paths(a, "zeppelin") == ["MEMORY.md"], 20)
        assert wait_for(lambda: remote_paths(a, "ibis") == ["memory/2024-05-05.md"], 10)


def test_remote_keyword_ranking_and_scores_are_the_local_engines(
    fleet_dsn: str, tmp_path: Path
) -> None:
    days = {
        f"memory/2024-02-{d:02d}.md": "\n\n".join(
            f"## Entry {d}-{i}\n\nThe {'heron' if (d + i) % 3 == 0 else 'crane'} crossed the "
            f"{'river' if i % 2 else 'lake'} at dawn; {'otters' * (i % 4)} watched {d * i} times."
            for i in range(8)
        )
        for d in range(1, 21)
    }
    days["memory/2024-03-03.md"] = "项目会议决定使用数据库。\n\n周五的会议取消了。\n"
    ws = make_workspace(tmp_path / "a", {"MEMORY.md": NOTE, **days})
    with host(fleet_dsn, "A", ws) as (_, a):
        assert wait_for(
            lambda: a.result("status")["fleet"]["workspaces"]["notes"].get("state") == "published",
            20,
        )
        for query in (
            "heron river",
            "otters at dawn",
            "crane lake watched",
            "zeppelin hangar",
            "what happened on 2024-02-07 at the lake",
            "会议",
        ):
            params = {"query": query, "mode": "keyword", "max_results": 10, "min_score": 0}
            local, remote = (answer["results"] for answer in _both_ways(a, params))
            key = [(r["path"], r["start_line"], r["end_line"], r["snippet"]) for r in local]
            assert [
                (r["path"], r["start_line"], r["end_line"], r["snippet"]) for r in remote
            ] == key, query
            assert [r["score"] for r in remote] == pytest.approx(
                [r["score"] for r in local], abs=1e-6
            ), query
        for filters in (
            {"path_prefix": "memory/2024-02-1"},
            {"since": "2024-02-05", "until": "2024-02-09"},
        ):
            params = {"query": "heron otters", "mode": "keyword", "min_score": 0, **filters}
            local, remote = (answer["results"] for answer in _both_ways(a, params))
            assert local and [(r["path"], r["start_line"]) for r in remote] == [
                (r["path"], r["start_line"]) for r in local
            ], filters


def test_remote_hybrid_search_ranks_with_the_published_vectors_as_locally(
    fleet_dsn: str, tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    env = {
        "MEMORYD_EMBEDDING_PROVIDER": "openai",
        "OPENAI_API_KEY": "sk-test",
        "MEMORYD_EMBEDDING_BASE_URL": openai_server.base_url,
    }
    files = {
        f"memory/2024-04-{d:02d}.md": f"Day {d}: the {'kestrel' if d % 2 else 'falcon'} "
        f"nested near the {'barn' if d % 3 else 'tower'}.\n"
        for d in range(1, 13)
    }
    ws = make_workspace(tmp_path / "a", files)
    with (
        short_home() as home,
        DaemonThread(home, fleet_config(fleet_dsn, "A", ws), env) as d,
        RawConn(d.socket_path) as a,
    ):

        def published() -> bool:
            st = a.result("status")
            return (
                st["workspaces"][0]["pending_vectors"] == 0
                and st["fleet"]["workspaces"]["notes"].get("state") == "published"
            )

        assert wait_for(published, 20)
        for query in ("kestrel barn", "where did the falcon nest", "tower birds"):
            params = {"query": query, "max_results": 8, "min_score": 0}
            local, remote = _both_ways(a, params)
            assert remote["mode_used"] == local["mode_used"] == "hybrid"
            assert _ranked(remote, 3) == _ranked(local, 3), query


def test_a_model_with_a_query_prefix_ranks_the_same_locally_and_through_the_fleet(
    fleet_dsn: str, tmp_path: Path
) -> None:
    """The fleet embeds a query as a local search does (embed_query: the query prefix, not
    the passage prefix a chunk gets)."""
    write_model(tmp_path / "e5")
    embedding = {
        "provider": "local",
        "model_path": str(tmp_path / "e5"),
        "query_prefix": "query: ",
        "passage_prefix": "passage: ",
    }
    words = ["kayak", "trip", "sunday", "tax", "return", "april"]
    files = {
        f"memory/2024-05-{d:02d}.md": " ".join(words[(d * k) % 6] for k in range(1, 2 + d % 4))
        + "\n"
        for d in range(1, 13)
    }
    ws = make_workspace(tmp_path / "a", files)
    with (
        short_home() as home,
        DaemonThread(
            home,
            {**fleet_config(fleet_dsn, "A", ws), "embedding": embedding},
            {"MEMORYD_EMBEDDING_PROVIDER": "local"},
        ) as d,
        RawConn(d.socket_path) as a,
    ):

        def published() -> bool:
            st = a.result("status")
            return (
                st["workspaces"][0]["vector_ready"]  # the model loaded and every vector written
                and st["fleet"]["workspaces"]["notes"].get("state") == "published"
            )

        assert wait_for(published, 20)
        for query in ("kayak", "tax return", "sunday trip april"):
            params = {"query": query, "max_results": 12, "min_score": 0}
            local, remote = _both_ways(a, params)
            assert remote["mode_used"] == local["mode_used"] == "hybrid"
            assert _ranked(remote, 4) == _ranked(local, 4), query


def test_a_query_through_the_fleet_is_prepared_as_locally_a_cjk_one_by_keyword(
    fleet_dsn: str, tmp_path: Path
) -> None:
    """The fleet takes the query's vector from a local index's query side: the bundled
    English model gives a Chinese query none, locally and through the fleet alike (keyword
    results, saying why), and an English query ranks the same both ways."""
    files = {
        "memory/2024-03-03.md": "项目会议决定使用数据库。\n\n周五的会议取消了。\n",
        "memory/2024-03-04.md": "The kestrel nested near the old barn.\n",
        "memory/2024-03-05.md": "Quarterly planning moved to the tower room.\n",
    }
    ws = make_workspace(tmp_path / "a", files)
    with (
        short_home() as home,
        DaemonThread(
            home, fleet_config(fleet_dsn, "A", ws), {"MEMORYD_EMBEDDING_PROVIDER": "local"}
        ) as d,
        RawConn(d.socket_path) as a,
    ):

        def published() -> bool:
            st = a.result("status")
            return (
                st["workspaces"][0]["vector_ready"]  # the model loaded and every vector written
                and st["fleet"]["workspaces"]["notes"].get("state") == "published"
            )

        assert wait_for(published, 60)
        params = {"query": "会议", "max_results": 5, "min_score": 0}
        local, remote = _both_ways(a, params)
        assert "English model" in local["degraded"] and "English model" in remote["degraded"]
        assert [r["path"] for r in remote["results"]] == [r["path"] for r in local["results"]]
        assert remote["results"][0]["path"] == "memory/2024-03-03.md"
        params = {"query": "where did the kestrel nest", "max_results": 5, "min_score": 0}
        local, remote = _both_ways(a, params)
        assert remote["mode_used"] == local["mode_used"] == "hybrid"
        assert [(r["path"], round(r["score"], 4)) for r in remote["results"]] == [
            (r["path"], round(r["score"], 4)) for r in local["results"]
        ]


def test_fleet_config_masks_the_password_and_refuses_a_host_with_a_colon(
    fleet_dsn: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"fleet\.host"):
        config_from_mapping({"fleet": {"dsn": fleet_dsn, "host": "a:b"}})
    with host(fleet_dsn, "A", password_env="FLEET_TEST_PW") as (d, a):
        assert d.daemon is not None and d.daemon.services.fleet is not None
        status = a.result("status")["fleet"]
        assert status["host"] == "A" and status["state"] in ("connected", "connecting")
    with (
        short_home() as home,
        DaemonThread(home, {"fleet": {"dsn": fleet_dsn + " password=hunter2", "host": "A"}}) as d,
        RawConn(d.socket_path) as conn,
    ):
        shown = conn.result("status")["fleet"]["dsn"]
        assert "hunter2" not in shown and "***" in shown


def test_without_fleet_mode_remote_search_is_a_clear_error(md_daemon: DaemonThread) -> None:
    with RawConn(md_daemon.socket_path) as conn:
        frame = conn.call("search", {"query": "x", "fleet": True})
        assert error_code(frame) == "invalid_params"
        assert "[fleet] dsn" in frame["error"]["message"]
        assert error_code(conn.call("fleet.status")) == "invalid_params"


def test_a_fleet_search_settles_this_hosts_lines_as_a_local_search_does(
    fleet_dsn: str, tmp_path: Path
) -> None:
    """SearchService.answer: through the fleet, this host's superseded keyed line is left out
    (or marked with include_superseded), its hits are counted and secrets masked, as locally."""
    old = "- The deploy target is heroku. <!-- key: deploy -->\n"
    new = "- The deploy target is now fly.io. <!-- key: deploy -->\n"
    token = "- The deploy token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + ".\n"
    ws = make_workspace(
        tmp_path / "a",
        {
            "memory/2025-03-10.md": "# 2025-03-10\n\n" + old,
            "memory/2025-03-11.md": "# 2025-03-11\n\n" + new + token,
        },
    )
    with host(fleet_dsn, "A", ws) as (d, a):

        def fleet_paths(**extra: Any) -> list[str]:
            params = {"query": "deploy target", "fleet": True, "mode": "keyword", **extra}
            return sorted(r["path"] for r in a.result("search", params)["results"])

        assert wait_for(lambda: "memory/2025-03-11.md" in fleet_paths(include_superseded=True), 15)
        assert fleet_paths() == ["memory/2025-03-11.md"]
        marked = a.result(
            "search",
            {
                "query": "deploy target heroku",
                "fleet": True,
                "mode": "keyword",
                "include_superseded": True,
            },
        )["results"]
        assert any(r.get("superseded") for r in marked)
        found = a.result("search", {"query": "deploy token", "fleet": True, "mode": "keyword"})
        assert found["results"] and "ghp_" not in str(found["results"])
        assert (
            d.daemon is not None
            and d.daemon.services.hits is not None
            and d.daemon.services.hits.wait_idle()
        )
        counted = a.result("status", {"workspace": "notes"})["workspaces"][0].get("line_hits")
        assert counted is not None and counted["lines"] >= 1
