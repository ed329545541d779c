"""The in-memory BM25: FTS5's own scores and top, committed changes only."""

from __future__ import annotations

import random
from pathlib import Path

import apsw
import numpy as np
import pytest

from engine_util import IndexFactory, in_memory, search
from memoryd import sqlite
from memoryd.index import schema
from memoryd.index.keyword.build import Postings
from memoryd.index.keyword.counts import fts5_stems
from memoryd.index.keyword.mirror import KeywordMirror
from memoryd.index.keyword.text import FTS_TOKENIZER
from memoryd.index.search.query import fts_match, query_terms
from memoryd.index.types import SearchRequest

_WORD_TEXT = """
paint painting garden bicycle teeth dentist travel portugal lisbon coffee tea budget deploy
server incident retro planning hiking camping kids museum pottery sunset turtle recipe ice
cream concert guitar novel library
"""
WORDS = _WORD_TEXT.split()
DAYS = ["", "2024-05-01", "2024-05-02", "2024-05-03", "2024-06-01"]
SELECT = "SELECT id, text, heading, source, day FROM chunks"


def index(
    tmp_path: Path, max_bytes: int = 1 << 30, prune_from: int = 0
) -> tuple[KeywordMirror, apsw.Connection]:
    conn = schema.connect(tmp_path / "ix.sqlite")
    schema.migrate(conn)
    schema.upgrade_keyword_text(conn)
    conn.execute(
        "INSERT INTO files(path, source, hash, mtime_ns, size, indexed_at) "
        "VALUES ('memory/x.md', 'memory', '', 0, 0, 0)"
    )
    mirror = KeywordMirror(max_bytes, prune_from=prune_from)  # 0: MaxScore whenever it can
    mirror.follow(conn, "keyword_mirror")
    mirror.load(conn.execute(SELECT), 0)
    return mirror, conn


def text(rng: random.Random, n: int) -> str:
    weights = [1 / (r + 1) for r in range(len(WORDS))]  # some words in most chunks
    return " ".join(rng.choices(WORDS, weights, k=n))


def insert(conn: apsw.Connection, rng: random.Random, n: int, source: str = "memory") -> None:
    conn.executemany(
        "INSERT INTO chunks(path, source, day, start_line, end_line, heading, text_hash, text, "
        "updated_at) VALUES ('memory/x.md', ?, ?, 1, 1, ?, '', ?, 0)",
        [
            (source, rng.choice(DAYS), text(rng, rng.randint(0, 3)), text(rng, rng.randint(1, 40)))
            for _ in range(n)
        ],
    )


def fts_top(
    conn: apsw.Connection, words: list[str], limit: int, where: str = "1", args: tuple = ()
) -> list[tuple[int, float]]:
    sql = (
        "SELECT c.id, -bm25(chunks_fts, 1.0, 0.5) AS r FROM chunks_fts "
        f"JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? AND {where} "
        "ORDER BY r DESC, c.id LIMIT ?"
    )
    return [(int(i), float(r)) for i, r in conn.execute(sql, (fts_match(words), *args, limit))]


def stems_of(words: list[str]) -> list[str]:
    stem = fts5_stems(apsw.Connection(":memory:"))
    return [stem(w)[0] for w in words]


def queries(rng: random.Random) -> list[list[str]]:
    out = [rng.sample(WORDS, rng.randint(1, 4)) for _ in range(12)]
    return [*out, ["paint", "painting"], ["zebra"], ["zebra", "coffee"], ["kids", "kids"]]


def assert_same(mirror: KeywordMirror, conn: apsw.Connection, rng: random.Random) -> None:
    for words in queries(rng):
        for limit in (1, 7, 50):
            assert mirror.top(stems_of(words), limit) == fts_top(conn, words, limit), words
    n, df = mirror.doc_freqs(stems_of(["kids", "zebra"])) or (0, {})
    vocab = dict(conn.execute("SELECT term, doc FROM chunks_vocab WHERE term IN ('kid', 'zebra')"))
    assert n == sqlite.scalar(conn, "SELECT count(*) FROM chunks")
    assert df == {"kid": vocab.get("kid", 0), "zebra": 0}


def test_scores_and_top_are_fts5s_through_inserts_deletes_and_reused_ids(
    tmp_path: Path,
) -> None:
    rng = random.Random(5)
    mirror, conn = index(tmp_path)
    for _ in range(8):
        with conn:
            insert(conn, rng, rng.randint(20, 120))
        assert_same(mirror, conn, rng)
        with conn:  # the highest ids too: SQLite hands them out again
            ids = [i for (i,) in conn.execute("SELECT id FROM chunks ORDER BY id DESC LIMIT 10")]
            conn.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in ids])
            conn.execute("DELETE FROM chunks WHERE abs(random()) % 3 = 0")
            insert(conn, rng, 15)
        assert_same(mirror, conn, rng)
    assert mirror.stats()["compactions"] > 0  # deleted postings were dropped on the way
    with conn:
        conn.execute("DELETE FROM chunks")
    assert all(mirror.top(stems_of(w), 5) == [] for w in queries(rng))


RARE = [f"{a}{b}" for a in ("zor", "quex", "blim", "vrat") for b in ("ala", "ino", "ust", "emo")]


def test_tops_scored_from_the_rarer_words_candidates_are_fts5s(tmp_path: Path) -> None:
    """Common words everywhere, a rare word here and there: most queries' tops are found
    among the chunks holding their rare words (the pruned path), and are FTS5's exactly,
    with filters, limits, repeated words, and after deletes."""
    rng = random.Random(23)
    mirror, conn = index(tmp_path)

    def chunk() -> str:
        words = rng.choices(WORDS[:4], k=rng.randint(3, 30))  # dense, tiny IDF
        words += rng.choices(WORDS[4:12], k=rng.choice([0, 0, 0, 1, 2]))  # in ~150 each
        words += rng.choices(RARE, k=rng.choice([0] * 8 + [1, 3]))  # in ~20 each
        rng.shuffle(words)
        return " ".join(words)

    def add(n: int) -> None:
        conn.executemany(
            "INSERT INTO chunks(path, source, day, start_line, end_line, heading, text_hash, "
            "text, updated_at) VALUES ('memory/x.md', ?, ?, 1, 1, '', '', ?, 0)",
            [(rng.choice(["memory", "sessions"]), rng.choice(DAYS), chunk()) for _ in range(n)],
        )

    with conn:
        add(1500)
    mirror.load(conn.execute(SELECT), 1500)  # the common words' postings dense
    with conn:
        add(300)  # and some appended after the load
        conn.execute("DELETE FROM chunks WHERE abs(random()) % 5 = 0")
    queries = [[r, *rng.sample(WORDS[:12], rng.randint(1, 3))] for r in RARE]
    queries += [[RARE[0], RARE[1], WORDS[0]], [RARE[2], RARE[2], WORDS[1]], WORDS[:3]]
    for words in queries:
        for limit in (1, 7, 40):
            assert mirror.top(stems_of(words), limit) == fts_top(conn, words, limit), words
        assert mirror.top(stems_of(words), 7, ["sessions"], "2024-05-02") == fts_top(
            conn, words, 7, "c.source = 'sessions' AND c.day >= '2024-05-02'"
        )
    assert mirror.stats()["pruned_tops"] > len(queries)


CJK_WORDS = ["数据库", "缓存", "策略", "服务器", "迁移", "北京", "東京", "プロジェクト", "データ"]
CJK_WORDS += ["の", "は", "서울", "백업", "회의"]


def cjk_text(rng: random.Random, n: int) -> str:
    """CJK words run together (no spaces), with English words and punctuation between."""
    pieces = rng.choices([*CJK_WORDS, *CJK_WORDS, "coffee ", " tea", "：", "。", " "], k=n)
    return "".join(pieces)


def test_scores_and_top_are_fts5s_for_cjk_and_mixed_text(tmp_path: Path) -> None:
    rng = random.Random(16)
    # Seeded deletes (not SQLite's random()): with these, the last place of a top 50 is a
    # chunk whose only word has the floored IDF, which a pruned top once dropped (the bound
    # of the words left summed to a few ulps below zero).
    deletes = random.Random(4)
    mirror, conn = index(tmp_path)
    for _ in range(4):
        with conn:
            conn.executemany(
                "INSERT INTO chunks(path, source, day, start_line, end_line, heading, "
                "text_hash, text, updated_at) VALUES ('memory/x.md', 'memory', '', 1, 1, ?, '', "
                "?, 0)",
                [(cjk_text(rng, 3), cjk_text(rng, rng.randint(1, 60))) for _ in range(80)],
            )
            ids = [i for (i,) in conn.execute("SELECT id FROM chunks")]
            gone = [(i,) for i in ids if deletes.random() < 0.25]
            conn.executemany("DELETE FROM chunks WHERE id = ?", gone)
        stem = fts5_stems(apsw.Connection(":memory:"))
        for query in ["缓存", "数据库迁移", "東京のプロジェクト", "서울 백업", "coffee 数据"]:
            terms = query_terms(query)
            stems = [stem(t)[0] for t in terms]
            for limit in (1, 7, 50):
                top = mirror.top(stems, limit)
                assert top and top == fts_top(conn, terms, limit), query


def test_a_loaded_copy_with_dense_common_stems_follows_writes_as_fts5_scores(
    tmp_path: Path,
) -> None:
    rng = random.Random(11)
    mirror, conn = index(tmp_path)
    with conn:
        insert(conn, rng, 400)
    mirror.load(conn.execute(SELECT), 400)  # the common words' postings are dense now
    assert any(p.dense is not None for p in mirror._post.values())
    assert_same(mirror, conn, rng)
    for _ in range(6):
        with conn:  # new slots past the dense arrays' end, deletes, reused ids
            insert(conn, rng, rng.randint(100, 400))
            ids = [i for (i,) in conn.execute("SELECT id FROM chunks ORDER BY id DESC LIMIT 10")]
            conn.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in ids])
            conn.execute("DELETE FROM chunks WHERE abs(random()) % 3 = 0")
        assert_same(mirror, conn, rng)
    assert mirror.stats()["compactions"] > 0
    with conn:  # a common word 300 times in one chunk: more than a byte holds
        conn.execute(
            "INSERT INTO chunks(path, source, day, start_line, end_line, heading, text_hash, "
            "text, updated_at) VALUES ('memory/x.md', 'memory', '', 1, 1, '', '', ?, 0)",
            (" ".join(["paint"] * 300),),
        )
    assert_same(mirror, conn, rng)


def test_a_fresh_load_equals_the_copy_that_followed_the_writes(tmp_path: Path) -> None:
    rng = random.Random(9)
    mirror, conn = index(tmp_path)
    with conn:
        insert(conn, rng, 300)
        conn.execute("DELETE FROM chunks WHERE id % 4 = 0")
    again = KeywordMirror(1 << 30)
    again.load(conn.execute(SELECT), 300)
    for words in queries(rng):
        assert again.top(stems_of(words), 20) == mirror.top(stems_of(words), 20)


def test_a_load_holds_what_following_the_writes_chunk_by_chunk_does(tmp_path: Path) -> None:
    # A load counts many chunks at a time; following a transaction adds them one by one.
    # Same stems in the same order, postings, frequencies, lengths and filters.
    rng = random.Random(21)
    mirror, conn = index(tmp_path)
    with conn:  # one transaction: its stems reach the followed copy in first-use order
        insert(conn, rng, 700)
        conn.executemany(
            "INSERT INTO chunks(path, source, day, start_line, end_line, heading, text_hash, "
            "text, updated_at) VALUES ('memory/x.md', 'sessions', '2024-05-01', 1, 1, ?, '', "
            "?, 0)",
            [(cjk_text(rng, 2), cjk_text(rng, rng.randint(1, 30))) for _ in range(200)]
            + [("", " ".join(["paint"] * 300))],  # more than a byte holds
        )
        insert(conn, rng, 700)
    loaded = KeywordMirror(1 << 30)
    loaded.load(conn.execute(SELECT), 1601)
    a, b = mirror.export(), loaded.export()
    assert a is not None and b is not None
    assert (a.rows, a.tokens) == (b.rows, b.tokens)
    for name in ("length", "source", "day", "chunk_id"):
        assert getattr(a, name).tolist() == getattr(b, name).tolist(), name
    assert postings_by_stem(a) == postings_by_stem(b)


def postings_by_stem(p: Postings) -> dict[str, list[tuple[int, int]]]:
    ends = np.cumsum(p.counts).tolist()
    return {
        stem: list(zip(p.slots[e - n : e].tolist(), p.freq2[e - n : e].tolist(), strict=True))
        for stem, n, e in zip(p.stems, p.counts.tolist(), ends, strict=True)
    }


def _verdict_chunk_by_chunk(rows: list[tuple[int, str, str, str, str]], budget: int) -> bool:
    """Over budget, as a load decided it adding one chunk at a time: the projection every
    16,384 postings (from 2,048 chunks on) or the final size."""
    mirror = KeywordMirror(1 << 30)
    counts: dict[str, int] = {}
    pending = 0
    for used, (_, text, heading, _, _) in enumerate(rows, 1):
        freq = mirror.analyze(text, heading)[1]
        for stem in freq:
            counts[stem] = counts.get(stem, 0) + 1
        pending += len(freq)
        if pending >= 1 << 14 or used == len(rows):
            pending = 0
            size = sum(min(c * 6, used) for c in counts.values()) + len(counts) * 250
            if used >= 2048 and size * len(rows) > budget * used:
                return True
    mirror.load(rows, len(rows))
    return mirror.bytes() > budget


def test_a_load_gives_up_over_budget_where_chunk_by_chunk_did(tmp_path: Path) -> None:
    rng = random.Random(5)
    _, conn = index(tmp_path)
    with conn:  # a new word in each of the first chunks: the projection overshoots
        conn.executemany(
            "INSERT INTO chunks(path, source, day, start_line, end_line, heading, text_hash, "
            "text, updated_at) VALUES ('memory/x.md', 'memory', '', 1, 1, '', '', ?, 0)",
            [(f"{text(rng, 20)} only{i}x",) for i in range(2300)],
        )
        insert(conn, rng, 2300)
    rows = [tuple(r) for r in conn.execute(SELECT)]
    full = KeywordMirror(1 << 30)
    full.load(rows, len(rows))
    verdicts = []
    for share in range(80, 181, 5):  # budgets around the copy's size and the projection's
        budget = full.bytes() * share // 100
        mirror = KeywordMirror(budget)
        mirror.load(rows, len(rows))
        verdicts.append(mirror.stats()["over_budget"])
        assert verdicts[-1] == _verdict_chunk_by_chunk(rows, budget), share  # type: ignore[arg-type]
    assert True in verdicts and False in verdicts


def test_filters_by_source_and_day_as_the_fts5_join_does(tmp_path: Path) -> None:
    rng = random.Random(3)
    mirror, conn = index(tmp_path)
    with conn:
        insert(conn, rng, 150)
        insert(conn, rng, 150, source="sessions")
    for words in queries(rng):
        st = stems_of(words)
        assert mirror.top(st, 30, ["sessions"]) == fts_top(
            conn, words, 30, "c.source IN ('sessions')"
        )
        span = ("2024-05-02", "2024-05-03")
        assert mirror.top(st, 30, None, *span) == fts_top(
            conn, words, 30, "c.day != '' AND c.day >= ? AND c.day <= ?", span
        )
        assert mirror.top(st, 30, ["memory"], "2024-05-02") == fts_top(
            conn, words, 30, "c.source = 'memory' AND c.day != '' AND c.day >= ?", ("2024-05-02",)
        )


def test_changes_show_only_once_committed(tmp_path: Path) -> None:
    rng = random.Random(1)
    mirror, conn = index(tmp_path)
    with pytest.raises(RuntimeError), conn:
        insert(conn, rng, 10)
        raise RuntimeError("the transaction fails")
    assert mirror.top(stems_of(WORDS[:5]), 5) == []
    with conn:
        insert(conn, rng, 10)
    before = mirror.top(stems_of(WORDS[:5]), 50)
    assert before and before == fts_top(conn, WORDS[:5], 50)
    with pytest.raises(RuntimeError), conn:
        conn.execute("DELETE FROM chunks")
        raise RuntimeError("rolled back")
    assert mirror.top(stems_of(WORDS[:5]), 50) == before


def test_a_commit_that_fails_after_the_hook_makes_the_copy_reload(tmp_path: Path) -> None:
    rng = random.Random(17)
    reloads: list[int] = []
    mirror, conn = index(tmp_path)
    mirror.on_stale = lambda: reloads.append(1)
    veto = {"on": False}
    conn.set_commit_hook(lambda: veto["on"], id="after-ours")  # runs after the mirror's hook
    with conn:
        insert(conn, rng, 20)
    veto["on"] = True  # the commit fails after the mirror applied its ops
    with pytest.raises(apsw.ConstraintError), conn:
        conn.execute("DELETE FROM chunks")
    assert reloads == [1]
    assert mirror.top(stems_of(["kids"]), 5) is None  # FTS5 answers until the reload
    veto["on"] = False
    mirror.load(conn.execute(SELECT), 20)
    assert mirror.top(stems_of(["kids"]), 5) == fts_top(conn, ["kids"], 5)


def test_over_budget_or_zero_budget_defers_to_fts5(tmp_path: Path) -> None:
    rng = random.Random(2)
    mirror, conn = index(tmp_path, max_bytes=64 * 1024)
    assert mirror.usable
    with conn:
        insert(conn, rng, 3000)  # grows past the budget while following the writes
    assert mirror.top(stems_of(["kids"]), 5) is None and not mirror.usable
    assert mirror.doc_freqs(["kid"]) is None
    small = KeywordMirror(64 * 1024)  # a load that will not fit stops early
    small.load(conn.execute(SELECT), 3000)
    assert small.stats() == {**small.stats(), "loaded": True, "over_budget": True, "bytes": 0}
    assert small.top(stems_of(["kids"]), 5) is None
    zero = KeywordMirror(0)
    zero.load(conn.execute(SELECT), 3000)
    assert zero.top(stems_of(["kids"]), 5) is None and not zero.usable


# ---------------------------------------------------------------- through the engine

NOTES = {
    "MEMORY.md": "# Memory\n\n## People\n\nAlice likes pottery and sunsets.\nBob fixes bikes.\n",
    "memory/2024-05-01.md": "# Day\n\n- Painted a sunset with the kids.\n- Deploy went fine.\n",
    "memory/2024-05-02.md": "# Day\n\n- Dentist at 3pm, teeth fine.\n- Garden: basil and mint.\n",
    "memory/2024-05-03.md": "# Day\n\n- Booked travel to Lisbon for the conference.\n",
}
SEARCHES = [
    "sunset painting",
    "teeth dentist",
    "Lisbon travel",
    "garden",
    "kids",
    "zebra",
    "deploy_notes deploy",
]  # a two-token word: FTS5 answers that one


def answers(make_index: IndexFactory, memory_mb: int) -> list[object]:
    ix = make_index({"index": {"keyword_memory_mb": memory_mb}})
    ix.sync()
    assert ix.status()["keyword_scan"] == ("memory" if memory_mb else "fts5")
    out: list[object] = []
    for q in SEARCHES:
        out.append([(h.path, h.start_line, round(h.score, 9)) for h in search(ix, q).results])
        out.append([h.path for h in search(ix, q, since="2024-05-02", min_score=0).results])
        out.append([h.path for h in search(ix, q, path_prefix="memory/", min_score=0).results])
    ix.close()
    make_index.made.remove(ix)
    return out


def test_search_answers_the_same_with_and_without_the_in_memory_bm25(
    make_index: IndexFactory,
) -> None:
    for rel, body in NOTES.items():
        make_index.write(rel, body)
    with_mirror = answers(make_index, 64)
    assert with_mirror == answers(make_index, 0)
    (make_index.ws / "memory/2024-05-01.md").unlink()  # deletes reach the copy too
    make_index.write("memory/2024-05-03.md", NOTES["memory/2024-05-03.md"] + "- Sunset walk.\n")
    after = answers(make_index, 64)
    assert after == answers(make_index, 0) and after != with_mirror


def test_search_in_memory_answers_as_search_does_or_declines(make_index: IndexFactory) -> None:
    """What the daemon answers on its event loop: the same answer, or None (nothing done)
    whenever SQLite would have to rank: a path prefix, a word of several tokens, no copy."""
    for rel, body in NOTES.items():
        make_index.write(rel, body)
    ix = make_index()
    ix.sync()
    for q in SEARCHES[:-1]:
        for kw in ({}, {"since": "2024-05-02", "min_score": 0.0}, {"sources": ("memory",)}):
            req = SearchRequest(q, mode="keyword", **kw)  # type: ignore[arg-type]
            got = in_memory(ix, req)
            assert got is not None
            assert got.results == ix.search(req).results
    assert in_memory(ix, SearchRequest("garden", path_prefix="memory/")) is None
    assert in_memory(ix, SearchRequest("deploy_notes deploy", mode="keyword")) is None
    no_copy = make_index({"index": {"keyword_memory_mb": 0}})
    assert in_memory(no_copy, SearchRequest("garden", mode="keyword")) is None


def test_a_change_it_cannot_stage_never_fails_the_write_and_makes_it_reload(
    tmp_path: Path,
) -> None:
    real = fts5_stems(apsw.Connection(":memory:"))

    def stems(text: str) -> list[str]:  # the tokenizer (apsw's), failing on one word
        if "kaboom" in text:
            raise RuntimeError("tokenizer exploded")
        return real(text)

    conn = schema.connect(tmp_path / "ix.sqlite")
    schema.migrate(conn)
    schema.upgrade_keyword_text(conn)
    conn.execute(
        "INSERT INTO files(path, source, hash, mtime_ns, size, indexed_at) "
        "VALUES ('memory/x.md', 'memory', '', 0, 0, 0)"
    )
    reloads: list[int] = []
    mirror = KeywordMirror(1 << 30, on_stale=lambda: reloads.append(1), stems=stems)
    mirror.follow(conn, "keyword_mirror")
    mirror.load(conn.execute(SELECT), 0)
    with conn:
        insert(conn, random.Random(4), 20)
    assert mirror.top(stems_of(["kids"]), 5) == fts_top(conn, ["kids"], 5)
    with conn:  # the write goes through; the copy could not follow it
        conn.execute(
            "INSERT INTO chunks(path, source, day, start_line, end_line, heading, text_hash, "
            "text, updated_at) VALUES ('memory/x.md', 'memory', '', 1, 1, '', '', "
            "'kaboom kids', 0)"
        )
    assert fts_top(conn, ["kaboom"], 5) != []
    assert reloads == [1] and mirror.top(stems_of(["kids"]), 5) is None
    with pytest.raises(RuntimeError):  # a reload that fails leaves FTS5 answering
        mirror.load(conn.execute(SELECT), 21)
    assert mirror.scan == "fts5" and mirror.top(stems_of(["kids"]), 5) is None


def test_the_python_tokenizer_is_the_one_chunks_fts_was_created_with(tmp_path: Path) -> None:
    _, conn = index(tmp_path)
    sql = sqlite.scalar(conn, "SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'")
    name, args = FTS_TOKENIZER
    assert f"tokenize='{' '.join([name, *args])}'" in str(sql)


@pytest.mark.parametrize("n", [10, 1000, 5000, 104_009])
def test_kth_largest_is_what_a_full_partition_finds_ties_included(n: int) -> None:
    from memoryd.index.keyword.bm25 import kth_largest

    rng = np.random.default_rng(n)
    for values in (
        rng.random(n),
        np.round(rng.random(n) * 20) / 4,  # many ties
        np.sort(rng.random(n)),  # the largest all in the last blocks
    ):
        for k in {1, 6, min(n, 24), min(n, 300)}:
            assert kth_largest(values, k) == -np.partition(-values, k - 1)[k - 1]
