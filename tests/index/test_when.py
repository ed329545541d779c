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
