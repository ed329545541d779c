"""An index that has vectors, opened by a process whose sqlite-vec does not load.

Every statement on a vec0 table fails without the module, DROP included. Such a process
must still sync and answer keyword searches (status says why vectors are off), and the
first process with sqlite-vec again must not keep vectors that missed those changes.

The broken sqlite-vec is a fake ``sqlite_vec`` package first on PYTHONPATH whose library
path does not exist: a fake at the boundary, in a child process, since the probe runs once
per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw

from engine_util import IndexFactory, paths, search
from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.index import schema

CHILD = """
import json, sys
from pathlib import Path
from memoryd.runtime.config import config_from_mapping
from memoryd.embeddings.factory import choose_provider
from memoryd.index.types import SearchRequest
from memoryd.index.workspace import WorkspaceIndex

ws, index, provider, base_url = sys.argv[1:5]
cfg = config_from_mapping(
    {"embedding": {"provider": provider, "base_url": base_url, "api_key": "sk-test"}}
)
ix = WorkspaceIndex(Path(ws), Path(index), cfg, choose_provider(cfg.embedding).provider)
ix.open()
(Path(ws) / "memory/a.md").write_text("- a note about zeppelins\\n- quokkas at dawn\\n")
(Path(ws) / "memory/b.md").unlink()
(Path(ws) / "memory/c.md").write_text("- walrus facts\\n")
report = ix.sync()
resp = ix.search(SearchRequest("quokkas walrus zeppelins harpsichord"))
status = ix.status()
ix.close()
print(json.dumps({
    "files_changed": report.files_changed,
    "files_removed": report.files_removed,
    "paths": sorted(h.path for h in resp.results),
    "mode": resp.mode_used,
    "degraded": status["degraded"],
}))
"""


def broken_sqlite_vec(tmp: Path) -> dict[str, str]:
    pkg = tmp / "fakevec" / "sqlite_vec"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "def loadable_path() -> str:\n    return '/nonexistent/sqlite-vec/vec0'\n"
    )
    return {**os.environ, "PYTHONPATH": str(pkg.parent)}


def run_child(make_index: IndexFactory, provider: str, base_url: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(make_index.ws), str(make_index.db), provider, base_url],
        env=broken_sqlite_vec(make_index.tmp),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def vector_rows(index: Path) -> tuple[set[int], set[int]]:
    """(chunk ids, chunk ids with a vec0 row), read with sqlite-vec loaded."""
    conn = schema.connect(index, readonly=True)
    try:
        chunks = {int(r[0]) for r in conn.execute("SELECT id FROM chunks")}
        vecs = {int(r[0]) for r in conn.execute("SELECT chunk_id FROM chunks_vec")}
        return chunks, vecs
    finally:
        conn.close()


def build(make_index: IndexFactory, server: FakeOpenAIServer) -> None:
    make_index.write("memory/a.md", "- a note about zeppelins\n")
    make_index.write("memory/b.md", "- the harpsichord needs tuning\n")
    ix = make_index({}, OpenAIProvider(base_url=server.base_url, api_key="sk-test"))
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    ix.close()


def test_a_process_without_sqlite_vec_syncs_and_the_next_one_rebuilds_vectors(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    build(make_index, openai_server)

    child = run_child(make_index, "openai", openai_server.base_url)
    assert (child["files_changed"], child["files_removed"]) == (2, 1)
    assert child["mode"] == "keyword"
    assert child["paths"] == ["memory/a.md", "memory/c.md"]  # b.md is gone
    assert any(d.startswith("vectors off: could not load sqlite-vec") for d in child["degraded"])

    # sqlite-vec works again: the vectors that missed the child's changes are dropped and
    # every chunk is embedded anew.
    ix = make_index({}, OpenAIProvider(base_url=openai_server.base_url, api_key="sk-test"))
    assert ix.wait_embedded(timeout=30)
    chunks, vecs = vector_rows(make_index.db)
    assert chunks and vecs == chunks
    resp = search(ix, "walrus", mode="vector", min_score=0.0)
    assert resp.mode_used == "vector" and set(paths(resp)) <= {"memory/a.md", "memory/c.md"}
    assert search(ix, "harpsichord").results == []


def test_switching_to_no_provider_without_sqlite_vec_keeps_keyword_search(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    build(make_index, openai_server)
    child = run_child(make_index, "none", "")
    assert child["paths"] == ["memory/a.md", "memory/c.md"]
    # The vec0 table could not be dropped then; the next open with sqlite-vec does it.
    ix = make_index()
    assert ix.status()["chunks"] == 2
    conn = apsw.Connection(str(make_index.db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        left = conn.execute("SELECT name FROM sqlite_master WHERE name = 'chunks_vec'").fetchall()
    finally:
        conn.close()
    assert left == []
