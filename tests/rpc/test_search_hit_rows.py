"""``search`` with ``hit_rows`` (docs/protocol.md): the same hits, as rows, for a client
that asks (hello lists the feature); maps for every other."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon_util import DaemonThread, RawConn, error_code
from memoryd.index import types
from memoryd.rpc import memory_methods
from memoryd_client import protocol


def _workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Long term\n\nThe billing schema uses postgres.\n")
    (root / "memory" / "2024-01-02.md").write_text(
        "# 2024-01-02\n\n## Billing\n\npostgres migration planned for the billing schema\n"
    )
    (root / "memory" / "2024-01-03.md").write_text("postgres upgrade, no heading here\n")
    return root


@pytest.mark.parametrize("compiled", [True, False])
def test_search_answers_rows_when_asked_and_maps_otherwise(
    md_home: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not compiled:  # the Python version (a build without a compiler)
        monkeypatch.setattr(memory_methods, "compiled", None)
        monkeypatch.setattr(types, "compiled", None)
    ws = _workspace(md_home / "ws")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        assert c.result("hello", {"client": "t", "protocol": 1})["features"] == ["hit_rows"]
        c.result("workspace.add", {"path": str(ws)})
        c.result("reindex")
        ask = {"query": "postgres billing schema", "min_score": 0}
        maps = c.result("search", ask)
        rows = c.result("search", {**ask, "hit_rows": True})
        off = c.result("search", {**ask, "hit_rows": False})
    assert len(maps["results"]) == 3
    assert rows["results"]["fields"][:4] == ["path", "start_line", "end_line", "score"]
    assert protocol.hit_maps(rows["results"]) == maps["results"] == off["results"]
    for answer in (rows, off):
        assert {
            k: v for k, v in answer.items() if k not in ("results", "took_ms", "waited_ms")
        } == {k: v for k, v in maps.items() if k not in ("results", "took_ms", "waited_ms")}


@pytest.mark.parametrize("kind", ["secret", "superseded", "provenance"])
def test_rows_are_the_maps_with_secrets_superseded_lines_and_provenance(
    md_home: Path, kind: str
) -> None:
    ws = _workspace(md_home / "ws")
    lines = {
        "secret": "- the billing postgres password is Tr0ub4dor&3xyzzy now\n",
        "superseded": "- billing postgres on heroku <!-- key: db -->\n"
        "- billing postgres on fly.io <!-- key: db -->\n",
        "provenance": "",
    }[kind]
    (ws / "memory" / "2024-01-04.md").write_text("# 2024-01-04\n\n" + lines)
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        c.result("reindex")
        if kind == "provenance":
            c.result("append", {"text": "billing postgres replica added", "origin": "agent"})
            c.result("reindex")
        ask = {"query": "postgres billing", "min_score": 0}
        for more in ({}, {"include_superseded": True}):
            maps = c.result("search", {**ask, **more})
            rows = c.result("search", {**ask, **more, "hit_rows": True})
            assert protocol.hit_maps(rows["results"]) == maps["results"]
    shown = "\n".join(h["snippet"] for h in maps["results"])
    assert "Tr0ub4dor" not in shown
    assert "REDACTED" in shown if kind == "secret" else True
    if kind == "provenance":
        assert any(h.get("origin") == "agent" for h in maps["results"])
    if kind == "superseded":
        assert any(h.get("superseded") for h in maps["results"])


def test_hit_rows_must_be_true_or_false(md_home: Path) -> None:
    ws = _workspace(md_home / "ws")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        frame = c.call("search", {"query": "postgres", "hit_rows": "yes"})
    assert error_code(frame) == "invalid_params"
    assert frame["error"]["data"] == {"param": "hit_rows"}
