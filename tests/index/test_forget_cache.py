"""The embedding cache's keys of the chunks holding a line to forget (index/forget_cache.py),
read from plain (path, first line, last line) spans: index/ knows nothing of a forget's
selection (lifecycle/ sits above it)."""

from __future__ import annotations

import apsw

from engine_util import IndexFactory
from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.index.forget_cache import cache_hashes, purge_cache

NOTES = {
    "memory/2024-05-01.md": "# 2024-05-01\n\n- Bought a blue bicycle for commuting to work.\n",
    "memory/2024-05-02.md": "# 2024-05-02\n\n- The dentist moved the appointment to Friday.\n",
}


def cached(ix_db: str) -> set[str]:
    conn = apsw.Connection(ix_db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {str(r[0]) for r in conn.execute("SELECT text_hash FROM embedding_cache")}
    finally:
        conn.close()


def test_a_span_or_a_whole_file_names_its_chunks_cached_vectors_and_only_those_go(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    make_index.write_all(NOTES)
    provider = OpenAIProvider(
        base_url=openai_server.base_url, api_key="sk-test", max_retries=0, timeout=2
    )
    ix = make_index({"embedding": {"retry_after_seconds": 0.2}}, provider)
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    before = cached(str(make_index.db))
    window = ix.config.index.vector_window_tokens

    def hashes(spans: list[tuple[str, int | None, int | None]]) -> list[str]:
        found = ix.on_writer(lambda c: cache_hashes(c, spans, window)).result(timeout=30)
        assert found is not None
        return found

    line = hashes([("memory/2024-05-01.md", 3, 3)])
    whole = hashes([("memory/2024-05-01.md", None, None)])
    other = hashes([("memory/2024-05-02.md", None, None)])
    # a chunk's own text and its vector windows: what is cached of them is among them
    assert set(line) & before and set(line) <= set(whole)
    assert not set(whole) & set(other) and set(other) & before
    assert hashes([("memory/2024-05-01.md", 40, 50)]) == []  # past the file's last line
    gone = ix.on_writer(lambda c: purge_cache(c, whole)).result(timeout=30)
    assert gone == len(set(whole) & before)
    after = cached(str(make_index.db))
    assert not after & set(whole) and set(other) & before <= after
