"""Search behaviour that does not need an embedding model: keyword path, filters, snippets."""

from __future__ import annotations

import pytest

from engine_util import IndexFactory, paths, search
from memoryd.errors import InvalidParams

NOTES = {
    "MEMORY.md": "# Memory\n\n## Preferences\n\nThe user drinks oolong tea every morning.\n",
    "memory/2024-05-01.md": "# 2024-05-01\n\n- Fixed the garden fence.\n- Oolong tea ran out.\n",
    "memory/2024-06-15.md": "# 2024-06-15\n\n- Driving to the coast with Priya.\n",
    "memory/projects/kite.md": "# Kite\n\nBuilding a kite from bamboo.\n",
}


@pytest.fixture
def ix(make_index: IndexFactory):  # type: ignore[no-untyped-def]
    make_index.write_all(NOTES)
    index = make_index()
    index.sync()
    return index


@pytest.mark.parametrize(
    "query",
    [
        'tea" OR "x',
        "tea AND",
        "NEAR(tea fence)",
        "text:tea",
        "tea*",
        "(tea",
        "^tea",
        "-tea",
        "tea:",
        "tea OR OR",
        "{text heading}: tea",
        "\x00tea",
        "tea NOT fence",
    ],
)
def test_user_input_is_never_fts_syntax(ix, query: str) -> None:  # type: ignore[no-untyped-def]
    resp = search(ix, query, min_score=0.0)
    assert resp.results, query
    assert all("tea" in h.snippet.lower() or "fence" in h.snippet.lower() for h in resp.results)


@pytest.mark.parametrize("query", ['"', "'", "...", "?!"])
def test_punctuation_only_query_finds_nothing_without_error(ix, query: str) -> None:  # type: ignore[no-untyped-def]
    assert search(ix, query).results == []


def test_only_stop_words_still_searches(ix) -> None:  # type: ignore[no-untyped-def]
    assert search(ix, "the").mode_used == "keyword"


def test_keyword_only_hits_pass_the_default_min_score(ix) -> None:  # type: ignore[no-untyped-def]
    resp = search(ix, "oolong tea")
    assert resp.mode_used == "keyword"
    assert set(paths(resp)) == {"MEMORY.md", "memory/2024-05-01.md"}
    assert all(h.score >= 0.35 for h in resp.results)
    assert resp.degraded and "provider" in resp.degraded


def test_porter_stemming_matches_word_forms(ix) -> None:  # type: ignore[no-untyped-def]
    assert paths(search(ix, "drives")) == ["memory/2024-06-15.md"]
    assert paths(search(ix, "building kites")) == ["memory/projects/kite.md"]


def test_path_prefix_filter(ix) -> None:  # type: ignore[no-untyped-def]
    assert paths(search(ix, "tea", path_prefix="memory/")) == ["memory/2024-05-01.md"]
    assert search(ix, "tea", path_prefix="memory/2099").results == []
    assert search(ix, "tea", path_prefix="memory/%").results == []  # LIKE wildcards are literal


def test_date_filters_keep_only_dated_chunks_in_range(ix) -> None:  # type: ignore[no-untyped-def]
    assert paths(search(ix, "tea", since="2024-05-01")) == ["memory/2024-05-01.md"]
    assert paths(search(ix, "tea coast", until="2024-05-31")) == ["memory/2024-05-01.md"]
    assert paths(search(ix, "tea coast", since="2024-06-01", until="2024-06-30")) == [
        "memory/2024-06-15.md"
    ]


def test_source_filter_excludes_memory(ix) -> None:  # type: ignore[no-untyped-def]
    assert search(ix, "tea", sources=("sessions",)).results == []


def test_max_results_and_min_score_are_honoured(ix) -> None:  # type: ignore[no-untyped-def]
    assert len(search(ix, "tea", max_results=1).results) == 1
    loose = search(ix, "tea fence coast kite", min_score=0.0, max_results=10).results
    strict = search(ix, "tea fence coast kite", min_score=0.5, max_results=10).results
    assert len(strict) < len(loose)
    assert all(h.score >= 0.5 for h in strict)


@pytest.mark.parametrize(
    "kw",
    [
        {"max_results": 0},
        {"max_results": 101},
        {"min_score": 1.5},
        {"mode": "fuzzy"},
        {"fusion": "max"},
        {"sources": ("email",)},
        {"sources": ()},
        {"since": "May 1"},
        {"until": "2024-01-05\n"},  # $ would match before the newline
        {"since": "\uff12\uff10\uff12\uff14-01-01"},  # full-width digits: \d takes them
    ],
)
def test_bad_search_params_are_invalid_params(ix, kw) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidParams) as err:
        search(ix, "tea", **kw)
    assert err.value.data == {"param": next(iter(kw))}  # the wire's data.param


@pytest.mark.parametrize("query", ["   ", "tea " * 3000])
def test_empty_or_huge_query_is_invalid(ix, query: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidParams) as err:
        search(ix, query)
    assert err.value.data == {"param": "query"}


def test_snippet_is_centred_on_the_matching_line(make_index: IndexFactory) -> None:
    filler = [
        f"- Line {i}: routine notes about nothing in particular, padding text." for i in range(40)
    ]
    filler[30] = "- Line 30: the passport is in the blue drawer."
    make_index.write("memory/2024-01-01.md", "\n".join(filler) + "\n")
    ix = make_index(
        {"index": {"chunk_tokens": 2000, "chunk_overlap": 0}, "search": {"snippet_chars": 300}}
    )
    ix.sync()
    hit = search(ix, "where is the passport").results[0]
    assert (hit.start_line, hit.end_line) == (1, 40)
    assert "passport is in the blue drawer" in hit.snippet
    assert len(hit.snippet) <= 300
    assert hit.snippet_start_line <= 31 <= hit.snippet_end_line
    lines = (make_index.ws / "memory/2024-01-01.md").read_text().split("\n")
    assert hit.snippet == "\n".join(lines[hit.snippet_start_line - 1 : hit.snippet_end_line])


def test_snippet_shows_the_head_of_the_line_after_its_window(make_index: IndexFactory) -> None:
    filler = [
        f"- Line {i}: routine notes about nothing in particular, padding text." for i in range(40)
    ]
    filler[0] = "- Line 0: where did I put the passport?"
    filler[1] = "- Line 1: in the blue drawer, under the maps. " + "More details here. " * 20
    make_index.write("memory/2024-01-01.md", "\n".join(filler) + "\n")
    ix = make_index(
        {"index": {"chunk_tokens": 2000, "chunk_overlap": 0}, "search": {"snippet_chars": 300}}
    )
    ix.sync()
    hit = search(ix, "passport").results[0]
    assert len(hit.snippet) <= 300
    assert (hit.snippet_start_line, hit.snippet_end_line) == (1, 2)  # the cut line counts
    shown = hit.snippet.split("\n")
    assert shown[0] == filler[0]
    assert shown[1].startswith("- Line 1: in the blue drawer") and shown[1].endswith("…")


def test_a_partial_line_needs_room_for_more_than_a_label() -> None:
    from memoryd.index.search.snippets import MIN_PARTIAL, fill_after

    lines = ["- [D1:1] A: short question?", "- [D1:2] B: " + "a long answer " * 30]
    body = lines[0]
    small = len(body) + 1 + MIN_PARTIAL  # one character short once the ellipsis is counted
    assert fill_after(lines, 0, body, small) == (body, 0)
    text, last = fill_after(lines, 0, body, small + 20)
    assert last == 1 and text.startswith(body + "\n- [D1:2] B: a long") and text.endswith("…")
    assert len(text) <= small + 20
    assert fill_after(lines, 1, lines[1], 10_000) == (lines[1], 1)  # nothing follows


def test_the_snippet_window_holds_the_best_line_over_a_run_of_weaker_ones() -> None:
    from memoryd.index.search.snippets import best_window

    # The answer (line 1, all three query words) is long; three short lines after it name one
    # word each and together outscore it. The window must still show the answer.
    lines = [
        "- intro",
        "- Jon: yesterday I went to a fair to show off my dance studio " + "x" * 120,
        "- Gina: congrats on the fair!",
        "- Jon: the studio is doing well.",
        "- Gina: dance on!",
    ]
    scores = [0.0, 3.0, 1.2, 1.2, 1.2]
    first, last = best_window(lines, scores, 200)
    assert first <= 1 <= last
    assert best_window(lines, [0.0] * 5, 200)[0] == 0  # nothing matched: from the top


def test_snippet_of_one_long_line_is_cut_around_the_match(make_index: IndexFactory) -> None:
    make_index.write("memory/a.md", "word " * 500 + "the zeppelin landed " + "word " * 500 + "\n")
    ix = make_index({"index": {"chunk_tokens": 4000, "chunk_overlap": 0}})
    ix.sync()
    hit = search(ix, "zeppelin").results[0]
    assert "zeppelin" in hit.snippet and len(hit.snippet) <= 702


def test_rrf_fusion_is_accepted_in_keyword_only_mode(ix) -> None:  # type: ignore[no-untyped-def]
    assert paths(search(ix, "kite", fusion="rrf")) == ["memory/projects/kite.md"]


def test_search_reports_generation_and_timing(ix) -> None:  # type: ignore[no-untyped-def]
    resp = search(ix, "tea")
    assert resp.index_generation >= len(NOTES)
    assert resp.took_ms >= 0 and resp.pending_files == 0
    d = resp.to_dict()
    assert {"results", "provider", "model", "mode_used", "took_ms", "index_generation"} <= set(d)


@pytest.mark.parametrize(
    ("query", "days"),
    [
        ("what happened on 2024-05-01?", ["2024-05-01"]),
        ("notes from 1 May 2024", ["2024-05-01"]),
        ("June 15th, 2024 trip", ["2024-06-15"]),
        ("shared on December 1,2023", ["2023-12-01"]),
        ("the 3rd of Sept 2023", ["2023-09-03"]),
        ("in May 2024", []),  # partial dates say nothing about one day
        ("on 2024-13-40", []),
    ],
)
def test_full_dates_in_a_query_are_recognised(query: str, days: list[str]) -> None:
    from memoryd.index.search.query import query_days

    assert query_days(query) == days


def test_a_query_naming_a_date_prefers_that_days_log(make_index: IndexFactory) -> None:
    make_index.write("memory/2024-05-01.md", "# 2024-05-01\n\n- Met Sam for lunch.\n")
    make_index.write("memory/2024-05-02.md", "# 2024-05-02\n\n- Met Sam for lunch again, lunch.\n")
    ix = make_index()
    ix.sync()
    assert paths(search(ix, "lunch with Sam"))[0] == "memory/2024-05-02.md"
    assert paths(search(ix, "lunch with Sam on 1 May 2024"))[0] == "memory/2024-05-01.md"


def test_a_query_naming_a_date_finds_the_next_days_note_that_says_last_night(
    make_index: IndexFactory,
) -> None:
    make_index.write(
        "memory/2024-05-02.md", "# 2024-05-02\n\n- Had dinner with Priya last night.\n"
    )
    make_index.write(
        "memory/2024-05-09.md", "# 2024-05-09\n\n- Had dinner with Sam, a long dinner.\n"
    )
    ix = make_index()
    ix.sync()
    assert paths(search(ix, "who did I have dinner with"))[0] == "memory/2024-05-09.md"
    assert (
        paths(search(ix, "who did I have dinner with on 1 May 2024"))[0] == "memory/2024-05-02.md"
    )


def test_the_days_a_note_names_are_single_days_before_it() -> None:
    from memoryd.index.search.line_days import named_days, on_named_day

    text = "- ran 3 days ago\n- on Wednesday we met\n- last week was long\n- tomorrow: dentist"
    assert named_days(text, "2023-05-04") == {"2023-05-01", "2023-05-03"}  # a Thursday
    assert named_days(text, "") == frozenset()  # MEMORY.md has no day
    assert on_named_day("2023-05-04", text, ["2023-05-04"])
    assert on_named_day("2023-05-04", text, ["2023-05-03"])
    assert not on_named_day("2023-05-04", text, ["2023-04-28"])  # inside "last week" only


def test_snippet_shows_what_follows_a_match(make_index: IndexFactory) -> None:
    lines = [
        f"- filler line {i} with enough words to take up room in the budget." for i in range(30)
    ]
    lines[10] = "- Q: where did we park the camper van?"
    lines[11] = "- A: behind the old mill, next to the river."
    make_index.write("memory/a.md", "\n".join(lines) + "\n")
    ix = make_index(
        {"index": {"chunk_tokens": 2000, "chunk_overlap": 0}, "search": {"snippet_chars": 200}}
    )
    ix.sync()
    hit = search(ix, "camper van").results[0]
    assert "camper van" in hit.snippet and "old mill" in hit.snippet


def test_huge_queries_are_bounded(ix) -> None:  # type: ignore[no-untyped-def]
    words = " ".join(f"w{i}" for i in range(1300)) + " tea"
    assert len(words) < 8192
    search(ix, words)  # more terms than SQLite has variables for would fail without the cap
    with pytest.raises(InvalidParams):
        search(ix, "tea " * 5000)


def test_words_in_most_chunks_do_not_change_the_keyword_top(make_index: IndexFactory) -> None:
    """keyword_ranked leaves words found in >= half the chunks out of its first query; the
    BM25 top must be the one of the whole OR query, including when the other words find
    fewer chunks than asked for."""
    from memoryd.index.search.candidates import Filters, keyword_candidates
    from memoryd.index.search.fusion import doc_freqs, keyword_ranked
    from memoryd.index.search.query import fts_match, query_terms

    for day in range(1, 29):
        lines = [f"- Caroline: item {day}-{i} about the weather and walks" for i in range(30)]
        if day % 4 == 0:
            lines[day % 30] = f"- Caroline: the budget for trip {day} went over again"
        make_index.write(f"memory/2024-02-{day:02d}.md", "\n".join(lines) + "\n")
    ix = make_index({"index": {"chunk_tokens": 64, "chunk_overlap": 8}})
    ix.sync()
    from memoryd.index.readers import Reader

    reader = Reader(make_index.db)
    conn = reader.conn
    try:
        tokenize = reader.tokenize
        filters = Filters(("memory",), None, None, None)
        for query in ["Caroline budget", "caroline weather budget trip", "Caroline walks"]:
            terms = query_terms(query)
            stems = {t: [s for _, _, s in tokenize(t.encode())] for t in terms}
            n, df = doc_freqs(conn, [s for ss in stems.values() for s in ss])
            assert 2 * df["carolin"] >= n  # the speaker's name is everywhere
            for limit in (3, 8, 40, 400):
                fast = keyword_ranked(conn, terms, stems, n, df, filters, limit)
                full = keyword_candidates(conn, fts_match(terms), filters, limit)
                assert [i for i, _ in fast] == [i for i, _ in full]
                assert [round(s, 4) for _, s in fast] == [round(s, 4) for _, s in full]
    finally:
        conn.close()


def test_path_prefix_is_case_sensitive_even_when_the_other_case_fills_the_limit(
    make_index: IndexFactory,
) -> None:
    # LIKE ignores ASCII case: "memory%" matched MEMORY.md's 40 chunks, which filled the
    # LIMIT and were then dropped by the exact check, leaving nothing.
    section = "## Zebra {}\n\n" + "zebra " * 24 + "\n\n"  # one chunk of 32 tokens each
    make_index.write("MEMORY.md", "".join(section.format(i) for i in range(40)))
    for day in ("2024-05-01", "2024-05-02", "2024-05-03"):
        make_index.write(f"memory/{day}.md", f"# {day}\n\n- saw one zebra today\n")
    ix = make_index({"index": {"chunk_tokens": 32, "chunk_overlap": 0}})
    ix.sync()
    assert ix.status()["chunks"] > 40
    got = paths(search(ix, "zebra", path_prefix="memory", min_score=0.0, max_results=10))
    assert sorted(got) == [f"memory/2024-05-0{d}.md" for d in (1, 2, 3)]
    assert set(paths(search(ix, "zebra", path_prefix="MEMORY", min_score=0.0))) == {"MEMORY.md"}
