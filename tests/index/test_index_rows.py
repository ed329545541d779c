"""What a search keeps for the next ones (index/search/rows.py) never outlives a change."""

from __future__ import annotations

from engine_util import IndexFactory, search
from memoryd.index.search.rows import ChunkRows, ParsedQueries, Row, read_rows
from memoryd_client.search_terms import SOURCE_MEMORY


def _row(text: str) -> Row:
    return Row("memory/a.md", "memory", "", 1, 1, "", text, False)


def test_rows_are_kept_for_their_generation_only() -> None:
    rows = ChunkRows()
    assert rows.get_many([1], 3) == {}
    rows.put_many({1: _row("old")}, 3)
    assert rows.get_many([1, 2], 3) == {1: _row("old")}
    assert rows.get_many([1], 4) == {}  # the index changed: nothing kept is used
    rows.put_many({1: _row("new")}, 3)  # read before the change: dropped
    assert rows.get_many([1], 4) == {}


def test_a_search_older_than_the_last_change_neither_reads_nor_keeps() -> None:
    rows = ChunkRows()
    rows.get_many([1], 5)
    rows.put_many({1: _row("at 5")}, 5)
    assert rows.get_many([1], 4) == {}
    rows.put_many({1: _row("at 4")}, 4)
    assert rows.get_many([1], 5) == {1: _row("at 5")}


def test_rows_beyond_capacity_drop_the_least_recently_used() -> None:
    rows = ChunkRows(capacity=2)
    rows.get_many([], 1)
    rows.put_many({1: _row("a"), 2: _row("b")}, 1)
    rows.get_many([1], 1)  # 1 used: 2 is the oldest now
    rows.put_many({3: _row("c")}, 1)
    assert set(rows.get_many([1, 2, 3], 1)) == {1, 3}


def test_a_lent_map_is_the_kept_generations_and_its_uses_count() -> None:
    rows = ChunkRows(capacity=2)
    rows.get_many([], 1)
    rows.put_many({1: _row("a"), 2: _row("b")}, 1)
    assert rows.lend(1, 0) is None  # a search older than the kept rows
    lent = rows.lend(1, 1)
    assert lent is not None
    kept, (uses, tick) = lent
    assert kept[1] == _row("a")
    uses[1] = tick  # as the compiled keyword hits record a use: 2 is the oldest now
    rows.put_many({3: _row("c")}, 1)
    assert set(rows.get_many([1, 2, 3], 1)) == {1, 3}
    assert rows.lend(1, 2) is not None and rows.get_many([1], 2) == {}  # a newer generation


def test_a_lent_map_never_shows_a_newer_generations_rows() -> None:
    """A search lends the kept map at its generation; before its compiled hits read it the
    index changes and a newer search keeps its rows (a chunk id reused by a file written
    again: another text). The lent map shows its own generation's rows or none, never
    those; and a forget (clear) empties it."""
    rows = ChunkRows(capacity=4)
    rows.get_many([], 1)
    rows.put_many({1: _row("old")}, 1)
    lent = rows.lend(1, 1)
    assert lent is not None
    kept, _ = lent
    assert rows.get_many([1], 2) == {}  # the index changed: a newer search
    rows.put_many({1: _row("new")}, 2)
    assert kept.get(1) in (_row("old"), None)
    assert rows.get_many([1], 2) == {1: _row("new")}
    now = rows.lend(1, 2)
    assert now is not None and now[0].get(1) == _row("new")
    rows.clear()
    assert not now[0]


def test_past_capacity_the_least_recently_used_eighth_goes_at_once() -> None:
    rows = ChunkRows(capacity=16)
    rows.get_many([], 1)
    rows.put_many({i: _row(str(i)) for i in range(16)}, 1)
    rows.get_many([0, 1], 1)  # used: the oldest are 2, 3, ...
    rows.put_many({16: _row("16")}, 1)  # 17 > 16: down to 14
    assert set(rows.get_many(list(range(17)), 1)) == {0, 1, *range(5, 17)}


def test_a_query_is_parsed_once() -> None:
    calls: list[str] = []

    def stems(term: str) -> list[str]:
        calls.append(term)
        return [term.rstrip("s")]

    parsed = ParsedQueries()
    first = parsed.get("teas and kites on 2024-05-01", stems)
    again = parsed.get("teas and kites on 2024-05-01", stems)
    assert again is first
    assert first.terms == ("teas", "kites", "2024", "05", "01")
    assert first.term_stems["teas"] == ["tea"]
    assert first.days == ("2024-05-01",)
    assert calls.count("teas") == 1


def test_a_search_after_a_rewrite_shows_the_new_text(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", "# 2024-05-01\n\n- Oolong tea ran out.\n")
    ix = make_index()
    ix.sync()
    assert "ran out" in search(ix, "oolong tea").results[0].snippet
    make_index.write("memory/2024-05-01.md", "# 2024-05-01\n\n- Oolong tea restocked.\n")
    make_index.bump_mtime("memory/2024-05-01.md")
    ix.sync()
    snippet = search(ix, "oolong tea").results[0].snippet
    assert "restocked" in snippet and "ran out" not in snippet


def test_a_read_rows_source_is_the_interned_string(make_index: IndexFactory) -> None:
    """read_rows interns each row's source, so a search's ``source in sources`` (the
    config's, literals) is an identity check (_compiled_top.c gather, Filters.accepted)."""
    make_index.write("memory/2024-05-01.md", "# 2024-05-01\n\n- Oolong tea ran out.\n")
    ix = make_index()
    ix.sync()
    assert search(ix, "oolong tea").results
    with ix.readers.borrow() as r:
        ids = [i for (i,) in r.conn.execute("SELECT id FROM chunks")]
        rows = read_rows(r.conn, ids, None, ix.generation)
    assert rows and all(row.source is SOURCE_MEMORY for row in rows.values())


def test_a_query_of_one_stem_a_term_keeps_them_in_order() -> None:
    """ParsedQuery.singles: each term's one stem, in query order (what the keyword copy
    ranks); None when a term has more than one (or none)."""

    def stems(term: str) -> list[str]:
        return {"kites": ["kite", "kit"], "none": []}.get(term, [term.rstrip("s")])

    parsed = ParsedQueries()
    assert parsed.get("teas and gardens", stems).singles == ("tea", "garden")  # "and": no term
    assert parsed.get("teas and kites", stems).singles is None
    assert parsed.get("none teas", stems).singles is None
    assert parsed.get("", stems).singles == ()
