"""Odd file names and links: one bad name stops nothing, and what is indexed is what ``get``
may read (issue 13, items 1 and 2)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from daemon_util import DaemonThread, RawConn, wait_for
from engine_util import IndexFactory, paths, search

BAD = b"b\xff.md"  # not valid UTF-8


def write_bytes_name(folder: Path, name: bytes, text: str) -> None:
    with open(os.path.join(os.fsencode(folder), name), "wb") as f:
        f.write(text.encode())


def test_a_non_utf8_name_is_skipped_and_the_files_after_it_are_indexed(
    make_index: IndexFactory,
) -> None:
    make_index.write("memory/a.md", "alpha aardvark\n")
    write_bytes_name(make_index.ws / "memory", BAD, "bravo badger\n")
    make_index.write("memory/z.md", "zulu zebra\n")
    ix = make_index()
    report = ix.sync()
    assert paths(search(ix, "zebra")) == ["memory/z.md"]
    assert paths(search(ix, "aardvark")) == ["memory/a.md"]
    assert report.skipped == {
        "memory/b\\xff.md": "the file name is not valid UTF-8: rename it to index it"
    }
    assert list(ix.status()["skipped"]) == ["memory/b\\xff.md"]
    os.unlink(os.path.join(os.fsencode(make_index.ws / "memory"), BAD))
    ix.sync()
    assert ix.status()["skipped"] == {}


def test_a_non_utf8_name_reported_by_path_is_skipped_too(make_index: IndexFactory) -> None:
    ix = make_index()
    write_bytes_name(make_index.ws / "memory", BAD, "bravo badger\n")
    path = Path(os.fsdecode(os.path.join(os.fsencode(make_index.ws / "memory"), BAD)))
    assert ix.sync([path]).skipped == {
        "memory/b\\xff.md": "the file name is not valid UTF-8: rename it to index it"
    }


def test_a_link_in_memory_to_a_non_memory_file_is_not_indexed(make_index: IndexFactory) -> None:
    make_index.write(".env", "OPENAI_API_KEY=sk-secretvalue\n")
    make_index.write(".git/config", "[remote] url = secretremote\n")
    make_index.write("memory/real.md", "the real note\n")
    os.symlink("../.env", make_index.ws / "memory" / "env.md")
    os.symlink(make_index.ws / ".git" / "config", make_index.ws / "memory" / "git.md")
    os.symlink("real.md", make_index.ws / "memory" / "alias.md")  # memory to memory: fine
    ix = make_index()
    ix.sync()
    assert search(ix, "secretvalue").results == []
    assert search(ix, "secretremote").results == []
    # One file under two names is indexed once (by the first name found).
    assert paths(search(ix, "real note")) in (["memory/alias.md"], ["memory/real.md"])
    # A link made later, reported by the watcher's path, follows the same rule.
    os.symlink("../.env", make_index.ws / "memory" / "env2.md")
    ix.sync([make_index.ws / "memory" / "env2.md"])
    assert search(ix, "secretvalue").results == []


def status_of(c: RawConn) -> dict[str, Any]:
    [ws] = c.result("status")["workspaces"]
    return ws  # type: ignore[no-any-return]


def test_reindex_status_and_the_watcher_survive_a_non_utf8_name(md_home: Path) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "a.md").write_text("alpha aardvark\n")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        assert wait_for(lambda: status_of(c)["files"] == 1)
        write_bytes_name(ws / "memory", BAD, "bravo badger\n")
        write_bytes_name(ws, b"junk\xfe.txt", "not memory\n")  # in the watched root
        (ws / "memory" / "z.md").write_text("zulu zebra\n")
        # The watcher, not a search, must bring z.md in: it survived the names.
        assert wait_for(lambda: status_of(c)["files"] == 3, timeout=10), status_of(c)
        assert "memory/b\\xff.md" in status_of(c)["skipped"]
        report = c.result("reindex", {"full": True})
        assert "memory/b\\xff.md" in report["skipped"]
        (ws / "memory" / "y.md").write_text("yankee yak\n")
        assert wait_for(lambda: status_of(c)["files"] == 4, timeout=10), status_of(c)
        found = c.result("search", {"query": "zebra", "mode": "keyword"})["results"]
        assert [r["path"] for r in found] == ["memory/z.md"]
