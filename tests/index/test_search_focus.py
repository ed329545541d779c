"""What a question asks of a line beyond its words: a "when" question prefers the line that
says when (search/focus.py), and verbs of speech are not what a question asks about
(query.SPEECH_VERBS)."""

from __future__ import annotations

import re
import sys
from re import _compiler as sre_compiler  # type: ignore[attr-defined]
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any

import pytest

from engine_util import IndexFactory, paths, search
from memoryd.index.search import focus
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


def _first_items(items: Any, flags: int) -> list[tuple[Any, Any, int]]:
    """What each alternative of a parsed pattern begins with: (op, arg, flags) items."""
    op, av = items[0]
    if op is sre.SUBPATTERN:
        _group, add, remove, inner = av
        return _first_items(inner, (flags | add) & ~remove)
    if op is sre.BRANCH:
        return [f for alt in av[1] for f in _first_items(alt, flags)]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        low, _high, inner = av
        assert low >= 1  # an optional first item would let the next one begin a match
        return _first_items(inner, flags)
    return [(op, av, flags)]


def test_the_lookahead_admits_exactly_what_an_alternative_can_begin_with() -> None:
    # focus._STARTS is tried before the alternatives: it must never refuse a character one
    # of them begins with (else a line naming a time would go unseen), over all of Unicode,
    # as sre itself matches them (case folding included: U+017F for s, U+212A for k).
    parsed = sre_parser.parse(focus._TIME_WORDS)
    firsts = _first_items(parsed.data, parsed.state.flags)
    assert len(firsts) > 30
    items = []
    for op, av, flags in firsts:
        state = sre_parser.State()
        state.flags = flags
        items.append(sre_compiler.compile(sre_parser.SubPattern(state, [(op, av)]), flags))
    starts = re.compile(focus._STARTS)
    wrong = [
        c
        for c in map(chr, range(sys.maxunicode + 1))
        if any(p.match(c) for p in items) != bool(starts.match(c))
    ]
    assert wrong == []


@pytest.mark.parametrize(
    "line",
    [
        "I went there yesterday",
        "\u017fix weeks ago",  # a long s: "six" to re.IGNORECASE
        "We met Last Summer.",
        "in May 2022",
        "on a monday",
        "on Monday",
        "a couple of years ago",
        "12 days ago",
        "x1999y",
        "the 1999 tour",
        "tonight!",
        "nothing here",
        "Few months ago",
        "İn March",
    ],
)
def test_a_line_names_a_time_as_the_alternatives_alone_say(line: str) -> None:
    alone = re.compile(r"\b" + focus._TIME_WORDS)
    assert timed_lines(line) == (alone.search(line) is not None,)


@pytest.mark.parametrize(
    "query",
    [
        "When did Melanie paint a sunrise?",
        "  when?",
        "Since WHEN has she known?",
        "How long ago was the trip?",
        "What date is the party?",
        "which Month did they move",
        "What T\u0131ME is it",  # a dotless i: "time" to re.IGNORECASE
        "What wee\u212a",  # the Kelvin sign: "week"
        "What fields would Caroline be likely to pursue?",
        "Whenever she can",
        "what dates",
        "Where is the key?",
    ],
)
def test_asks_when_says_what_the_pattern_alone_says(query: str) -> None:
    # the substring test before it must never refuse a question the pattern matches
    alone = re.compile(focus._WHEN_Q, re.I)
    assert asks_when(query) is (alone.match(query) is not None)
