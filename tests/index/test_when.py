"""The time a query names, read relative to a given today."""

from __future__ import annotations

import datetime as dt

import pytest

from memoryd.index.search.when import understood

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
