"""Turning a user's question into an FTS5 query that can never be parsed as FTS syntax."""

from __future__ import annotations

import re

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

WORD_RE = re.compile(r"\w+", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """Distinct lower-cased words without stop words (all words when only stop words remain)."""
    words = list(dict.fromkeys(w.lower() for w in WORD_RE.findall(query)))
    kept = [w for w in words if w not in STOPWORDS]
    return kept or words


def fts_match(terms: list[str]) -> str:
    """An OR of quoted terms: user input is data, never FTS5 operators or column filters."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
