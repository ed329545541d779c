"""What a question asks of a line beyond its words: a "when" question prefers the line that
says when (search/focus.py), and verbs of speech are not what a question asks about
(query.SPEECH_VERBS)."""

from __future__ import annotations

import pytest

from engine_util import IndexFactory, paths, search
from memoryd.index.search.focus import asks_when, refocus, timed_lines
from memoryd.index.search.query import query_terms


@pytest.mark.parametrize(
    ("query", "when"),
    [
        ("When did Melanie paint a sunrise?", True),
        ("  when was the fence fixed", True),
        ("How long ago was Caroline's 18th birthday?", True),
        ("What year did Nate get his turtles?", True),
        ("Which month was the trip?", True),
        ("What did Melanie paint?", False),
        ("Where did we go when it rained?", False),
    ],
)
def test_questions_asking_when(query: str, when: bool) -> None:
    assert asks_when(query) is when


@pytest.mark.parametrize(
    ("line", "timed"),
    [
        ("- [D1:3] Caroline: I went to a support group yesterday.", True),
        ("Yesterday I took the kids to the museum.", True),
        ("We went camping two weekends ago.", True),
        ("I painted that lake sunrise last year.", True),
        ("Back in 2019 I got my first turtles.", True),
        ("We met in May, on a Friday.", True),
        ("I may go to the lake.", False),  # a verb, not the month
        ("The sunrise over the lake was beautiful.", False),
    ],
)
def test_lines_naming_a_time(line: str, timed: bool) -> None:
    assert timed_lines(line) == (timed,)


def test_refocus_raises_only_matching_lines_that_say_when() -> None:
    text = "painted a sunrise\npainted a sunrise last year\nlast year\nnothing"
    scores = [2.0, 2.0, 0.0, 0.0]
    assert refocus(text, scores, True) == [2.0, 3.0, 0.0, 0.0]
    assert refocus(text, scores, False) is scores
    assert refocus("no time here\nnone", [1.0, 0.0], True) == [1.0, 0.0]


def test_a_when_question_prefers_the_line_that_says_when(make_index: IndexFactory) -> None:
    make_index.write(
        "memory/2023-05-08.md", "# 2023-05-08\n\n- Melanie painted the lake sunrise.\n"
    )
    make_index.write(
        "memory/2023-05-09.md", "# 2023-05-09\n\n- Melanie painted the lake sunrise last year.\n"
    )
    ix = make_index()
    ix.sync()
    # The shorter line ranks first by its words alone; asked when, the line saying when does.
    assert paths(search(ix, "Which lake sunrise did Melanie paint at dawn?"))[0] == (
        "memory/2023-05-08.md"
    )
    assert paths(search(ix, "When did Melanie paint the lake sunrise at dawn?"))[0] == (
        "memory/2023-05-09.md"
    )


def test_speech_verbs_are_not_what_a_question_asks_about() -> None:
    assert query_terms("What did Jon say about Gina's store?") == ["jon", "gina", "store"]
    assert query_terms("What does Jon tell Gina he won't do?") == ["jon", "gina", "won"]
    assert query_terms("what did he say") == ["say"]  # nothing else left: asked for
    assert query_terms("what did he") == ["what", "did", "he"]


def test_a_log_full_of_says_ranks_by_what_was_said(make_index: IndexFactory) -> None:
    make_index.write("memory/a.md", "# a\n\n- Jon says so, says the store is fine, he says.\n")
    make_index.write("memory/b.md", "# b\n\n- Jon: the store opens at nine.\n")
    ix = make_index()
    ix.sync()
    assert paths(search(ix, "What did Jon say about the store?"))[0] == "memory/b.md"
