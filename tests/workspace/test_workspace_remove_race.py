"""A workspace removed (its index deleted) while a search of it is under way: the search
is answered ``unavailable``, never ``internal`` (it was apsw.CantOpenError from a reader
opened on the deleted file, at index/readers.py)."""

from __future__ import annotations

import pytest

from engine_util import IndexFactory, search
from memoryd.errors import IndexUnavailable


def test_a_search_after_its_index_was_closed_and_deleted_is_unavailable(
    make_index: IndexFactory,
) -> None:
    """What a search that had resolved its workspace meets when ``workspace.remove
    {delete_index: true}`` ran meanwhile: the index closed, its files deleted."""
    make_index.write("memory/2025-01-01.md", "- kiwi note\n")
    ix = make_index()
    ix.sync()
    assert search(ix, "kiwi", path_prefix="memory/").results  # through the reader pool
    ix.close()
    for suffix in ("", "-wal", "-shm"):
        make_index.db.with_name(make_index.db.name + suffix).unlink(missing_ok=True)
    with pytest.raises(IndexUnavailable, match="closed"):
        search(ix, "kiwi", path_prefix="memory/")
