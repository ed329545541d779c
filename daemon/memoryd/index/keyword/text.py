"""The text the keyword index tokenizes: CJK runs as overlapping character bigrams.

FTS5's unicode61 makes a whole run of Chinese, Japanese or Korean characters one token, so
``数据库`` inside ``数据库选择`` matched nothing. Each run is rewritten as its overlapping
bigrams (``数据 据库 库选 选择``), as Lucene's CJKAnalyzer does; a run of one character
stays a unigram. Any word of two or more characters inside a run is then found, and a
query of several words or a whole sentence is an OR of its bigrams, ranked by BM25 like
English words. FTS5's trigram tokenizer was the other candidate: it cannot find two-
character words (most Chinese words) and would have changed English tokens too.

The rewrite happens before the porter/unicode61 tokenizer, which stays FTS5's own C code:
chunks_fts's triggers call ``keyword_text`` (a deterministic SQL function registered by
index/schema.py's connect) and text without CJK (ASCII in particular) passes through
unchanged, so English indexing and scores do not move. The same function feeds the
in-memory BM25 copy, the snippets' line stems and the query terms, so all four see the
same tokens.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Final

import apsw

# chunks_fts's tokenizer (as schema's 0001_core creates it): the line scores and the
# in-memory BM25 must stem exactly as FTS5 indexes, so they build theirs from this.
FTS_TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])
# FTS5's tokenizer as the snippets call it: (utf-8 bytes) -> [(start byte, end byte, stem)]
TokenizeOffsets = Callable[[bytes], list[tuple[int, int, str]]]

# Han (with extensions and compatibility ideographs), the iteration marks 々〆〇, kana
# (katakana's middle dot ・ is punctuation: left out), half-width katakana, Hangul
# syllables and jamo. CJK punctuation (。、「」：) and full-width Latin are not in it:
# they separate runs, as spaces do. Compiled on the first text that may hold one (cjk_run):
# its ranges cost ~20 M instructions to compile, which English text never needs (nor the
# first answer of a daemon started by a question: issue 38).
_CJK_CLASS: Final = (
    "["
    "\u1100-\u11ff"  # Hangul jamo
    "\u3005-\u3007"  # 々 〆 〇
    "\u3040-\u309f"  # hiragana
    "\u30a0-\u30fa\u30fc-\u30ff"  # katakana without ・
    "\u3130-\u318f"  # Hangul compatibility jamo
    "\u31f0-\u31ff"  # katakana phonetic extensions
    "\u3400-\u4dbf"  # Han extension A
    "\u4e00-\u9fff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # Han compatibility
    "\uff66-\uff9f"  # half-width katakana
    "\U00020000-\U0003134f"  # Han extensions B-H
    "]+"
)
# The UTF-8 lead bytes of those characters: 3005-9fff lead with e3-e9, ac00-d7af with ea-ed
# (every character behind those is a candidate); the rest lead with bytes that common
# characters share, told apart by their second byte: Hangul jamo e1 84-87 (e1 leads
# Vietnamese letters too), Han compatibility ef a4-ab and half-width katakana ef bd-be (ef
# leads the emoji variation selector fe0f and the BOM), planes 2-3 f0 a0-b1 (f0 9f leads
# most emoji). Text with none of these holds no CJK run, whatever else it holds (curly
# quotes and dashes lead with e2, accents with c3): the scan and the class's compile wait.
_RUN_LEADS: Final = bytes(range(0xE3, 0xEE))
_NOT_RUN_LEAD: Final = bytes(b for b in range(256) if b not in _RUN_LEADS)
_PAIR_SECONDS: Final = {
    0xE1: range(0x84, 0x88),
    0xEF: (*range(0xA4, 0xAC), 0xBD, 0xBE),
    0xF0: range(0xA0, 0xB2),
}
_NOT_PAIR_LEAD: Final = bytes(b for b in range(256) if b not in _PAIR_SECONDS)
_PAIRS: Final = tuple(bytes([lead, b]) for lead, seconds in _PAIR_SECONDS.items() for b in seconds)


def may_hold_cjk(utf8: bytes) -> bool:
    """Whether UTF-8 text (or its non-ASCII bytes alone) may hold a CJK run: False only
    when it holds none. A lead byte is never a continuation byte, so a pair found is a
    character's start."""
    if utf8.translate(None, _NOT_RUN_LEAD):
        return True
    return bool(utf8.translate(None, _NOT_PAIR_LEAD)) and any(p in utf8 for p in _PAIRS)


@functools.cache
def cjk_run() -> re.Pattern[str]:
    """A run of CJK characters (the class above)."""
    return re.compile(_CJK_CLASS)


# meta "keyword_text" of an index whose chunks_fts holds keyword_text(text); an index
# without the key holds the raw text (schema.upgrade_keyword_text converts it).
VERSION = "cjk-bigrams-1"
SQL_FUNCTION = "keyword_text"


def _bigrams(m: re.Match[str]) -> str:
    run = m.group()
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join([run[i : i + 2] for i in range(len(run) - 1)]) + " "


_ASCII = bytes(range(128))


def _has_cjk_utf8(raw: bytes) -> bool:
    """Scanning a whole chunk for a CJK run costs ~75 ns a character (~150 µs for an English
    chunk with one curly quote); without its ASCII bytes (a C pass) little is left to scan,
    and without a CJK character's start among them (may_hold_cjk: C passes) nothing to."""
    rest = raw.translate(None, _ASCII)
    if not rest or not may_hold_cjk(rest):
        return False
    return cjk_run().search(rest.decode("utf-8", "replace")) is not None


def has_cjk(text: str) -> bool:
    return not text.isascii() and _has_cjk_utf8(text.encode("utf-8", "surrogatepass"))


def keyword_text(text: str) -> str:
    """``text`` with each CJK run replaced by its bigrams, spaced so unicode61 keeps each
    one a token and never joins it to the letters around it."""
    if not has_cjk(text):
        return text
    return cjk_run().sub(_bigrams, text)


def with_offsets(tokenize: TokenizeOffsets) -> TokenizeOffsets:
    """The tokens of ``keyword_text(text)`` with byte offsets into ``text`` itself (the
    snippets map them to lines). ``tokenize`` is FTS5's porter tokenizer: it runs on the
    text between CJK runs; a run's bigrams get the offsets of their two characters. The
    same tokens in the same order as tokenizing ``keyword_text(text)``: the runs are
    spaced off there, so the text between them tokenizes alone either way."""

    def tokens(raw: bytes) -> list[tuple[int, int, str]]:
        if raw.isascii() or not _has_cjk_utf8(raw):  # curly quotes, accents: as is
            return tokenize(raw)
        text = raw.decode("utf-8", "replace")
        out: list[tuple[int, int, str]] = []
        pos = 0  # characters of text done
        at = 0  # bytes of text done
        for m in cjk_run().finditer(text):
            at = _add_between(out, tokenize, text[pos : m.start()], at)
            run = m.group()
            ends = [at]
            for ch in run:
                ends.append(ends[-1] + len(ch.encode()))
            if len(run) == 1:
                out.append((ends[0], ends[1], run))
            else:
                out.extend((ends[i], ends[i + 2], run[i : i + 2]) for i in range(len(run) - 1))
            at, pos = ends[-1], m.end()
        _add_between(out, tokenize, text[pos:], at)
        return out

    return tokens


def _add_between(
    out: list[tuple[int, int, str]], tokenize: TokenizeOffsets, text: str, at: int
) -> int:
    """Append the tokens of ``text`` (which starts at byte ``at``); returns its end byte."""
    raw = text.encode()
    if raw.strip():
        out.extend((s + at, e + at, tok) for s, e, tok in tokenize(raw))
    return at + len(raw)


def _keyword_text_sql(*args: apsw.SQLiteValue) -> apsw.SQLiteValue:
    (text,) = args
    return keyword_text(text) if isinstance(text, str) else text


def register(conn: apsw.Connection) -> None:
    """Give ``conn`` the SQL function chunks_fts's triggers call (schema.upgrade_keyword_text)."""
    conn.create_scalar_function(
        SQL_FUNCTION, _keyword_text_sql, 1, deterministic=True, flags=apsw.SQLITE_INNOCUOUS
    )
