"""Keyword search in Chinese, Japanese and Korean: words inside runs of characters with no
spaces, mixed with English, around full-width punctuation; snippets, ranking, the upgrade
of an index made before CJK bigrams."""

from __future__ import annotations

import apsw
import pytest

from engine_util import IndexFactory, paths, search
from memoryd import sqlite
from memoryd.index import schema
from memoryd.index.keyword.text import (
    FTS_TOKENIZER,
    cjk_run,
    has_cjk,
    keyword_text,
    may_hold_cjk,
    with_offsets,
)

ZH = "memory/2024-05-01.md"
JA = "memory/2024-05-02.md"
KO = "memory/2024-05-03.md"
EN = "MEMORY.md"
NOTES = {
    EN: "# Memory\n\n- The user drinks oolong tea every morning.\n",
    ZH: "# 项目笔记\n\n"
    "- 会议记录：我们讨论了缓存策略。\n"
    "- 数据库选择：PostgreSQL，因为团队熟悉。\n"
    "- 下周去北京出差。\n",
    JA: "# 日本語メモ\n\n"
    "- 東京で新しいプロジェクトを始めました。\n"
    "- データベースの移行は来週です。\n",
    KO: "# 한국어 메모\n\n"
    "- 오늘 서울에서 회의가 있었습니다.\n"
    "- 데이터베이스 백업을 매일 실행합니다.\n",
}


@pytest.fixture
def ix(make_index: IndexFactory):  # type: ignore[no-untyped-def]
    make_index.write_all(NOTES)
    index = make_index()
    index.sync()
    return index


@pytest.mark.parametrize(
    ("query", "path", "line"),
    [
        ("缓存", ZH, "缓存策略"),  # two characters inside 我们讨论了缓存策略
        ("北京", ZH, "北京出差"),
        ("数据库", ZH, "数据库选择"),  # three
        ("会议记录", ZH, "会议记录"),
        ("東京", JA, "東京で"),  # kanji before kana
        ("プロジェクト", JA, "プロジェクト"),  # katakana inside a kana + kanji run
        ("移行", JA, "移行は来週"),
        ("서울", KO, "서울에서"),  # Korean: a word with its particle attached
        ("백업", KO, "백업을"),
    ],
)
def test_a_cjk_word_inside_a_longer_run_is_found_and_its_line_is_the_snippet(
    ix, query: str, path: str, line: str
) -> None:  # type: ignore[no-untyped-def]
    resp = search(ix, query, mode="keyword")
    assert paths(resp)[:1] == [path], query
    assert line in resp.results[0].snippet


def test_a_query_mixing_cjk_and_english_finds_the_note_with_both(ix) -> None:  # type: ignore[no-untyped-def]
    for query in ("PostgreSQL 数据库", "PostgreSQL数据库", "数据库选择：PostgreSQL"):
        assert paths(search(ix, query, mode="keyword"))[:1] == [ZH], query
    # English words next to CJK characters are still stemmed English words
    assert paths(search(ix, "postgres", mode="keyword")) == []
    assert paths(search(ix, "postgresql", mode="keyword")) == [ZH]


def test_full_width_punctuation_separates_words_and_finds_nothing_alone(ix) -> None:  # type: ignore[no-untyped-def]
    assert paths(search(ix, "（数据库）", mode="keyword"))[:1] == [ZH]
    assert paths(search(ix, "「東京」、", mode="keyword"))[:1] == [JA]
    for query in ("：", "。、「」", "，！？"):
        assert search(ix, query).results == [], query


@pytest.mark.parametrize("query", ["天气预报", "コーヒー", "날씨", "天気はどう"])
def test_a_query_sharing_no_word_with_any_note_finds_nothing(ix, query: str) -> None:  # type: ignore[no-untyped-def]
    assert search(ix, query).results == []
    assert search(ix, query, mode="keyword", min_score=0.0).results == []


def test_a_sentence_question_ranks_the_note_that_answers_it(make_index: IndexFactory) -> None:
    make_index.write("memory/a.md", "# 备份\n\n数据库备份每天凌晨执行，保留七天。\n")
    make_index.write("memory/b.md", "# 选择\n\n数据库选择了PostgreSQL。\n")
    make_index.write("memory/c.md", "# 其他\n\n今天下雨，没有出门。\n")
    ix = make_index()
    ix.sync()
    found = paths(search(ix, "数据库备份保留几天？", mode="keyword", min_score=0.0))
    assert found[:2] == ["memory/a.md", "memory/b.md"]
    assert "memory/c.md" not in found


def test_the_snippet_of_a_long_chunk_centres_on_the_matched_cjk_line(
    make_index: IndexFactory,
) -> None:
    filler = [f"- 第{i}条：今天天气很好，我们在公园里散步聊天，一切如常。" for i in range(40)]
    lines = ["# 日志", "", *filler[:25], "- 重要：服务器迁移计划定在周五。", *filler[25:]]
    make_index.write("memory/log.md", "\n".join(lines) + "\n")
    ix = make_index({"index": {"chunk_tokens": 2000, "chunk_overlap": 0}})
    ix.sync()
    hit = search(ix, "迁移计划", mode="keyword").results[0]
    assert hit.start_line == 1 and hit.end_line >= 40  # one chunk holds every line
    assert "服务器迁移计划" in hit.snippet
    assert len(hit.snippet) <= 700
    assert hit.snippet_start_line <= 28 <= hit.snippet_end_line  # its own line range
    assert hit.snippet_start_line > 1


def test_an_index_made_before_cjk_bigrams_upgrades_without_losing_a_note(
    make_index: IndexFactory,
) -> None:
    make_index.write_all(NOTES)
    ix = make_index()
    ix.sync()
    ix.close()
    # Turn it back into what the previous release left: 0001_core's triggers, raw text.
    conn = schema.connect(make_index.db)
    with conn:
        conn.execute(
            """
            DROP TRIGGER chunks_fts_insert; DROP TRIGGER chunks_fts_delete;
            CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
                INSERT INTO chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
            END;
            CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
                INSERT INTO chunks_fts(chunks_fts, rowid, text, heading)
                    VALUES ('delete', old.id, old.text, old.heading);
            END;
            DELETE FROM meta WHERE key = 'keyword_text';
            INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
            """
        )
        chunks = conn.execute("SELECT id, text FROM chunks ORDER BY id").fetchall()
    # Before the upgrade, FTS5 finds English and not a word inside a CJK run.
    assert conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'oolong'").fetchall()
    assert not conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH '缓存'").fetchall()
    conn.close()

    again = make_index()  # opening upgrades it on the writer thread, before any sync
    again.sync()
    for query, path in (("缓存", ZH), ("東京", JA), ("서울", KO), ("oolong", EN)):
        assert paths(search(again, query, mode="keyword"))[:1] == [path], query
    conn = schema.connect(make_index.db)
    assert conn.execute("SELECT id, text FROM chunks ORDER BY id").fetchall() == chunks
    assert schema.get_meta(conn)["keyword_text"] == "cjk-bigrams-1"
    # FTS5 itself (not only the in-memory copy) finds the words; deleting every chunk
    # through the new triggers leaves no stale keyword behind.
    assert conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH '缓存'").fetchall()
    assert schema.upgrade_keyword_text(conn) is None  # once
    with conn:
        conn.execute("DELETE FROM chunks")
    assert conn.execute("SELECT count(*) FROM chunks_vocab").fetchall() == [(0,)]
    assert sqlite.quick_check(conn) is None


def test_a_cjk_run_becomes_bigrams_a_single_character_stays_itself() -> None:
    assert keyword_text("数据库选择：PostgreSQL") == " 数据 据库 库选 选择 ：PostgreSQL"
    assert keyword_text("猫が好き") == " 猫が が好 好き "
    assert keyword_text("A猫B") == "A 猫 B"
    assert keyword_text("plain english, café") == "plain english, café"


@pytest.mark.parametrize(
    "text",
    [
        "数据库选择：PostgreSQL，因为团队熟悉。",
        "東京で新しいプロジェクトを始めました running tests",
        "데이터베이스 백업을 매일 실행합니다.\n둘째 줄",
        "naïve café 猫 ｶﾀｶﾅ 々 々々 ・ ＡＢＣ 𠀀𠀁",
        "line one\n\n中文\nmixed中文words and 2024年5月",
    ],
)
def test_the_snippet_tokens_are_the_index_tokens_with_offsets_into_the_text(text: str) -> None:
    porter = apsw.Connection(":memory:").fts5_tokenizer(*FTS_TOKENIZER)

    def tokenize(raw: bytes) -> list[tuple[int, int, str]]:
        return porter(raw, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_colocated=False)  # type: ignore[return-value]

    indexed = [t for _, _, t in tokenize(keyword_text(text).encode())]
    found = with_offsets(tokenize)(text.encode())
    assert [t for _, _, t in found] == indexed
    raw = text.encode()
    for start, end, token in found:  # a bigram's offsets are its own characters'
        assert raw[start:end].decode() == token or not cjk_run().fullmatch(token)


def test_every_cjk_character_starts_as_the_quick_test_looks_for() -> None:
    """has_cjk skips the scan (and its compile) when may_hold_cjk says no: every character
    of the class, over all of Unicode, must make it say yes, alone and among other
    non-ASCII characters."""
    run = cjk_run()
    missed = [
        hex(cp)
        for cp in range(0x80, 0x110000)
        if not 0xD800 <= cp <= 0xDFFF
        and run.match(chr(cp))
        and not (may_hold_cjk(chr(cp).encode()) and may_hold_cjk(f"é{chr(cp)}\u2019".encode()))
    ]
    assert missed == []


def test_emoji_and_their_variation_selector_are_not_taken_for_cjk() -> None:
    """f0 9f (most emoji), ef b8 8f (U+FE0F), e1 ba (Vietnamese letters) share a lead byte
    with CJK characters, not a second one: no scan for them."""
    for text in ("a star \U0001f31f", "a heart \u2764\ufe0f", "Vi\u1ec7t", "\ufeffBOM", "\ufffd"):
        assert not may_hold_cjk(text.encode()), text
    for text in ("\U00020000", "\uf900", "\uff66", "\u1100", "\u3005"):
        assert may_hold_cjk(text.encode()), text


@pytest.mark.parametrize(
    ("text", "cjk"),
    [
        ("curly \u201cquotes\u201d \u2014 and dashes, café, naïve", False),
        ("an emoji \U0001f600 and an ideographic space \u3000", False),  # lead f0 / e3: scanned
        ("ﾀ", True),
        ("mixed 中 and “quotes”", True),
        ("𠀀", True),
        ("ᄀ", True),
    ],
)
def test_text_with_or_without_a_cjk_character(text: str, cjk: bool) -> None:
    assert has_cjk(text) is cjk
    assert (keyword_text(text) != text) is cjk
