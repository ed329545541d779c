"""``memoryd stop``'s "gone": a process counts as exited once its parent could reap it, not
when its main thread alone has ended (its other threads still ending)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memoryd.stop import _zombie

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# The main thread ends by itself (pthread_exit) while a second thread lives on until the
# file named by argv[1] appears: the main thread is then a zombie, the process is not.
_LINGER = r"""
import ctypes, os, sys, threading, time
def linger():
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
threading.Thread(target=linger).start()
print("ready", flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2]


@linux_only
def test_a_process_whose_main_thread_ended_is_not_gone_while_another_thread_runs(
    tmp_path: Path,
) -> None:
    release = tmp_path / "release"
    with subprocess.Popen(
        [sys.executable, "-c", _LINGER, str(release)], stdout=subprocess.PIPE
    ) as p:
        try:
            assert p.stdout is not None and p.stdout.readline() == b"ready\n"
            deadline = time.monotonic() + 10
            while _state(p.pid) != "Z" and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _state(p.pid) == "Z"  # the main thread has ended ...
            assert p.poll() is None  # ... but the process cannot be reaped
            assert not _zombie(p.pid)
            release.touch()
            while not _zombie(p.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _zombie(p.pid)  # every thread ended: reapable
            assert p.wait(10) == 0
        finally:
            release.touch()
            p.kill()
            p.wait()


@linux_only
def test_a_process_that_exited_is_a_zombie_until_reaped() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while not _zombie(p.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _zombie(p.pid)
    assert p.wait(10) == 0
