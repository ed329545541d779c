"""The time a query names, read relative to a given today."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from memoryd.index.search.line_days import named_days, on_named_day, reaches
from memoryd.index.search.query import query_days
from memoryd.index.search.when import understood
from memoryd.index.types import SearchRequest

FRIDAY = dt.date(2026, 11, 27)


@pytest.mark.parametrize(
    ("text", "since", "until"),
    [
        ("what did we do yesterday", "2026-11-26", "2026-11-26"),
        ("today's decisions", "2026-11-27", "2026-11-27"),
        ("notes from last week", "2026-11-16", "2026-11-22"),
        ("this week", "2026-11-23", "2026-11-27"),
        ("what happened in March", "2026-03-01", "2026-03-31"),
        ("in December", "2025-12-01", "2025-12-31"),  # the last one, not the coming one
        ("in May 2023", "2023-05-01", "2023-05-31"),
        ("since Monday", "2026-11-23", None),
        ("on 2025-03-11", "2025-03-11", "2025-03-11"),
        ("before 2024", None, "2023-12-31"),
        ("after 2024-01-05", "2024-01-06", None),
        ("until March 2025", None, "2025-03-31"),
        ("last month", "2026-10-01", "2026-10-31"),
        ("last 3 days", "2026-11-25", "2026-11-27"),
        ("last friday", "2026-11-20", "2026-11-20"),
        ("since March 2025, before 2026", "2025-03-01", "2025-12-31"),
    ],
)
def test_times_are_read_as_day_ranges(text: str, since: str | None, until: str | None) -> None:
    assert understood(text, FRIDAY) == (since, until)


@pytest.mark.parametrize(
    "text",
    ["hello world", "may I ask a question", "When did Caroline go to the support group?", ""],
)
def test_text_without_a_time_names_none(text: str) -> None:
    assert understood(text, FRIDAY) is None


@pytest.mark.parametrize(
    ("text", "since", "until"),
    [
        # a day written out is that day, with its year (it was read as the whole month of
        # today's year: "October 13, 2023" said in 2026 became October 2026)
        ("What did Melanie show on October 13, 2023?", "2023-10-13", "2023-10-13"),
        ("what happened October 13, 2023", "2023-10-13", "2023-10-13"),
        ("on 3 June 2023", "2023-06-03", "2023-06-03"),
        ("on Sept. 4 2025", "2025-09-04", "2025-09-04"),
        ("the 13th of October, 2023 meeting", "2023-10-13", "2023-10-13"),
        ("since the 5th of March 2025", "2025-03-05", None),
        ("before June 3rd, 2023", None, "2023-06-02"),
        ("until June 3rd, 2023", None, "2023-06-03"),
        # no year: the last such day not after today
        ("on May 20", "2026-05-20", "2026-05-20"),
        ("on December 25", "2025-12-25", "2025-12-25"),
        ("on 27 November", "2026-11-27", "2026-11-27"),
        # a month and a year still is the month
        ("in May 2023", "2023-05-01", "2023-05-31"),
        ("in March, 2024", "2024-03-01", "2024-03-31"),
    ],
)
def test_a_day_written_out_is_read_as_that_day(
    text: str, since: str | None, until: str | None
) -> None:
    assert understood(text, FRIDAY) == (since, until)


def test_a_day_the_month_does_not_have_names_no_time() -> None:
    assert understood("on February 30, 2024", FRIDAY) is None


# The letters IGNORECASE matches with ASCII ones (re's case folding): the long s, the dotted
# capital I (and the dotless i, the Kelvin sign). A name written with one matches a pattern;
# it must be read as that name, not looked up as it is (a KeyError: the search failed).
LONG_S, DOTTED_I = "\u017f", "\u0130"
S, DI = LONG_S, DOTTED_I


@pytest.mark.parametrize(
    ("text", "since", "until"),
    [
        (f"what did we paint on Augu{S}t 13, 2023", "2023-08-13", "2023-08-13"),
        (f"on the 13th of {S}eptember", "2026-09-13", "2026-09-13"),
        (f"in Augu{S}t 2023", "2023-08-01", "2023-08-31"),
        (f"in {S}eptember 2025", "2025-09-01", "2025-09-30"),
        (f"on Tue{S}day", "2026-11-24", "2026-11-24"),
        (f"{S}ince Monday", "2026-11-23", None),
        (f"notes from th{DI}s week", "2026-11-23", "2026-11-27"),
        (f"two weeks ago, on {S}unday", "2026-11-22", "2026-11-22"),
    ],
)
def test_names_written_with_letters_ignorecase_folds_are_read_as_those_names(
    text: str, since: str | None, until: str | None
) -> None:
    assert understood(text, FRIDAY) == (since, until)
    ascii_text = text.replace(LONG_S, "s").replace(DOTTED_I, "i")
    assert understood(ascii_text, FRIDAY) == (since, until)


def test_a_date_written_with_such_letters_is_the_querys_day() -> None:
    assert query_days(f"what did Melanie paint on Augu{S}t 13, 2023?") == ["2023-08-13"]
    assert query_days(f"and on 14 {S}ept 2023, or on 2023-10-13?") == ["2023-10-13", "2023-09-14"]
    assert query_days(f"on 14 {S}ept 2023") == query_days("on 14 sept 2023")


def test_a_search_naming_such_a_day_answers(make_index: Any) -> None:
    """Through a real index: the question's day is a candidate's, and the search answers."""
    make_index.write("memory/2023-08-13.md", "# Day\n- Melanie painted a sunrise.\n")
    make_index.write("memory/2023-08-20.md", "# Day\n- Melanie painted the fence.\n")
    ix = make_index()
    ix.sync()
    req = SearchRequest(
        f"What did Melanie paint on Augu{S}t 13, 2023?",
        max_results=2,
        mode="keyword",
        today="2023-12-01",
    )
    assert ix.search(req).results[0].path == "memory/2023-08-13.md"  # the day's own note
    req = SearchRequest(f"Melanie in Augu{S}t?", max_results=2, mode="keyword", today="2023-12-01")
    assert {h.path for h in ix.search(req).results} == {
        "memory/2023-08-13.md",
        "memory/2023-08-20.md",
    }


# The calendar's ends (date.min, date.max): a time past them is no time, not an error (an
# OverflowError failed the search).
@pytest.mark.parametrize(
    ("text", "today", "expected"),
    [
        ("notes after 9999-12-31", FRIDAY, None),
        ("before 0001-01-01", FRIDAY, None),
        ("after 9999-12-31, before 2026", FRIDAY, (None, "2025-12-31")),
        ("999 days ago", dt.date(2, 1, 1), None),
        ("in December", dt.date(1, 1, 5), None),
        ("on 9999-12-31", FRIDAY, ("9999-12-31", "9999-12-31")),
    ],
)
def test_a_time_past_the_calendars_ends_is_no_time(
    text: str, today: dt.date, expected: tuple[str | None, str | None] | None
) -> None:
    assert understood(text, today) == expected


def test_notes_near_the_calendars_ends_name_their_days() -> None:
    assert reaches(("9999-12-25", "2023-10-13")) == ("9999-12-31", "2023-11-13")
    assert on_named_day("9999-12-26", "- Yesterday we painted.", ["9999-12-25"])
    assert named_days("- Yesterday, and 3 days ago.", "0001-01-02") == {"0001-01-01"}


def test_a_search_naming_a_day_near_the_calendars_end_answers(make_index: Any) -> None:
    make_index.write("memory/9999-12-25.md", "# Day\n- Melanie painted a sunrise.\n")
    make_index.write("memory/9999-12-26.md", "# Day\n- Yesterday Melanie painted a fence.\n")
    make_index.write("memory/2023-08-20.md", "# Day\n- Melanie painted the fence.\n")
    ix = make_index()
    ix.sync()
    for mode in ("keyword", "hybrid"):
        req = SearchRequest(
            "What did Melanie paint on December 25, 9999?", max_results=3, mode=mode
        )
        hits = ix.search(req).results
        assert {h.path for h in hits[:2]} == {"memory/9999-12-25.md", "memory/9999-12-26.md"}


def test_the_quick_test_passes_what_the_one_ignorecase_alternation_did() -> None:
    """may_name_a_time (substring tests on the folded, lower-cased text) against the regex it
    replaced, on words in every case, the letters IGNORECASE matches with ASCII ones
    (long s, Kelvin sign, dotted and dotless i), digits of other scripts and noise."""
    import random
    import re

    from memoryd.index.search import when

    old = re.compile(
        r"\d{4}|today|yesterday|ago|last|this|past|since|after|before|until|till|"
        + "|".join(when._MONTHS)
        + "|"
        + "|".join(when._DAYS),
        re.I,
    )
    rnd = random.Random(38)
    words = [*when._CHEAP_WORDS, "sunrise", "Melanie", "pasta", "mon", "2023", "٢٠٢٣", "12a4"]
    odd = ["\u017f", "\u212a", "\u0130", "\u0131", "K", "S", "I", " ", "-", "é", "\u00df"]

    def variant(word: str) -> str:
        out = []
        for ch in word:
            r = rnd.random()
            if r < 0.3:
                ch = ch.upper()
            elif r < 0.4:
                ch = {"s": "\u017f", "k": "\u212a", "i": rnd.choice("\u0130\u0131")}.get(ch, ch)
            out.append(ch)
        return "".join(out)

    for _ in range(20000):
        parts = [
            variant(rnd.choice(words)) if rnd.random() < 0.5 else rnd.choice(odd)
            for _ in range(rnd.randrange(1, 4))
        ]
        if rnd.random() < 0.5:  # a word cut short, or a random character
            parts.append(variant(rnd.choice(words))[: rnd.randrange(1, 5)])
        text = "".join(parts)
        assert when.may_name_a_time(text) == bool(old.search(text)), repr(text)


def test_the_names_and_month_lengths_written_out_are_the_calendar_modules() -> None:
    import calendar

    from memoryd.index.search import when

    assert [m.lower() for m in calendar.month_name[1:]] == when._MONTHS
    assert list(when.DAY_NAMES) == list(calendar.day_name)
    for year in [*range(1, 2101), 9999]:
        for month in range(1, 13):
            assert when.month_days(year, month) == calendar.monthrange(year, month)[1]
