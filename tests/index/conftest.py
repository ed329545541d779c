"""Fixtures the index's tests share."""

from __future__ import annotations

import apsw
import pytest

from memoryd.index.keyword.text import FTS_TOKENIZER, TokenizeOffsets


@pytest.fixture(scope="module")
def tokenize() -> TokenizeOffsets:
    """The index's own FTS5 tokenizer, with each token's byte offsets (as LineStems gets it)."""
    porter = apsw.Connection(":memory:").fts5_tokenizer(*FTS_TOKENIZER)

    def run(raw: bytes) -> list[tuple[int, int, str]]:
        return porter(
            raw,
            apsw.FTS5_TOKENIZE_DOCUMENT,
            None,  # type: ignore[no-any-return]
            include_offsets=True,
            include_colocated=False,
        )

    return run
