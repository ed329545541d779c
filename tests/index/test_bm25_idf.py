"""bm25.idf: FTS5's IDF with its floor, and never a math error when a document frequency
counted apart from the row count exceeds it (the fleet's remote search reads a workspace's
chunk count and its postings in two reads while a host may be publishing: a search once
failed with "math domain error" in CI)."""

from __future__ import annotations

import math

import pytest

from memoryd.index.keyword.bm25 import MIN_IDF, idf


@pytest.mark.parametrize("rows,df", [(10, 1), (10, 4), (1000, 3), (2, 1), (1, 0)])
def test_a_consistent_count_gives_fts5s_idf(rows: int, df: int) -> None:
    expected = math.log((rows - df + 0.5) / (df + 0.5))
    assert idf(rows, df) == (expected if expected > 0.0 else MIN_IDF)


@pytest.mark.parametrize("rows,df", [(10, 5), (10, 10), (4, 3)])
def test_a_stem_in_half_the_rows_or_more_gets_the_floor(rows: int, df: int) -> None:
    assert idf(rows, df) == MIN_IDF


@pytest.mark.parametrize("rows,df", [(1, 5), (3, 4), (3, 7), (100, 10_000)])
def test_more_postings_than_rows_is_the_floor_not_an_error(rows: int, df: int) -> None:
    assert idf(rows, df) == MIN_IDF
