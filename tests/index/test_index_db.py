"""The connection factory and the schema: sqlite-vec probing, recorded idempotent migrations."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import apsw

from memoryd import sqlite
from memoryd.index import schema


def test_sqlite_vec_loads_and_answers_a_real_knn_query() -> None:
    support = sqlite.probe_vec()
    assert support.ok and support.version.startswith("v") and support.reason == ""


def test_migrations_are_recorded_and_idempotent(tmp_path: Path) -> None:
    conn = schema.connect(tmp_path / "i.sqlite")
    first = schema.migrate(conn)
    assert first == [name for name, _ in schema.MIGRATIONS]
    assert schema.migrate(conn) == []
    recorded = [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY name")]
    assert recorded == first
    conn.close()


def test_fts5_merges_a_level_at_sixteen_segments_on_new_and_existing_indexes(
    tmp_path: Path,
) -> None:
    conn = schema.connect(tmp_path / "old.sqlite")  # an index made before 0003
    sqlite.migrate(conn, schema.MIGRATIONS[:2])
    assert not conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'automerge'").fetchall()
    assert schema.migrate(conn)[:1] == ["0003_fts_automerge"]
    assert conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'automerge'").fetchall() == [
        (16,)
    ]
    conn.close()


def test_without_sqlite_vec_keyword_search_works_and_status_says_why(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2024-05-01.md").write_text("- The spare key is under the blue pot.\n")
    # A Python where the sqlite_vec wheel cannot be imported: the boundary, not our code.
    script = textwrap.dedent(f"""
        import json, sys
        sys.modules["sqlite_vec"] = None
        from pathlib import Path
        from memoryd.runtime.config import config_from_mapping
        from memoryd.index.types import SearchRequest
        from memoryd.index.workspace import WorkspaceIndex
        from fakes_provider import HashProvider
        cfg = config_from_mapping({{}})
        ix = WorkspaceIndex(Path({str(ws)!r}), Path({str(tmp_path / "i.sqlite")!r}), cfg,
                            HashProvider(), "test")
        ix.open(); ix.sync()
        resp = ix.search(SearchRequest("spare key"))
        print(json.dumps({{"paths": [h.path for h in resp.results], "mode": resp.mode_used,
                          "degraded": resp.degraded, "status": ix.status()["degraded"],
                          "ready": ix.status()["vector_ready"]}}))
        ix.close()
    """)
    helper = tmp_path / "fakes_provider.py"
    helper.write_text(
        textwrap.dedent("""
        import numpy as np
        class HashProvider:
            name, model = "hash", "hash"
            dims = 8
            provider_key = "hash"
            def embed(self, texts):
                return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)
            def close(self):
                pass
    """)
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["paths"] == ["memory/2024-05-01.md"]
    assert got["mode"] == "keyword" and got["ready"] is False
    assert "sqlite-vec" in got["degraded"]
    assert any("could not load sqlite-vec" in d for d in got["status"])


def test_two_connections_migrating_a_new_index_at_once(tmp_path: Path) -> None:
    # Each used to see "not applied yet", and the second's CREATE TABLE failed: an error
    # the index's open took for corruption (the new file was moved aside).
    for trial in range(10):
        path = tmp_path / f"{trial}.sqlite"
        conns = [schema.connect(path) for _ in range(2)]
        results: list[object] = []

        def run(conn: apsw.Connection, out: list[object] = results) -> None:
            try:
                out.append(schema.migrate(conn))
            except apsw.Error as exc:
                out.append(exc)

        threads = [threading.Thread(target=run, args=(c,)) for c in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        applied = [r for r in results if isinstance(r, list)]
        assert len(applied) == 2, results
        assert sorted(n for r in applied for n in r) == [name for name, _ in schema.MIGRATIONS]
        for c in conns:
            c.close()
