"""Line scores (snippets.line_scores over LineStems): per line, the summed weight of the
distinct query stems it holds, with the index's own porter tokenizer; checked against a
plain per-line reference, in batches, and across a renewed stem numbering."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.index.keyword.text import TokenizeOffsets
from memoryd.index.search.snippets import ChunkLines, LineStems, line_scores, make_snippet


def reference(text: str, tokenize: TokenizeOffsets, weights: dict[str, float]) -> list[float]:
    out = []
    for line in text.split("\n"):
        stems = {s for _, _, s in tokenize(line.encode())}
        out.append(sum(w for s, w in weights.items() if s in stems))
    return out


def test_each_line_sums_the_distinct_query_stems_it_holds(tokenize: TokenizeOffsets) -> None:
    text = "# Garden\n\nThe gardens were watered; gardening again.\n\nTea, then tea.\n"
    lines = LineStems().get(1, text, tokenize)
    assert lines.n_lines == 6
    [scores] = line_scores([lines], {"garden": 2.0, "tea": 0.5, "absent": 9.0})
    # "gardens" and "gardening" stem to "garden": counted once on their line
    assert scores == [2.0, 0.0, 2.0, 0.0, 0.5, 0.0]


def test_a_batch_scores_each_chunk_as_alone(tokenize: TokenizeOffsets) -> None:
    cache = LineStems()
    texts = ["alpha beta\ngamma", "", "beta\n\nbeta alpha delta\n", "delta"]
    chunks = [cache.get(i, t, tokenize) for i, t in enumerate(texts)]
    weights = {"alpha": 1.5, "beta": 0.25, "delta": 3.0}
    batch = line_scores(chunks, weights)
    assert batch == [line_scores([c], weights)[0] for c in chunks]
    assert batch == [reference(t, tokenize, weights) for t in texts]
    assert line_scores(chunks, {}) == [[0.0] * c.n_lines for c in chunks]
    assert line_scores([], weights) == []


def test_chunks_numbered_before_and_after_a_renewal_score_alike(
    tokenize: TokenizeOffsets,
) -> None:
    cache = LineStems(max_stems=3)
    old = cache.get(1, "apple banana cherry date", tokenize)  # 4 stems: the next one renews
    new = cache.get(2, "date\napple elderberry", tokenize)
    assert old.vocab is not new.vocab
    assert cache.peek(1, "apple banana cherry date") is None  # the cache went with it
    weights = {"appl": 1.0, "date": 2.0}
    assert line_scores([old, new], weights) == [[3.0], [2.0, 1.0]]


def test_a_reused_chunk_id_with_new_text_is_not_served_the_old_lines(
    tokenize: TokenizeOffsets,
) -> None:
    cache = LineStems()
    cache.get(7, "old words here", tokenize)
    assert cache.peek(7, "brand new text") is None
    [scores] = line_scores([cache.get(7, "brand new text", tokenize)], {"old": 1.0, "new": 1.0})
    assert scores == [1.0]


WORDS = st.sampled_from(["tea", "teas", "garden", "kite", "run", "running", "the", "é", "x1"])
TEXT = st.lists(st.lists(WORDS, max_size=6).map(" ".join), min_size=1, max_size=8).map("\n".join)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=5),
    weights=st.dictionaries(
        st.sampled_from(["tea", "garden", "kite", "run", "x1", "zzz"]),
        st.floats(0.01, 10),
        max_size=4,
    ),
)
def test_property_batches_match_the_per_line_reference(
    tokenize: TokenizeOffsets, texts: list[str], weights: dict[str, float]
) -> None:
    cache = LineStems(max_stems=8)  # small: renewals happen mid-batch too
    chunks = [cache.get(i, t, tokenize) for i, t in enumerate(texts)]
    got = line_scores(chunks, weights)
    want = [reference(t, tokenize, weights) for t in texts]
    assert [len(g) for g in got] == [len(w) for w in want]
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w)


def bincount_line_scores(chunks: list[ChunkLines], weights: dict[str, float]) -> list[list[float]]:
    """The earlier line_scores: a bincount over every entry, weight 0.0 where no query stem."""
    vocab = chunks[0].vocab
    sizes = [c.n_lines for c in chunks]
    stems = np.concatenate([c.stems for c in chunks])
    offsets = np.cumsum([0, *sizes])
    line = np.concatenate([c.line for c in chunks]).astype(np.intp)
    line += np.repeat(offsets[:-1], [len(c.stems) for c in chunks])
    weight = np.zeros(len(stems))
    for s, w in weights.items():
        if (n := vocab.get(s)) is not None:
            weight[stems == n] = w
    flat = np.bincount(line, weights=weight, minlength=int(offsets[-1])).tolist()
    return [flat[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]


@settings(max_examples=80, deadline=None)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=6),
    weights=st.dictionaries(
        st.sampled_from(["tea", "garden", "kite", "run", "x1", "the", "zzz"]),
        st.floats(1e-6, 1e3),
        max_size=6,
    ),
)
def test_property_the_same_doubles_as_a_bincount_over_every_entry(
    tokenize: TokenizeOffsets, texts: list[str], weights: dict[str, float]
) -> None:
    cache = LineStems()
    chunks = [cache.get(i, t, tokenize) for i, t in enumerate(texts)]
    assert line_scores(chunks, weights) == bincount_line_scores(chunks, weights)


def test_a_window_shown_again_is_the_same_snippet_and_a_long_line_is_cut_at_its_words() -> None:
    text = "intro\nthe tea garden\nwe ran\n" + "word " * 80 + "kite here " + "word " * 80
    scores = [0.0, 2.0, 0.5, 0.0]
    first = make_snippet(text, 10, 13, scores, ("tea",), 60)
    again = make_snippet(text, 10, 13, scores, ("garden",), 60)
    assert first == again == ("intro\nthe tea garden\nwe ran", 10, 12)
    assert again.text is first.text  # kept: masked and packed again as the same string
    long_line = [0.0, 0.0, 0.0, 3.0]
    for term in ("kite", "word"):  # one line over the budget: cut around the query's words
        cut = make_snippet(text, 10, 13, long_line, (term,), 60)
        assert cut.start_line == cut.end_line == 13
        assert (term == "kite") == ("kite" in cut.text)


def test_a_chunks_entries_are_its_stems_then_its_lines_as_int32_read_through_views(
    tokenize: TokenizeOffsets,
) -> None:
    # Made without numpy (a first search runs before numpy is imported): the compiled line
    # scores read ``entries``, py_line_scores the two views as int32 arrays.
    chunk = LineStems().get(7, "the tea garden\n\nkite tea\nrun", tokenize)
    n = len(chunk.stems)
    assert chunk.stems.format == chunk.line.format == "i" and chunk.stems.itemsize == 4
    assert chunk.stems.obj is chunk.line.obj is chunk.entries
    as_array = np.frombuffer(chunk.entries, np.int32)
    assert as_array.tolist() == [*chunk.stems.tolist(), *chunk.line.tolist()]
    assert np.asarray(chunk.stems).dtype == np.int32 and len(as_array) == 2 * n
    pairs = list(zip(chunk.stems.tolist(), chunk.line.tolist(), strict=True))
    assert pairs == sorted(set(pairs))  # by stem, then line; distinct
    assert sorted({ln for _, ln in pairs}) == [0, 2, 3]  # the blank line holds none
    empty = LineStems().get(1, "\n", tokenize)
    assert (len(empty.stems), len(empty.line), empty.entries, empty.n_lines) == (0, 0, b"", 2)
