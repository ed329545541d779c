"""Secrets kept out of memory: find them in a text, and replace each by ``[REDACTED:kind]``.

The rule set is Yelp's detect-secrets (offline, no verification calls): its regex detectors
(cloud keys, GitHub/GitLab/Slack/Stripe/OpenAI/npm/PyPI/... tokens, JWTs, private keys,
passwords in URLs), plus two rules of ours built on its parts, for text written as prose
rather than code: a value after a keyword (``password``, ``secret``, ``token``, ``api_key``,
... followed by ``:``, ``=`` or ``is``) that looks like a secret, and a long high-entropy
base64 run (detect-secrets' entropy, its sequence/UUID/template filters).

One call, two uses: what enters memory through the daemon is redacted before it reaches the
disk or an LLM (append, flush, hippocampus, import); what a person wrote by hand stays in
the file and is masked in what the daemon answers (snippets, recall, ``get`` unless raw).

Cost: a text is first matched against one cheap pattern (a long token-like run, a keyword,
``://...@``, ``PRIVATE KEY``); prose without any goes back untouched after that one scan.
The detectors load on the first text that passes it, read from detect-secrets by a child
process (secret_rules.py: importing the library in the daemon would keep +16 MB for good).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Final

from memoryd import secret_rules
from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

__all__ = [
    "Redacted",
    "mask",
    "mask_snippets",
    "mask_text_of",
    "masked_snippet",
    "redact",
    "warm",
]

# Every rule below needs one of these in the line it matches; prose usually has none, and
# plain substring tests on the lower-cased text are ~10x cheaper than one regex with them.
_HINTS: Final = (
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "credential",
    "bearer",
    "contrase",
)
_RUN: Final = re.compile(r"\S{16,}")  # every detector's secret is a run this long
_DIGIT: Final = re.compile(r"\d")  # ... and has a digit (a long path or URL often has none)
_KEYWORDS: Final = (
    r"api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|"
    r"private_?key|client_?key|access_?key|secret_?key|db_?pass|database_?pass|key_?pass|"
    r"password|passwd|passphrase|pwd|secret|token|credentials?|contraseña|contrasena"
)
# keyword[-_ suffix] then := / = / : / "is", then the value up to a space or quote.
# Each rule is its source and flags, compiled on first need (_compiled).
_Rule = tuple[str, int]
_ASSIGNED: Final[_Rule] = (  # matched at a word start only (_keyword_values)
    rf"[\w-]*?(?:{_KEYWORDS})[\w-]*[\]'\"]{{0,2}}[ \t]*(?::=|=>|==?|:|[ \t]is\b|[ \t]was\b)[ \t]*"
    r"[@'\"`]?(?P<value>[^\s'\"`,;]+)",
    re.IGNORECASE,
)
_WORD_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
# The letters IGNORECASE matches with ASCII ones (as search/when.py folds them).
_ASCII_FOLDS: Final = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _written(keywords: str) -> tuple[str, ...]:
    """Each keyword as a lower-cased text holds it (``_?`` both ways, ``s?`` left off),
    without those that hold another ("secret_key" holds "secret")."""
    words = set()
    for alt in keywords.split("|"):
        alt = alt.removesuffix("s?")
        words |= {alt.replace("_?", ""), alt.replace("_?", "_")}
    return tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))


# A line whose words hold a hint but none of these ("passionate", "monkey") cannot match
# the keyword rule: no match is tried, nor the rule compiled (~4.4 M instructions before a
# daemon's first answer, whose snippets often hold a hint: issue 38).
_KEYWORD_WORDS: Final = _written(_KEYWORDS)
_BEARER: Final[_Rule] = (r"\bbearer[ \t]+(?P<value>[A-Za-z0-9_\-.~+/=]{16,})", re.IGNORECASE)
_LONG_RUN: Final[_Rule] = (r"[A-Za-z0-9+/_\-]{32,}={0,2}", 0)
_PRIVATE_KEY: Final[_Rule] = (
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_RULES: Final = (_ASSIGNED, _BEARER, _LONG_RUN, _PRIVATE_KEY)


@functools.cache
def _compiled(rule: _Rule) -> re.Pattern[str]:
    """A rule above, compiled for the first line that needs it (~7 M instructions at
    import, before a daemon's first answer: issue 38); most text needs none."""
    return re.compile(*rule)


_BASE64: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
ENTROPY_LIMIT: Final = 4.5  # detect-secrets' default for base64 strings
VALUE_ENTROPY_LIMIT: Final = 3.0  # a value named by a keyword needs less to be believed
MIN_VALUE_CHARS: Final = 8
# Detectors that cannot match without one of these (lower-cased) in the line: skipped
# otherwise, as they are the slowest of the set on ordinary lines.
_NEEDS: Final = {
    "json_web_token": ("eyj",),
    "npm_tokens": ("_authtoken",),
    "ibm_cloud_iam_key": ("ibm", "iam"),
    "ibm_cos_hmac_credentials": ("ibm", "cos", "hmac"),
    "softlayer_credentials": ("softlayer", "sl"),
    "cloudant_credentials": ("cl",),
    "telegram_bot_token": (":",),
    "discord_bot_token": (".",),
}
# Snippets whose masked text is remembered: the same ones come back search after search,
# and a verdict depends on the text alone (~1 KB each at most).
SNIPPETS_KEPT: Final = 1024
# detect-secrets' kinds that are not secrets (a public IP) or that ours replace.
_SKIPPED_DETECTORS: Final = frozenset({"IPPublicDetector"})


@frozen_record(frozen=True, eq=False, repr=False)
class Redacted(Record):
    """A text with its secrets replaced, and what kinds were found."""

    text: str
    kinds: tuple[str, ...]  # one per replacement, in order; () when nothing was found

    @property
    def found(self) -> bool:
        return bool(self.kinds)


def _kind(secret_type: str) -> str:
    """'GitHub Token' -> 'github_token': the short name shown in ``[REDACTED:kind]``."""
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")


@functools.cache
def _detectors() -> tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]:
    """(kind, patterns) of detect-secrets' regex detectors, loaded once, on first use."""
    return tuple(
        (_kind(secret_type), patterns)
        for secret_type, name, patterns in secret_rules.detectors()
        # a private key spans lines: _PRIVATE_KEY takes the whole block
        if name not in _SKIPPED_DETECTORS and name != "PrivateKeyDetector"
    )


def warm() -> None:
    """Read and compile the detectors now (on a thread that may wait: on a first start a
    child process reads them), and the rules of ours, so that the first text that needs
    them does not."""
    _detectors()
    for rule in _RULES:
        _compiled(rule)


def entropy(value: str) -> float:
    """Shannon entropy in bits per character (detect-secrets' measure)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _secret_like(value: str) -> bool:
    """A keyword's value that reads as a secret: long enough, not a plain word, varied."""
    if len(value) < MIN_VALUE_CHARS or secret_rules.filtered(value):
        return False
    if value.isalpha() and (value.islower() or value.istitle()):
        return False  # "password: forgotten", "token was Expired"
    if value.startswith(("http://", "https://", "[REDACTED:")):
        return False
    return entropy(value) >= VALUE_ENTROPY_LIMIT


def _random_run(value: str) -> bool:
    """A long base64-like run with no keyword near it: only a high-entropy, mixed one (a
    hex hash, a path or a long word stays)."""
    if entropy(value) < ENTROPY_LIMIT or secret_rules.filtered(value):
        return False
    kinds = (
        any(c.isupper() for c in value),
        any(c.islower() for c in value),
        any(c.isdigit() for c in value),
    )
    return all(kinds)


def _line_spans(line: str, at: int, low: str) -> list[tuple[int, int, int, str]]:
    """(start, end, rank, kind) of the secrets in one line starting at offset ``at``; the
    rank orders two finds of one span: a named detector before a keyword or entropy rule."""
    spans: list[tuple[int, int, int, str]] = []
    has_run = any(_DIGIT.search(run) for run in _RUN.findall(line))
    if has_run or "://" in line:
        for kind, patterns in _detectors():
            needs = _NEEDS.get(kind)
            if needs is not None and not any(n in low for n in needs):
                continue
            for pattern in patterns:
                for m in pattern.finditer(line):
                    start, end = _secret_span(m)
                    spans.append((at + start, at + end, 0, kind))
    for m in _keyword_values(line, low):
        if _secret_like(m.group("value")):
            spans.append((at + m.start("value"), at + m.end("value"), 1, "secret_keyword"))
    if has_run:
        for m in _compiled(_LONG_RUN).finditer(line):
            if _random_run(m.group()):
                spans.append((at + m.start(), at + m.end(), 2, "high_entropy_string"))
    return spans


def _keyword_values(line: str, low: str) -> list[re.Match[str]]:
    """The keyword rules' matches, tried only at the starts of words holding a hint: one
    regex over the whole line, alternation and all, costs ~10x more."""
    starts: set[int] = set()
    for hint in _HINTS:
        i = low.find(hint)
        while i >= 0:
            w = i
            while w and low[w - 1] in _WORD_CHARS:
                w -= 1
            starts.add(w)
            i = low.find(hint, i + len(hint))
    found: list[re.Match[str]] = []
    folded = (low if line.isascii() else line.translate(_ASCII_FOLDS).lower()) if starts else ""
    if any(word in folded for word in _KEYWORD_WORDS):
        match = _compiled(_ASSIGNED).match
        found += [m for w in sorted(starts) if (m := match(line, w))]
    if "bearer" in low:
        found += _compiled(_BEARER).finditer(line)
    return found


def _spans(text: str, low: str) -> list[tuple[int, int, int, str]]:
    spans: list[tuple[int, int, int, str]] = []
    if "private key" in low:
        key = _compiled(_PRIVATE_KEY)
        spans += [(m.start(), m.end(), 0, "private_key") for m in key.finditer(text)]
    at = 0
    for line in text.splitlines(keepends=True):
        line_low = low[at : at + len(line)]
        if "://" in line or _RUN.search(line) or any(h in line_low for h in _HINTS):
            spans += _line_spans(line, at, line_low)
        at += len(line)
    return spans


def _secret_span(m: re.Match[str]) -> tuple[int, int]:
    """The part of a detector's match that is the secret: its longest group when that is
    long enough (``://user:PASSWORD@``), else the whole match (``ghp_...``)."""
    best = max(
        (i for i in range(1, (m.re.groups or 0) + 1) if m.group(i)),
        key=lambda i: len(m.group(i)),
        default=0,
    )
    if best and len(m.group(best)) >= MIN_VALUE_CHARS:
        return m.start(best), m.end(best)
    start, end = m.span()
    while start < end and text_is_space(m.string[start]):  # detectors anchor on a space
        start += 1
    while end > start and text_is_space(m.string[end - 1]):
        end -= 1
    return start, end


def text_is_space(ch: str) -> bool:
    return ch in " \t\r\n\"'=:"


def redact(text: str) -> Redacted:
    """``text`` with every secret found replaced by ``[REDACTED:kind]``."""
    low = text.lower()
    if not ("://" in text or _RUN.search(text) or any(h in low for h in _HINTS)):
        return Redacted(text, ())
    spans = sorted(_spans(text, low))
    if not spans:
        return Redacted(text, ())
    out: list[str] = []
    kinds: list[str] = []
    at = 0
    for start, end, _rank, kind in spans:
        if start < at:  # inside (or overlapping) one already replaced
            at = max(at, end)
            continue
        out.append(text[at:start])
        out.append(f"[REDACTED:{kind}]")
        kinds.append(kind)
        at = end
    out.append(text[at:])
    return Redacted("".join(out), tuple(kinds))


def mask(text: str) -> str:
    """What the daemon shows of a text a person may have written a secret into."""
    return redact(text).text


@functools.lru_cache(maxsize=SNIPPETS_KEPT)
def _masked_snippet(snippet: str) -> str:
    return mask(snippet)


# A hit's snippet with its secrets masked, remembered (one C call when remembered).
masked_snippet = _masked_snippet


def mask_snippets(answer: dict[str, Any]) -> dict[str, Any]:
    """A search answer with the secrets in its hits' snippets masked (in place)."""
    for hit in answer.get("results", ()):
        snippet = hit.get("snippet")
        if isinstance(snippet, str):
            hit["snippet"] = _masked_snippet(snippet)
    return answer


def mask_text_of(answer: dict[str, Any]) -> dict[str, Any]:
    """A ``get`` answer with the secrets in its text masked (in place); ``masked`` says how
    many (``get`` with ``raw`` shows the file as it is)."""
    text = answer.get("text")
    if isinstance(text, str):
        found = redact(text)
        if found.kinds:
            answer["text"] = found.text
            answer["masked"] = len(found.kinds)
    return answer
