"""How the daemon's heap gives memory back (glibc; a no-op elsewhere)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from memoryd.runtime import heap

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def test_release_free_memory_trims_on_glibc_and_is_harmless_elsewhere() -> None:
    blocks = [bytearray(2000) for _ in range(20_000)]  # malloc'd, not Python's own arenas
    del blocks
    assert heap.release_free_memory() is GLIBC
    assert heap.release_free_memory() is GLIBC  # repeatable, no state


def test_configure_pins_the_mmap_threshold_on_glibc() -> None:
    assert heap.configure() is GLIBC
    big = bytearray(4 * heap.MMAP_THRESHOLD)  # from mmap, back to the system when freed
    del big
    assert heap.configure() is GLIBC


def test_collection_paused_for_a_start_comes_back_once_and_only_if_it_was_on() -> None:
    import gc

    assert gc.isenabled()
    try:
        heap.pause_collection()
        assert not gc.isenabled()
        heap.pause_collection()  # twice: still one resume brings it back
        heap.resume_collection()
        assert gc.isenabled()
        gc.disable()  # turned off by someone else: not ours to turn on
        heap.resume_collection()
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.skipif(not GLIBC, reason="glibc's soname")
def test_glibc_is_opened_by_its_name_without_running_ldconfig() -> None:
    # ctypes.util.find_library("c") runs `ldconfig -p` in a child process at every start.
    code = (
        "import sys; from memoryd.runtime import heap; "
        "print(heap.configure(), 'ctypes.util' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "False"]
