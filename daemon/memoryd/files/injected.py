"""Blocks memoryd injected before a model, as they come back: in a transcript, or pasted
into an append. A fact recalled a hundred times stays one fact.

Every injected block is wrapped ``<memoryd-recall>`` ... ``</memoryd-recall>`` and cites
its lines as ``[path#Lstart-Lend]``. Flush drops the marked blocks from a transcript before
summarising (``drop_injected``); append refuses a text that is only a copy of one
(``injected_copy``): it carries the marker or a citation, and every line of it is a line
already in memory (the lines it cites, or the curated files the digest shows).
"""

from __future__ import annotations

import os
import re

from memoryd.errors import MemorydError
from memoryd.files.annotations import strip_annotations
from memoryd.files.layout import CURATED_FILES, Layout
from memoryd.files.lines import line_key
from memoryd.files.provenance import Ledger
from memoryd.files.reader import read_all
from memoryd_client.protocol import RECALL_CLOSE, RECALL_OPEN

__all__ = ["drop_injected", "injectable_text", "injected_copy"]

_BLOCK = re.compile(re.escape(RECALL_OPEN) + r".*?(?:" + re.escape(RECALL_CLOSE) + r"|\Z)", re.S)
CITATION = re.compile(r"\[([^\[\]\s#]+)#L(\d+)-L(\d+)\]")
MAX_CITED_FILES = 32
_READ_LIMIT = 16 << 20


def drop_injected(text: str) -> str:
    """``text`` without the marked blocks (an unclosed one runs to the end)."""
    if RECALL_OPEN not in text:
        return text
    return _BLOCK.sub("", text)


def _content_keys(text: str) -> list[str]:
    """The keys of the lines that say something: markers, citations and the blocks' own
    headers ("Relevant memory (memoryd recall; ...)", "## MEMORY.md") are not content."""
    out = []
    for raw in text.splitlines():
        line = CITATION.sub("", raw.replace(RECALL_OPEN, "").replace(RECALL_CLOSE, ""))
        stripped = line.strip()
        if not stripped or "(memoryd" in stripped or stripped in ("…",):
            continue
        key = line_key(line)
        if key:
            out.append(key)
    return out


def _file_keys(layout: Layout, rel: str) -> set[str]:
    try:
        opened = layout.open_memory(rel)
    except MemorydError:
        return set()
    try:
        data = read_all(opened.fd, _READ_LIMIT)
    except OSError:
        return set()
    finally:
        os.close(opened.fd)
    return {k for k in map(line_key, data.decode("utf-8", "replace").splitlines()) if k}


def injected_copy(text: str, layout: Layout) -> bool:
    """Whether ``text`` is only a copy of an injected block: marked or citing, and every
    line of it already in memory (the files it cites, the curated files)."""
    cited = CITATION.findall(text)
    if RECALL_OPEN not in text and not cited:
        return False
    keys = set(_content_keys(text))
    if not keys:
        return True
    files = list(dict.fromkeys([p for p, _, _ in cited][:MAX_CITED_FILES]))
    known: set[str] = set()
    for rel in [*files, *CURATED_FILES]:
        known |= _file_keys(layout, rel)
        if keys <= known:
            return True
    return False


NOT_INJECTED = frozenset({"untrusted", "system"})


def injectable_text(text: str, ledger: Ledger, path: str) -> str:
    """``text`` (of file ``path``) as it may be put before a model by itself: lines whose
    origin is untrusted or system left out, annotation comments removed (docs/agents.md)."""
    if not ledger.empty:
        kept = []
        for line in text.splitlines(keepends=True):
            found = ledger.lookup(path, line_key(line))
            if found is None or found.origin not in NOT_INJECTED:
                kept.append(line)
        text = "".join(kept)
    return strip_annotations(text)
