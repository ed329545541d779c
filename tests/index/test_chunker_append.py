"""An append re-chunks only the tail (chunker.chunk_appended): the same chunks as a whole
re-chunk, whatever was appended, however often."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.index.chunker import chunk_appended, chunk_markdown, chunk_markdown_state
from test_chunker import Line, block, budgets, heading, paragraph, sentence

TOK = load_tokenizer()

# Daily-log shaped blocks (sections of bullets, the shape appends make) mixed with every
# other kind of block the chunker test draws, and appends that split a line in two.
bullets = st.lists(sentence, min_size=1, max_size=6).map(lambda ss: [Line(f"- {s}") for s in ss])
section = st.tuples(st.integers(1, 3), sentence, bullets).map(
    lambda t: [Line(f"{'#' * t[0]} {t[1]}", t[0], t[1]), Line(""), *t[2], Line("")]
)
daily_block = st.one_of(section, section, bullets, block)


def text_of(blocks: list[list[Line]]) -> str:
    return "\n".join(x.text for b in blocks for x in b)


@st.composite
def appends(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A document and the strings appended to it, one after another: whole blocks, with or
    without a newline before them, or part of a line (the rest comes with a later one)."""
    doc = text_of(draw(st.lists(daily_block, max_size=25))) + draw(st.sampled_from(["", "\n"]))
    added = []
    for _ in range(draw(st.integers(1, 5))):
        more = text_of(draw(st.lists(daily_block, min_size=1, max_size=4)))
        cut = draw(st.integers(0, len(more)))
        sep = draw(st.sampled_from(["", "\n", "\n\n"]))
        if draw(st.booleans()):
            added += [sep + more[:cut], more[cut:] + "\n"]
        else:
            added.append(sep + more + draw(st.sampled_from(["", "\n"])))
    return doc, added


def check_appends(doc: str, added: list[str], chunk_tokens: int, overlap: int) -> int:
    """Append each string in turn; the tail path must give a whole re-chunk's chunks.
    Returns how many appends took the tail path."""
    chunks, state = chunk_markdown_state(doc, TOK, chunk_tokens, overlap)
    assert chunks == chunk_markdown(doc, TOK, chunk_tokens, overlap)
    resumed = 0
    for more in added:
        doc += more
        whole = chunk_markdown(doc, TOK, chunk_tokens, overlap)
        # Only the lines from where the state says it needs them, as the index passes them.
        first = state.needs_from()
        tail = chunk_appended(state, "\n".join(doc.split("\n")[first:]), TOK, first)
        if tail is None:
            chunks, state = chunk_markdown_state(doc, TOK, chunk_tokens, overlap)
        else:
            kept, new = tail
            assert 0 <= kept <= len(chunks)
            chunks = chunks[:kept] + new
            resumed += 1
        assert chunks == whole
    return resumed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(appends(), budgets)
def test_appending_gives_the_chunks_of_a_whole_rechunk(
    case: tuple[str, list[str]], budget: tuple[int, int]
) -> None:
    check_appends(*case, *budget)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(heading(), paragraph, section), min_size=1, max_size=6),
    st.lists(st.one_of(heading(), paragraph, section, bullets), min_size=1, max_size=12),
    budgets,
)
def test_one_line_at_a_time(
    head: list[list[Line]], tail: list[list[Line]], budget: tuple[int, int]
) -> None:
    # Appended line by line, as a log grows: every line through the tail path or not.
    check_appends(text_of(head) + "\n", [x.text + "\n" for b in tail for x in b], *budget)


def test_a_long_daily_log_resumes_near_its_end() -> None:
    entries = [
        f"## 10:{i % 60:02d} meeting {i}\n\n- Talked with Alice about the build number {i}.\n"
        for i in range(300)
    ]
    doc = "# 2024-05-01\n\n" + "\n".join(entries)
    chunks, state = chunk_markdown_state(doc, TOK, 64, 16)
    doc += "\n## 11:00 standup\n\n- The deploy went fine.\n"
    tail = chunk_appended(state, doc, TOK)
    assert tail is not None
    kept, new = tail
    assert kept >= len(chunks) - 2 and len(new) <= 3  # only the last section or two again
    assert chunks[:kept] + new == chunk_markdown(doc, TOK, 64, 16)


def test_an_append_that_changes_the_top_level_split_is_chunked_whole() -> None:
    body = "\n".join(f"## part {i}\n\n- the quick brown fox number {i} jumps" for i in range(40))
    doc = f"intro line\n\n{body}\n"
    _, state = chunk_markdown_state(doc, TOK, 64, 16)
    # A level-1 heading now outranks every heading: the whole document splits anew.
    assert chunk_appended(state, doc + "# A new top\n\n- text\n", TOK) is None
    _, state = chunk_markdown_state(doc, TOK, 64, 16)
    tail = chunk_appended(state, doc + "## part 41\n\n- more\n", TOK)
    assert tail is not None
