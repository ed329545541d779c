"""Giving freed heap back to the system."""

from __future__ import annotations

import platform
import sys

from memoryd.heap import release_free_memory


def test_release_free_memory_trims_on_glibc_and_is_harmless_elsewhere() -> None:
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    blocks = [bytearray(2000) for _ in range(20_000)]  # malloc'd, not Python's own arenas
    del blocks
    assert release_free_memory() is glibc
    assert release_free_memory() is glibc  # repeatable, no state
