"""The all-MiniLM-L6-v2 WordPiece tokenizer shipped as package data (see assets/NOTICE.md).

The chunker counts tokens with it whatever the provider, so chunk boundaries do not depend on
which embedding endpoint is configured.

It is loaded when something needs it and let go after ``RELEASE_AFTER_S`` without use: it
holds ~14 MB (its module and vocabulary), and a daemon whose files do not change needs it
for nothing. Loading it again takes ~15 ms.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.runtime.heap import release_free_memory

if TYPE_CHECKING:
    from tokenizers import Tokenizer

ASSETS = Path(__file__).parent / "assets"
TOKENIZER_FILE = ASSETS / "tokenizer.json"
RELEASE_AFTER_S = 60.0

_lock = threading.Lock()
_tokenizer: Tokenizer | None = None
_last_use = 0.0
_timer: threading.Timer | None = None
_on_release: list[Callable[[], None]] = []  # caches built on a tokenizer go with it


def load_tokenizer() -> Tokenizer:
    """A tokenizer without padding or truncation, for counting and offsets. The same object
    until it is released; callers hold it only while they use it."""
    global _tokenizer, _last_use, _timer
    with _lock:
        _last_use = time.monotonic()
        if _tokenizer is None:
            from tokenizers import Tokenizer  # ~5 MB of module, on demand

            tok = Tokenizer.from_file(str(TOKENIZER_FILE))
            tok.no_padding()
            tok.no_truncation()
            _tokenizer = tok
        if _timer is None and RELEASE_AFTER_S > 0:
            _timer = _start_timer(RELEASE_AFTER_S)
        return _tokenizer


def on_release(callback: Callable[[], None]) -> None:
    """Call ``callback`` whenever the tokenizer is let go (it drops what it keeps for it)."""
    _on_release.append(callback)


def release_tokenizer(idle_s: float = 0.0) -> bool:
    """Let the tokenizer go if unused for ``idle_s``; True if it was."""
    global _tokenizer, _timer
    with _lock:
        idle = time.monotonic() - _last_use
        if _tokenizer is None or idle < idle_s:
            return False
        _tokenizer = None
        if _timer is not None:
            _timer.cancel()
            _timer = None
        for callback in _on_release:
            callback()
    release_free_memory()  # its vocabulary lived on the C heap
    return True


def _start_timer(delay: float) -> threading.Timer:
    timer = threading.Timer(delay, _release_when_idle)
    timer.daemon = True
    timer.name = "memoryd-tokenizer-release"
    timer.start()
    return timer


def _release_when_idle() -> None:
    """One timer at a time, only while a tokenizer is loaded: no wake-ups when idle."""
    global _timer
    if release_tokenizer(RELEASE_AFTER_S):
        return
    with _lock:
        _timer = None
        if _tokenizer is not None:  # used since: look again when it may have gone idle
            left = RELEASE_AFTER_S - (time.monotonic() - _last_use)
            _timer = _start_timer(max(left, 0.01))
