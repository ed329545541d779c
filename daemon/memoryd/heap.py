"""Giving freed heap memory back to the system after a burst of allocations.

Building an in-memory copy of an index allocates and frees millions of small Python
objects; glibc keeps the freed pages in its arenas, so the daemon's RSS stays at the
burst's peak for good (17 MB for a 10k-chunk keyword copy). ``malloc_trim(0)`` returns
them. Other C libraries (macOS, musl) have no such call: there it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def release_free_memory() -> bool:
    """Return freed heap pages to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
