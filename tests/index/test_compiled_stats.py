"""The compiled stats of read-your-writes (index/_compiled_stats.c) against their Python
version (freshness.py_stat_many), on real files. Without a compiler the module is absent and
freshness.py runs the Python version: these tests are skipped there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd.index import freshness
from memoryd.index.freshness import py_stat_many

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")


def test_freshness_uses_the_compiled_stats() -> None:
    assert freshness.stat_many is compiled.stat_many


def test_the_same_mtime_and_size_as_os_stat_and_none_where_it_fails(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha\n")
    (tmp_path / "empty.md").write_bytes(b"")
    os.utime(tmp_path / "empty.md", ns=(1, 1_700_000_000_123_456_789))
    (tmp_path / "folder").mkdir()
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    (tmp_path / "dangling.md").symlink_to(tmp_path / "gone.md")
    odd = os.fsdecode(b"caf\xe9.md")  # not UTF-8: a surrogate escape, as os.fsdecode gives
    with open(os.fsencode(os.path.join(tmp_path, odd)), "wb") as f:
        f.write(b"x" * 70_000)
    names = ["a.md", "empty.md", "folder", "link.md", "dangling.md", "missing.md", odd, ""]
    paths = [os.path.join(tmp_path, n) for n in names] + [
        os.path.join(tmp_path, "a.md", "under-a-file"),
        "",
    ]
    got = compiled.stat_many(paths)
    assert got == py_stat_many(paths)
    assert got[0] == (os.stat(paths[0]).st_mtime_ns, 6)
    assert got[1] == (1_700_000_000_123_456_789, 0)
    assert got[3] == got[0]  # a link: its target's
    assert got[4] is None and got[5] is None and got[6] == (os.stat(paths[6]).st_mtime_ns, 70_000)
    assert got[-2:] == [None, None]
    assert compiled.stat_many(()) == [] == py_stat_many([])


@pytest.mark.parametrize("ns", [2**63 + 5, 10**19 + 7, 9_300_000_000 * 10**9 + 1])
def test_an_mtime_past_64_bits_of_nanoseconds_is_the_python_int(tmp_path: Path, ns: int) -> None:
    # A time after 2262 (ext4, btrfs, tmpfs hold it): seconds * 10**9 overflowed a C long long
    path = tmp_path / "far.md"
    path.write_text("x")
    try:
        os.utime(path, ns=(ns, ns))
    except OSError:  # pragma: no cover (a file system that cannot hold it)
        pytest.skip("this file system does not hold such a time")
    if os.stat(path).st_mtime_ns != ns:  # pragma: no cover (clamped by the file system)
        pytest.skip("this file system clamps the time")
    assert compiled.stat_many([str(path)]) == py_stat_many([str(path)]) == [(ns, 1)]


def test_a_path_with_a_null_character_or_not_a_str_is_refused() -> None:
    with pytest.raises(ValueError, match="embedded null byte"):
        compiled.stat_many(["/tmp/a\0b"])
    with pytest.raises(ValueError, match="embedded null byte"):
        py_stat_many(["/tmp/a\0b"])
    with pytest.raises(TypeError):
        compiled.stat_many([b"/tmp"])
