"""The markdown chunker and the transcript line packer (index/chunker.py), and the token costs
it budgets with (index/token_costs.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.index import token_costs
from memoryd.index.chunker import Chunk, chunk_lines, chunk_markdown
from memoryd.index.token_costs import count_tokens

TOK = load_tokenizer()


def ntokens(text: str) -> int:
    return len(TOK.encode(text, add_special_tokens=False))


def is_fragment(chunk: Chunk, lines: list[str]) -> bool:
    return chunk.start_line == chunk.end_line and chunk.text != lines[chunk.start_line - 1]


def squash(text: str) -> str:
    return "".join(c for c in text if not c.isspace())


# --- generated markdown -------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    text: str
    level: int = 0  # heading level, 0 otherwise
    title: str = ""


WORDS = [
    "memory",
    "Caroline",
    "painting",
    "the",
    "of",
    "support",
    "group",
    "2023-05-08",
    "[D1:3]",
    "sunrise",
    "counseling",
    "naïve",
    "café",
    "日本語",
    "emoji😀",
    "x",
    "",
    "supercalifragilisticexpialidocious",
    "don't",
    "e.g.",
    "#tag",
    "-",
    "*",
    "`code`",
]
word = st.one_of(
    st.sampled_from(WORDS),
    st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
        min_size=1,
        max_size=12,
    ).filter(lambda w: "#" not in w and w.strip()),
)
sentence = st.lists(word, min_size=1, max_size=25).map(lambda ws: " ".join(ws).strip() or "x")


@st.composite
def heading(draw: st.DrawFn) -> list[Line]:
    level = draw(st.integers(1, 6))
    title = draw(sentence.filter(lambda s: not s.startswith(("-", "*"))))
    return [Line(f"{'#' * level} {title}", level, title)]


paragraph = st.lists(sentence, min_size=1, max_size=8).map(lambda ss: [Line(s) for s in ss])
blank = st.sampled_from(["", "   ", "\r", "\t"]).map(lambda s: [Line(s)])
fence = st.lists(st.one_of(sentence, st.just("# not a heading"), st.just("")), max_size=12).map(
    lambda body: [Line("```python"), *(Line(b) for b in body), Line("```")]
)
long_line = st.lists(word, min_size=150, max_size=600).map(lambda ws: [Line(" ".join(ws))])
long_word = st.builds(lambda c, n: [Line(c * n)], st.sampled_from("xé日"), st.integers(101, 4000))
block = st.one_of(
    heading(), heading(), paragraph, paragraph, blank, blank, fence, long_line, long_word
)
budgets = st.sampled_from([(32, 0), (32, 8), (64, 16), (128, 30), (400, 80)])


def expected_paths(doc: list[Line]) -> list[tuple[str, ...]]:
    stack: list[tuple[int, str]] = []
    out = []
    for line in doc:
        if line.level:
            stack = [s for s in stack if s[0] < line.level] + [(line.level, line.title)]
        out.append(tuple(t for _, t in stack))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(block, max_size=30).map(lambda bs: [x for b in bs for x in b]), budgets, st.booleans()
)
def test_generated_markdown_chunks_keep_every_line_within_budget(
    doc: list[Line], budget: tuple[int, int], trailing_newline: bool
) -> None:
    chunk_tokens, overlap = budget
    text = "\n".join(d.text for d in doc) + ("\n" if trailing_newline else "")
    lines = text.split("\n")
    chunks = chunk_markdown(text, TOK, chunk_tokens, overlap)
    paths = expected_paths(doc)
    heading_lines = {i + 1 for i, d in enumerate(doc) if d.level}

    covered: set[int] = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.text.strip()
        assert ntokens(c.text) <= chunk_tokens
        assert count_tokens([c.text], TOK)[0] <= chunk_tokens
        assert c.heading_path == paths[c.start_line - 1]
        if is_fragment(c, lines):
            assert c.text in lines[c.start_line - 1]
        else:
            assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
            assert lines[c.start_line - 1].strip() and lines[c.end_line - 1].strip()
        covered.update(range(c.start_line, c.end_line + 1))
    assert all(i + 1 in covered for i, line in enumerate(lines) if line.strip())

    for a, b in pairwise(chunks):
        assert a.start_line <= b.start_line
        if is_fragment(a, lines) or is_fragment(b, lines) or b.start_line > a.end_line:
            continue
        assert b.start_line > a.start_line  # an overlap never repeats a whole chunk
        shared = lines[b.start_line - 1 : a.end_line]
        assert ntokens("\n".join(shared)) <= overlap
        # The overlap stays in b's section: a heading can only be its first line.
        assert not heading_lines & set(range(b.start_line + 1, a.end_line + 1))

    # Fragments of one line, in order, give back the line's non-whitespace content.
    by_line: dict[int, list[str]] = {}
    for c in chunks:
        if is_fragment(c, lines):
            by_line.setdefault(c.start_line, []).append(c.text)
    for n, frags in by_line.items():
        assert squash("".join(frags)) == squash(lines[n - 1])


# --- examples -----------------------------------------------------------------------------


def test_empty_and_blank_text_give_no_chunks() -> None:
    assert chunk_markdown("", TOK) == []
    assert chunk_markdown("\n\n   \n\t\r\n", TOK) == []
    assert chunk_lines([], TOK) == []


def test_small_sections_merge_into_one_chunk() -> None:
    text = "# A\nalpha\n\n## B\nbeta\n# C\ngamma\n"
    assert chunk_markdown(text, TOK) == [Chunk(1, 7, text.rstrip("\n"), ("A",))]


def test_heading_path_is_the_stack_in_force_at_the_first_line() -> None:
    filler = "\n".join(
        f"- [D1:{i}] Caroline: I went to a support group yesterday, it was so powerful number {i}."
        for i in range(30)
    )
    text = (
        f"# 2023-05-08\n\n## Session 1 (1:56 pm on 8 May, 2023)\n\n{filler}\n\n"
        f"### Notes\n{filler}\n\n## Session 2\n{filler}\n"
    )
    chunks = chunk_markdown(text, TOK, 200, 40)
    assert chunks[0].heading_path == ("2023-05-08",)
    assert chunks[1].heading_path == ("2023-05-08", "Session 1 (1:56 pm on 8 May, 2023)")
    paths = {c.heading_path for c in chunks}
    assert ("2023-05-08", "Session 1 (1:56 pm on 8 May, 2023)", "Notes") in paths
    assert ("2023-05-08", "Session 2") in paths  # "Notes" is popped by the level-2 heading
    session2 = text.split("\n").index("## Session 2") + 1
    assert any(c.start_line == session2 for c in chunks)  # a section that fits starts a chunk


def test_heading_titles_drop_closing_hashes_and_carriage_returns() -> None:
    [chunk] = chunk_markdown("## Title ##\r\nbody\r\n", TOK)
    assert chunk.heading_path == ("Title",)
    assert chunk.text == "## Title ##\r\nbody\r"  # lines split on \n only


def test_hash_lines_inside_code_fences_are_not_headings() -> None:
    body = "\n".join(f"# comment {i}: the quick brown fox jumps over the dog" for i in range(40))
    text = f"# Real\n\n```python\n{body}\n\n~~~\n```\nafter the fence\n"
    chunks = chunk_markdown(text, TOK, 64, 16)
    assert len(chunks) > 3
    assert {c.heading_path for c in chunks} == {("Real",)}
    # Chunks starting inside the fence continue the section, so they carry overlap.
    assert all(b.start_line <= a.end_line for a, b in pairwise(chunks))


def test_tilde_fence_is_closed_only_by_tildes() -> None:
    text = "~~~\n```\n# inside\n~~~\n# Outside\ntext\n"
    chunks = chunk_markdown(text, TOK, 400, 0)
    assert chunks[0].heading_path == ()
    chunks = chunk_markdown(text, TOK, 4, 0)
    assert len(chunks) > 2
    assert [c.heading_path for c in chunks] == [
        () if c.start_line < 5 else ("Outside",) for c in chunks
    ]
    assert any(c.start_line == 5 for c in chunks)


def test_overlap_repeats_trailing_lines_within_budget() -> None:
    lines = [
        f"line {i}: Melanie painted a lake sunrise last year and it is special" for i in range(40)
    ]
    chunks = chunk_markdown("## Log\n" + "\n".join(lines), TOK, 100, 30)
    assert len(chunks) > 3
    for a, b in pairwise(chunks):
        assert a.start_line < b.start_line <= a.end_line
        assert 0 < ntokens("\n".join(a.text.split("\n")[b.start_line - a.start_line :])) <= 30
        assert ntokens(b.text) <= 100
        assert b.heading_path == ("Log",)


def test_overlap_never_crosses_into_the_previous_section() -> None:
    para = "\n".join(f"alpha {i} beta gamma delta epsilon" for i in range(12))
    text = f"# One\n{para}\n# Two\n{para}\n"
    chunks = chunk_markdown(text, TOK, 60, 30)
    two = text.split("\n").index("# Two") + 1
    assert any(c.start_line == two for c in chunks)
    assert not any(c.start_line < two < c.end_line for c in chunks)


def test_no_overlap_when_budget_is_zero() -> None:
    text = "\n".join(f"word{i} " * 10 for i in range(30))
    chunks = chunk_markdown(text, TOK, 64, 0)
    assert all(b.start_line > a.end_line for a, b in pairwise(chunks))


def test_single_huge_word_becomes_fragments_of_its_line() -> None:
    word = "x" * 5000  # WordPiece reads it as one [UNK]; it is costed per 4 characters
    chunks = chunk_markdown(f"# H\n\n{word}\n\nafter\n", TOK, 400, 80)
    frags = [c for c in chunks if c.start_line == 3]
    assert len(frags) == 4
    assert "".join(c.text for c in frags) == word
    assert all(c.end_line == 3 and c.heading_path == ("H",) for c in frags)
    assert all(count_tokens([c.text], TOK)[0] <= 400 for c in frags)
    assert chunks[-1].text == "after"  # a fragment's tail is not repeated as overlap


def test_long_line_is_cut_between_words() -> None:
    words = [f"token{i}" for i in range(600)]
    line = " ".join(words)
    chunks = chunk_markdown(line, TOK, 64, 16)
    assert len(chunks) > 5
    assert all(c.start_line == c.end_line == 1 for c in chunks)
    assert " ".join(c.text for c in chunks) == line
    assert all(ntokens(c.text) <= 64 for c in chunks)


CJK_LINES = {
    "zh": "我们今天讨论了数据库选择的问题，最后决定使用PostgreSQL作为主要的存储。" * 40,
    "ja": "データベースの選択について話し合いました。最終的にPostgreSQLを使うことにしました。" * 40,
    "ko": "오늘 우리는 데이터베이스 선택에 대해 논의했고 PostgreSQL을 사용하기로 했습니다. " * 40,
}


def test_cjk_lines_without_spaces_keep_the_budget_and_are_cut_after_a_sentence() -> None:
    for lang, line in CJK_LINES.items():
        chunks = chunk_markdown(f"# 笔记\n\n{line}\n", TOK, 200, 40)
        frags = [c for c in chunks if c.start_line == 3]
        assert len(frags) > 5, lang
        assert all(ntokens(c.text) <= 200 for c in frags), lang  # WordPiece: a Han per token
        assert squash("".join(c.text for c in frags)) == squash(line), lang
        if lang == "ko":  # spaced: cut between words
            assert " ".join(c.text for c in frags) == line.strip()
        else:  # no spaces: cut after a sentence, never mid-word
            assert all(c.text.endswith("。") for c in frags[:-1]), lang


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=16),
            st.sampled_from(
                [
                    " ",
                    "  ",
                    "\t",
                    "\u3000",
                    "\u00a0",
                    "\x1c",
                    "\u2028",
                    "\u0301",
                    "e\u0301",
                    "日本",
                    "[UNK]",
                    "##ing",
                    "Ǆ",
                    "İ",
                    "\ufeff",
                    "\x00",
                ]
            ),
        ),
        max_size=6,
    ).map("".join)
)
def test_count_tokens_is_exactly_the_tokenizer_count(text: str) -> None:
    # Counting sums cached per-word counts; this pins that the sum equals the real count.
    assert count_tokens([text], TOK) == [ntokens(text)]


def test_count_tokens_matches_tokenizer_for_ordinary_text() -> None:
    texts = ["", "  ", "Hey Mel! Good to see you!", "café 日本語 😀"]
    assert count_tokens(texts, TOK) == [ntokens(t) for t in texts]
    assert count_tokens(["y" * 400], TOK) == [100]


def test_a_batch_of_texts_counts_each_text_as_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # The words of all texts are looked up together; each text still gets its own sum, with
    # over-long (uncached) words, empty texts and a cache that overflows between calls.
    monkeypatch.setattr(token_costs, "_CACHE_ENTRIES", 8)
    texts = ["", " ", "alpha beta  gamma", "x" * 70 + " tail", "a\nb c", "beta", "日本語 text"]
    for _ in range(3):
        assert count_tokens(texts, TOK) == [ntokens(t) for t in texts]
        texts = [t + f" extra{len(t)}" for t in texts]


def test_counting_from_two_threads_at_once_gives_the_tokenizer_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A full cache is replaced, never cleared in place, while another thread may be reading it.
    monkeypatch.setattr(token_costs, "_CACHE_ENTRIES", 16)
    lines = [" ".join(f"w{k}x{i}" for i in range(k % 7 + 1)) for k in range(300)]
    want = [ntokens(t) for t in lines]
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda k: count_tokens(lines[k : k + 40], TOK), range(0, 300, 5)))
    assert got == [want[k : k + 40] for k in range(0, 300, 5)]


def test_chunk_lines_keeps_physical_line_numbers_and_joins_messages() -> None:
    msgs = [(2, "user: hello"), (5, "assistant: hi there"), (9, "   "), (12, "user: bye")]
    assert chunk_lines(msgs, TOK) == [
        Chunk(2, 12, "user: hello\nassistant: hi there\n   \nuser: bye", ())
    ]


def test_chunk_lines_packs_with_overlap_and_fragments_long_messages() -> None:
    msgs = [(i * 2, f"user: message number {i} about painting and counseling") for i in range(30)]
    long = "assistant: " + "\n".join(f"paragraph {i} " + "word " * 20 for i in range(20))
    msgs.append((100, long))
    chunks = chunk_lines(msgs, TOK, 64, 16)
    normal = [c for c in chunks if c.start_line < 100]
    assert all(b.start_line <= a.end_line for a, b in pairwise(normal))
    frags = [c for c in chunks if c.start_line == 100]
    assert len(frags) > 1 and all(ntokens(f.text) <= 64 for f in frags)
    # A multi-line message is cut at its line breaks when one is in reach.
    assert all(f.text.startswith(("assistant:", "paragraph")) for f in frags)
    assert squash("".join(f.text for f in frags)) == squash(long)
