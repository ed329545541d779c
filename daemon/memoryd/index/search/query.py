"""Turning a user's question into an FTS5 query that can never be parsed as FTS syntax."""

from __future__ import annotations

import functools
import re

from memoryd.index.keyword.text import keyword_text
from memoryd.index.search.when import folded

_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves s t don ll ve re d m
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Verbs by which a question points at speech ("what did Jon say about the store?"): the
# line that answers quotes the speech itself, without them, and a log full of "said" and
# "told" would rank by those words. Left out of the keyword query while another word
# remains (on LoCoMo dev: R@5 .917 -> .920, MRR .808 -> .810, no category lower).
_SPEECH_TEXT = """
say says said saying tell tells told telling mention mentions mentioned mentioning
describe describes described describing
"""
SPEECH_VERBS = frozenset(_SPEECH_TEXT.split())

WORD_RE = re.compile(r"\w+", re.UNICODE)


MAX_TERMS = 64  # a query is a question, not a document; also bounds the SQL it makes


def query_terms(query: str) -> list[str]:
    """Distinct lower-cased words without stop words and speech verbs (the speech verbs when
    nothing else remains, all words when only stop words do).
    A CJK run counts as its bigrams (keyword_text): a sentence asks for each of them."""
    words = list(dict.fromkeys(w.lower() for w in WORD_RE.findall(keyword_text(query))))
    kept = [w for w in words if w not in STOPWORDS]
    asked = [w for w in kept if w not in SPEECH_VERBS]
    return (asked or kept or words)[:MAX_TERMS]


@functools.lru_cache(maxsize=1024)
def stopwords_only(query: str) -> tuple[str, ...] | None:
    """The query's words when none of them can tell notes apart (all stop words, or no word
    at all), else None: such a query would rank arbitrary chunks that share a "the".
    Remembered: every search asks it before it starts."""
    words = tuple(dict.fromkeys(w.lower() for w in WORD_RE.findall(keyword_text(query))))
    return words if all(w in STOPWORDS for w in words) else None


def fts_match(terms: list[str]) -> str:
    """An OR of quoted terms: user input is data, never FTS5 operators or column filters."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


_MONTHS = "january february march april may june july august september october november december"
_MONTH = (
    {m: i for i, m in enumerate(_MONTHS.split(), 1)}
    | {m[:3]: i for i, m in enumerate(_MONTHS.split(), 1)}
    | {"sept": 9}
)

_M = r"(" + "|".join(sorted(_MONTH, key=len, reverse=True)) + r")\.?"
_D = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = re.compile(r"\d{4}")
_YEAR_GAP = r"(?:,\s*|\s+)"  # "June 3, 2023", "June 3 2023", and "December 1,2023" as written


@functools.cache
def _date_patterns() -> tuple[tuple[re.Pattern[str], tuple[int, int, int]], ...]:
    """(regex, group numbers of year, month, day); compiled for the first query holding a
    year (~2 M instructions a start did before its first answer, issue 38)."""
    return (
        (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), (1, 2, 3)),
        (re.compile(rf"\b{_D}\s+(?:of\s+)?{_M}{_YEAR_GAP}(\d{{4}})\b", re.I), (3, 2, 1)),
        (re.compile(rf"\b{_M}\s+{_D}{_YEAR_GAP}(\d{{4}})\b", re.I), (3, 1, 2)),
    )


def query_days(query: str) -> list[str]:
    """Full calendar dates written in the query ("2023-06-03", "3 June 2023", "June 3rd,
    2023"), as YYYY-MM-DD: the ``day`` of a daily log. Partial dates are ignored."""
    if not _YEAR.search(query):  # every pattern has a year: most queries stop here
        return []
    return list(_dates_in(query))


@functools.lru_cache(maxsize=1024)
def _dates_in(query: str) -> tuple[str, ...]:
    """query_days' dates of a query holding a year (three expressions: ~25 µs, asked again
    by each search of a question naming a time, for its signals: remembered)."""
    out: list[str] = []
    query = folded(query)  # a month written with a long s: read as the month
    for rx, (yi, mi, di) in _date_patterns():
        for m in rx.finditer(query):
            mo = m.group(mi)
            month = int(mo) if mo.isdigit() else _MONTH[mo.lower()]
            day = int(m.group(di))
            if 1 <= month <= 12 and 1 <= day <= 31:
                out.append(f"{int(m.group(yi)):04d}-{month:02d}-{day:02d}")
    return tuple(dict.fromkeys(out))
