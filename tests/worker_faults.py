"""Stand-ins for prepare.prepare_markdown that a bulk sync's chunking processes import by
name (a spawned worker imports this module from the tests' folder, which it inherits on
its sys.path): faults that only happen in another process."""

from __future__ import annotations

import os

from memoryd.index.prepare import Prepared, prepare_markdown

MARKER = "kaboom"


def fails_on_marker(text: str, chunk_tokens: int, overlap: int) -> Prepared:
    """Chunking a text that holds MARKER raises, in the worker."""
    if MARKER in text:
        raise RuntimeError("chunker exploded")
    return prepare_markdown(text, chunk_tokens, overlap)


def dies(text: str, chunk_tokens: int, overlap: int) -> Prepared:
    """The worker dies (as the OOM killer would end it): the pool breaks."""
    os._exit(3)


def tells_its_priority(text: str, chunk_tokens: int, overlap: int) -> Prepared:
    """A text that holds MARKER fails saying the worker's nice value (in the reason the
    file is skipped for)."""
    if MARKER in text:
        raise RuntimeError(f"worker nice {os.nice(0)}")
    return prepare_markdown(text, chunk_tokens, overlap)
