"""A folder swapped for a link to outside while get and append run (issue 13, item 4).

A thread exchanges ``memory/`` with a link to a folder outside the workspace as fast as it
can (``renameat2(RENAME_EXCHANGE)``: the swap is atomic, both names always exist), while
requests read and append through the daemon. Bounded: a fixed number of requests."""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as dt
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from daemon_util import DaemonThread, RawConn, error_code
from jobs_util import NOW, JobHarness, set_mtime

REQUESTS = 600
RETENTION_RUNS = 60
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def exchanger() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if not sys.platform.startswith("linux") or not hasattr(libc, "renameat2"):
        pytest.skip("needs Linux renameat2 (glibc >= 2.28)")
    fn = libc.renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn  # type: ignore[no-any-return]


def test_get_and_append_never_cross_a_swapped_link(md_home: Path) -> None:
    renameat2 = exchanger()
    ws, out = md_home / "ws", md_home / "out"
    (ws / "memory").mkdir(parents=True)
    out.mkdir()
    (ws / "memory" / "2024-01-01.md").write_text("inside note\n")
    (out / "2024-01-01.md").write_text("OUTSIDE SECRET\n")
    (ws / "swap").symlink_to("../out")
    a, b = os.fsencode(ws / "memory"), os.fsencode(ws / "swap")
    stop = threading.Event()
    swaps = [0]

    def swap() -> None:
        while not stop.is_set():
            if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
                swaps[0] += 1

    leaked_reads = 0
    odd: list[object] = []  # answers other than a result or a refusal
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        t = threading.Thread(target=swap)
        t.start()
        try:
            for i in range(REQUESTS):
                got = c.call("get", {"path": "memory/2024-01-01.md"})
                if got is not None and "OUTSIDE" in str(got.get("result", {}).get("text")):
                    leaked_reads += 1
                reply = c.call("append", {"text": f"note {i}", "date": "2024-01-01"})
                if error_code(reply) not in (None, "forbidden_path", "not_found"):
                    odd.append(reply)
        finally:
            stop.set()
            t.join()
        if swaps[0] % 2:  # put memory/ back where it was
            renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    assert swaps[0] > 100, "the swapper did not run"
    assert leaked_reads == 0, f"{leaked_reads} of {REQUESTS} reads came from outside"
    leaked = (out / "2024-01-01.md").read_text().count("note ")
    assert leaked == 0, f"{leaked} appends landed outside the workspace"
    assert (out / "2024-01-01.md").read_text() == "OUTSIDE SECRET\n"
    assert odd == []


def test_retention_never_deletes_through_a_swapped_link(tmp_path: Path) -> None:
    """retention checked a transcript's inode by path, then unlinked it by path: a folder
    swapped for a link between the two deleted the file of the same name outside."""
    renameat2 = exchanger()
    ws, out = tmp_path / "ws", tmp_path / "out"
    (ws / "sessions").mkdir(parents=True)
    out.mkdir()
    (ws / "swap").symlink_to("../out")
    names = [f"s{i}.jsonl" for i in range(40)]
    old = NOW - dt.timedelta(days=60)
    for name in names:
        (out / name).write_text("OUTSIDE\n")
        set_mtime(out / name, old)
    a, b = os.fsencode(ws / "sessions"), os.fsencode(ws / "swap")
    swapping, stop = threading.Event(), threading.Event()
    swaps = [0]

    def swap() -> None:
        while not stop.is_set():
            if not swapping.wait(0.01):
                continue
            if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
                swaps[0] += 1

    h = JobHarness(ws, tmp_path / "state.sqlite", {"jobs": {"retention": {"action": "delete"}}})
    t = threading.Thread(target=swap)
    t.start()
    deleted = 0
    try:
        for _ in range(RETENTION_RUNS):
            swapping.clear()
            time.sleep(0.02)  # the swapper is between swaps now
            if swaps[0] % 2:  # sessions/ back to the real folder
                renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
                swaps[0] += 1
            for name in names:
                (ws / "sessions" / name).write_text("inside\n")
                set_mtime(ws / "sessions" / name, old)
            swapping.set()
            record = h.run("retention")
            deleted += record.report.get("deleted", 0)
    finally:
        stop.set()
        swapping.set()
        t.join()
        h.close()
    assert swaps[0] > 100, "the swapper did not run"
    assert deleted > 0, "retention never ran while the folder was its own"
    gone = [n for n in names if not (out / n).exists()]
    assert gone == [], f"{len(gone)} files outside the workspace deleted"
