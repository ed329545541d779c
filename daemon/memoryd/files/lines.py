"""The one normalisation of a memory line, and the key it gives.

The provenance ledger (who wrote a line), append's duplicate check, hippocampus's hit
counters, forget and import all name a line by ``line_key``: never a second normalisation.
Two lines that differ only in case, spacing, list marker, task box or annotation comments
are the same line.
"""

from __future__ import annotations

import hashlib
import re

from memoryd.files.annotations import strip_annotations

__all__ = ["KEY_HEX", "line_key", "normalize_line", "text_keys"]

KEY_HEX = 32  # hex digits of sha256 kept: 128 bits, no collision among a user's lines
# A list marker (-, *, +, 1., 1)) and then, optionally, a task box ([ ], [x], [X]).
_MARKER = re.compile(r"^\s*(?:[-*+]|[0-9]{1,9}[.)])(?:\s+|$)(?:\[[ xX]\](?:\s+|$))?")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")


def normalize_line(text: str) -> str:
    """``text`` without annotation comments, leading list marker or task box, its whitespace
    collapsed, case-folded. A heading (``## Notes``) normalises to '' (it is not a fact)."""
    clean = strip_annotations(text)
    if _HEADING.match(clean):
        return ""
    clean = _MARKER.sub("", clean, count=1)
    return " ".join(clean.split()).casefold()


def line_key(text: str) -> str:
    """The first 32 hex digits of sha256 of the normalised line; '' for a blank or heading
    line (it names nothing)."""
    norm = normalize_line(text)
    if not norm:
        return ""
    return hashlib.sha256(norm.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_HEX]


def text_keys(text: str) -> list[str]:
    """The keys of ``text``'s lines that name something, in order (blank and heading lines
    left out): what one appended block contributes to the ledger."""
    return [k for k in map(line_key, text.splitlines()) if k]
