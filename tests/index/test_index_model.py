"""The bundled local model, for real, inside the index: meaning beats shared words."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine_util import IndexFactory, search
from memoryd.embeddings.local import LocalProvider

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def local() -> Iterator[LocalProvider]:
    provider = LocalProvider(threads=2)
    yield provider
    provider.close()


def test_semantic_match_without_shared_words(
    make_index: IndexFactory, local: LocalProvider
) -> None:
    make_index.write(
        "memory/2024-03-01.md", "# 2024-03-01\n\n- Saw the physician about my sore throat.\n"
    )
    make_index.write("memory/2024-03-02.md", "# 2024-03-02\n\n- Repainted the garage door green.\n")
    make_index.write(
        "memory/2024-03-03.md", "# 2024-03-03\n\n- Booked flights to Lisbon for June.\n"
    )
    ix = make_index({}, local, "test")
    ix.sync()
    assert ix.wait_embedded(timeout=120)
    resp = search(ix, "visit to the doctor", mode="vector", min_score=0.0)
    assert resp.results[0].path == "memory/2024-03-01.md"
    resp = search(ix, "holiday travel plans", min_score=0.0)
    assert resp.mode_used == "hybrid"
    assert resp.results[0].path == "memory/2024-03-03.md"
    # No query word occurs in the note, and the hybrid score still passes the default bar.
    assert search(ix, "doctor appointment").results[0].path == "memory/2024-03-01.md"
    rrf = search(ix, "doctor appointment", fusion="rrf")
    assert rrf.results and rrf.results[0].path == "memory/2024-03-01.md"
    # Nothing near: a rank of 1 is not relevance, and min_score still filters under rrf.
    for fusion in ("weighted", "rrf"):
        assert search(ix, "xyzzy plugh", fusion=fusion).results == [], fusion


def test_the_english_model_embeds_no_cjk_query_so_an_unrelated_one_finds_nothing(
    make_index: IndexFactory, local: LocalProvider
) -> None:
    # MiniLM puts any two Chinese texts close (cosine ~0.4-0.5): before, 天气预报 (weather
    # forecast) "found" the database note by vector alone.
    make_index.write("memory/2024-05-01.md", "# 项目笔记\n\n- 数据库选择：PostgreSQL。\n")
    make_index.write("memory/2024-05-02.md", "# 日本語メモ\n\n- 東京で新しいプロジェクト。\n")
    make_index.write("MEMORY.md", "# Memory\n\n- The user drinks oolong tea.\n")
    ix = make_index({}, local, "test")
    ix.sync()
    assert ix.wait_embedded(timeout=120)
    for query in ("天气预报", "天気はどう", "날씨"):
        resp = search(ix, query)
        assert resp.results == [] and resp.mode_used == "keyword"
        assert resp.degraded is not None and "English model" in resp.degraded
    assert [h.path for h in search(ix, "数据库").results] == ["memory/2024-05-01.md"]
    assert search(ix, "what tea does the user like").mode_used == "hybrid"
