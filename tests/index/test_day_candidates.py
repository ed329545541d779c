"""The chunks of the days a question names (candidates.day_candidates) read through the
partial index chunks_by_day, not a scan of every chunk; and the days a query names
(query.query_days) remembered per query without sharing a list between callers."""

from __future__ import annotations

from typing import Any

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
