"""The compiled line scores and snippet windows (index/_compiled_lines.c) against their Python
versions (snippets.py's py_line_scores, py_best_window): the same doubles, the same windows,
on random chunks. An install without a compiler has only the Python versions: these tests
are skipped there, and every other test runs the Python path."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search import snippets
from memoryd.index.search.snippets import LineStems, py_best_window, py_line_scores

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")


def test_snippets_uses_the_compiled_module_when_it_is_built() -> None:
    assert snippets.compiled is compiled


WORDS = st.sampled_from(["tea", "teas", "garden", "kite", "run", "the", "é", "x1", "a" * 300])
TEXT = st.lists(st.lists(WORDS, max_size=8).map(" ".join), min_size=1, max_size=40).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=8),
    weights=st.dictionaries(
        st.sampled_from(["tea", "garden", "kite", "run", "x1", "the", "zzz"]),
        st.floats(1e-9, 1e6),
        min_size=1,
        max_size=7,
    ),
)
def test_property_line_scores_the_same_doubles(
    tokenize: TokenizeOffsets, texts: list[str], weights: dict[str, float]
) -> None:
    cache = LineStems()
    chunks = [cache.get(i, t, tokenize) for i, t in enumerate(texts)]
    vocab = chunks[0].vocab
    query = sorted((n, w) for s, w in weights.items() if (n := vocab.get(s)) is not None)
    if not query:
        return
    want = py_line_scores(chunks, query, [c.n_lines for c in chunks])
    got = compiled.line_scores(chunks, [n for n, _ in query], [w for _, w in query])
    assert got == want
    assert [[x.hex() for x in g] for g in got] == [[x.hex() for x in w] for w in want]


def test_line_scores_above_the_filter_width_and_past_the_stack_buffer(
    tokenize: TokenizeOffsets,
) -> None:
    cache = LineStems()
    cache.get(0, " ".join(f"w{i}" for i in range(70_000)), tokenize)  # numbers past 65,535
    text = "\n".join(f"w{i} w{i + 65_536} common" for i in range(300))  # 300 lines: > 256
    chunk = cache.get(1, text, tokenize)
    query = sorted((chunk.vocab[s], w) for s, w in (("w5", 1.5), ("w65541", 0.25), ("common", 2.0)))
    want = py_line_scores([chunk], query, [chunk.n_lines])
    got = compiled.line_scores([chunk], [n for n, _ in query], [w for _, w in query])
    assert got == want
    assert got[0][5] == want[0][5] > 2.0  # w5, w65541 and common


def test_line_scores_refuses_bad_input(tokenize: TokenizeOffsets) -> None:
    chunk = LineStems().get(1, "tea\ngarden", tokenize)
    with pytest.raises(ValueError):
        compiled.line_scores([chunk], [2, 1], [1.0, 1.0])  # not ascending
    with pytest.raises(ValueError):
        compiled.line_scores([chunk], [1], [1.0, 2.0])
    with pytest.raises(TypeError):  # entries not bytes
        compiled.line_scores([chunk._replace(entries=chunk.stems)], [0], [1.0])
    with pytest.raises(ValueError):  # not (stem, line) pairs of int32
        compiled.line_scores([chunk._replace(entries=chunk.entries[:-1])], [0], [1.0])
    with pytest.raises(ValueError):  # a line beyond the chunk's
        compiled.line_scores([chunk._replace(n_lines=1)], [0, 1], [1.0, 1.0])


def _window_case(rng: random.Random) -> tuple[list[str], list[float], int]:
    n = rng.randint(0, 30)
    lines = ["x" * rng.choice([0, 3, 40, 120, 699, 700, 701, 2000]) for _ in range(n)]
    pool = [0.0, 0.0, 0.0, 1.0, 2.5, 0.1 + 0.2, rng.random(), rng.uniform(0, 1e6)]
    scores = [rng.choice(pool) for _ in range(n)]
    return lines, scores, rng.choice([1, 50, 300, 700, 5000])


def test_best_window_the_same_windows_on_random_chunks() -> None:
    rng = random.Random(38)
    for _ in range(20_000):
        lines, scores, budget = _window_case(rng)
        assert compiled.best_window(lines, scores, budget) == py_best_window(lines, scores, budget)


def test_best_window_edges() -> None:
    assert compiled.best_window([], [], 700) == py_best_window([], [], 700) == (0, 0)
    with pytest.raises(IndexError):
        compiled.best_window(["a", "b"], [1.0], 700)
    with pytest.raises(IndexError):
        py_best_window(["a", "b"], [1.0], 700)
    lines, scores = ["a", "b", "c"], [0.0, 3.0, 1.0, 9.0]  # more scores than lines
    assert compiled.best_window(lines, scores, 700) == py_best_window(lines, scores, 700)
    with pytest.raises(TypeError):
        compiled.best_window(["a"], ["x"], 700)


def test_an_install_without_it_answers_the_same(
    tokenize: TokenizeOffsets, monkeypatch: pytest.MonkeyPatch
) -> None:
    """snippets.line_scores and best_window with the module absent (an install without a
    compiler) and present: the same answers, through the same public functions."""
    rng = random.Random(39)
    cache = LineStems()
    words = ["tea", "garden", "kite", "run", "the", "x1"]
    texts = [
        "\n".join(
            " ".join(rng.choices(words, k=rng.randint(0, 9))) for _ in range(rng.randint(1, 30))
        )
        for _ in range(40)
    ]
    chunks = [cache.get(i, t, tokenize) for i, t in enumerate(texts)]
    weights = {"tea": 0.7, "kite": 2.25, "x1": 1e-3, "absent": 5.0}
    windows = [_window_case(rng) for _ in range(500)]

    def answers() -> tuple[list[list[float]], list[tuple[int, int]]]:
        return snippets.line_scores(chunks, weights), [snippets.best_window(*w) for w in windows]

    with_it = answers()
    monkeypatch.setattr(snippets, "compiled", None)
    assert answers() == with_it


def test_snippet_is_make_snippets() -> None:
    """compiled.snippet (shown.shown_hits' call) against snippets.make_snippet: the same
    Snippet (a Snippet, its text, first and last line), None where make_snippet cuts one
    line longer than the budget; windows of more lines (or fewer) than the chunk's span (a
    fragment, a transcript chunk) keep the chunk's span."""
    rng = random.Random(40)
    cut = 0
    for case in range(5_000):
        lines, scores, budget = _window_case(rng)
        if not lines:
            continue
        text = "\n".join(lines)
        start = rng.randint(1, 90)
        end = start + len(lines) - 1 + rng.choice((0, 0, 0, 2, -1))
        scores = [float(s) for s in scores]
        args = (text, start, end, scores, budget)
        made = compiled.snippet(*args, snippets.text_lines, snippets.whole_lines, snippets.Snippet)
        want = snippets.make_snippet(text, start, end, scores, ("tea",), budget)
        if made is None:
            cut += 1
            assert (
                snippets.whole_lines(text, *py_best_window(lines, scores, budget), budget) is None
            )
        else:
            assert type(made) is snippets.Snippet and made == want, case
    assert cut > 0
    with pytest.raises(TypeError):
        compiled.snippet("a", 1, 1, [1.0], 10, snippets.text_lines, snippets.whole_lines, list)
    with pytest.raises(TypeError):
        compiled.snippet("a", 1, 1, [1.0], 10)  # type: ignore[call-arg]
