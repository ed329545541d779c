"""The chunks of the days a question names (candidates.day_candidates): from the keyword
copy's columns (build.chunks_on_days) the ids SQLite gives, through writes and deletes; from
SQLite through the partial index chunks_by_day, not a scan of every chunk. And the days a
query names (query.query_days) remembered per query, no list shared between callers."""

from __future__ import annotations

from typing import Any

from memoryd.index.keyword.build import chunks_on_days
from memoryd.index.search.candidates import Filters, day_candidates
from memoryd.index.search.query import query_days
from memoryd_client.search_terms import SOURCES


def test_a_named_days_chunks_come_from_the_day_index_in_id_order(make_index: Any) -> None:
    for day in ("2023-10-12", "2023-10-13", "2023-10-14"):
        body = "\n".join(f"## Part {k}\n- note {k} of {day}\n" + "word " * 300 for k in range(3))
        make_index.write(f"memory/{day}.md", body)
    make_index.write("MEMORY.md", "# Undated\n- a curated note\n")
    ix = make_index()
    ix.sync()
    every = Filters(SOURCES, None, None, None)
    with ix.readers.borrow() as r:
        rows = r.conn.execute("SELECT id, day, source FROM chunks ORDER BY id").fetchall()
        want = [i for i, day, _ in rows if day in ("2023-10-13", "2023-10-12")]
        assert len(want) >= 4
        assert day_candidates(r.conn, ["2023-10-13", "2023-10-12"], every, 100) == want
        assert day_candidates(r.conn, ["2023-10-13", "2023-10-12"], every, 3) == want[:3]
        assert day_candidates(r.conn, ["2023-10-15"], every, 100) == []
        curated = Filters(("curated",), None, None, None)
        assert day_candidates(r.conn, ["2023-10-13"], curated, 100) == []
        asked: list[tuple[str, Any]] = []

        def traced(_cursor: Any, sql: str, bindings: Any) -> bool:
            asked.append((sql, bindings))
            return True

        r.conn.exec_trace = traced
        try:
            day_candidates(r.conn, ["2023-10-13"], every, 10)
        finally:
            r.conn.exec_trace = None
        ((sql, bindings),) = asked
        plan = r.conn.execute("EXPLAIN QUERY PLAN " + sql, bindings).fetchall()
    assert any("USING INDEX chunks_by_day" in str(step) for step in plan), plan


def test_the_days_a_query_names_are_a_new_list_each_time() -> None:
    q = "What did we decide on 3 June 2023 and on 2023-06-04?"
    first = query_days(q)
    assert first == ["2023-06-04", "2023-06-03"] or first == ["2023-06-03", "2023-06-04"]
    first.append("changed")
    assert query_days(q) == first[:2]
    assert query_days("nothing dated here") == []


def test_the_keyword_copy_gives_the_ids_sqlite_gives(make_index: Any) -> None:
    days = ("2023-10-12", "2023-10-13", "2023-10-14")
    for day in days:
        make_index.write(
            f"memory/{day}.md", f"# {day}\n" + "\n".join(f"- {k} " * 80 for k in range(40))
        )
    make_index.write("sessions/2023-10-13-chat.jsonl", "")
    make_index.write("MEMORY.md", "# Undated\n- a curated note\n")
    ix = make_index()
    ix.sync()
    keywords = ix.copies.keywords
    assert keywords is not None and keywords.docs_now() is not None

    def both(asked: list[str], filters: Filters, limit: int) -> tuple[list[int], list[int]]:
        with ix.readers.borrow() as r:
            return (
                day_candidates(r.conn, asked, filters, limit, keywords),
                day_candidates(r.conn, asked, filters, limit),
            )

    mem, every = Filters(("memory",), None, None, None), Filters(SOURCES, None, None, None)
    for asked in (["2023-10-13"], ["2023-10-14", "2023-10-12"], ["2023-02-31"], ["2024-01-01"]):
        for filters in (mem, every):
            for limit in (0, 1, 5, 400):
                copy, sql = both(asked, filters, limit)
                assert copy == sql, (asked, filters, limit)
    assert len(both(["2023-10-13"], every, 400)[0]) > 5
    make_index.write("memory/2023-10-13.md", "# shorter now\n- one line\n")  # ids change
    (make_index.ws / "memory" / "2023-10-12.md").unlink()
    ix.sync()
    for asked in (["2023-10-13"], ["2023-10-12", "2023-10-14"]):
        copy, sql = both(asked, every, 40)
        assert copy == sql
    assert both(["2023-10-12"], every, 40) == ([], [])
    docs = keywords.docs_now()
    assert chunks_on_days(None, ["2023-10-13"], SOURCES, 40) is None  # no copy
    assert chunks_on_days(docs, ["13 Oct 2023"], SOURCES, 40) is None  # not a day it holds
    assert chunks_on_days(docs, ["2023-10-13"], ("elsewhere",), 40) is None
    assert chunks_on_days(docs, ["2023-10-13"], SOURCES, -1) is None  # SQLite: no limit
