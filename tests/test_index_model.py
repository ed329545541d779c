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
