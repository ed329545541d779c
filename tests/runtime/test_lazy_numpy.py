"""numpy imported on first use (runtime/lazy_numpy.py): no thread sees it half-imported, and
once imported every module that used the stand-in holds numpy itself."""

from __future__ import annotations

import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.runtime.lazy_numpy import LazyModule, imported

# The module the stand-ins below import: it stops half-way until the test lets it go on.
SLOW_MODULE = """
import lazy_gate

first = "set before the pause"
lazy_gate.entered.set()
lazy_gate.go_on.wait(60)
last = "set after the pause"
"""


@pytest.fixture
def slow_module(tmp_path: Path) -> Iterator[str]:
    name = f"lazy_slow_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(SLOW_MODULE)
    gate = types.ModuleType("lazy_gate")
    gate.entered = threading.Event()  # type: ignore[attr-defined]
    gate.go_on = threading.Event()  # type: ignore[attr-defined]
    sys.modules["lazy_gate"] = gate
    sys.path.insert(0, str(tmp_path))
    try:
        yield name
    finally:
        gate.go_on.set()  # type: ignore[attr-defined]
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)
        sys.modules.pop("lazy_gate", None)


def _waiting_in_load(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "_lazy_load":
            return True
        frame = frame.f_back
    return False


def test_a_thread_reading_during_the_import_waits_for_the_whole_module(slow_module: str) -> None:
    stand_in = LazyModule(slow_module, "slow")
    user = types.ModuleType("lazy_user")
    user.slow = stand_in  # type: ignore[attr-defined]
    sys.modules["lazy_user"] = user
    gate = sys.modules["lazy_gate"]
    got: dict[str, object] = {}

    def read(who: str) -> None:
        try:
            got[who] = stand_in.last
        except BaseException as exc:  # what a half-imported module would give
            got[who] = exc

    try:
        first = threading.Thread(target=read, args=("first",))
        first.start()
        assert gate.entered.wait(60)  # the import is half-way, its module in sys.modules
        assert slow_module in sys.modules and not imported(stand_in)
        second = threading.Thread(target=read, args=("second",))
        second.start()
        for _ in range(60_000):  # until it waits for the import (no time asserted)
            if _waiting_in_load(second):
                break
            threading.Event().wait(0.001)
        assert "second" not in got  # it has not read the half-run module
        gate.go_on.set()
        first.join(60)
        second.join(60)
        assert got == {"first": "set after the pause", "second": "set after the pause"}
        module = sys.modules[slow_module]
        assert imported(stand_in)
        assert user.slow is module  # type: ignore[attr-defined]
        assert stand_in.first == "set before the pause"  # a kept stand-in still reads it
    finally:
        sys.modules.pop("lazy_user", None)


def test_the_stand_in_has_no_name_of_its_own_that_could_hide_the_modules() -> None:
    # np.load is numpy's: the stand-in's own names all start with _lazy_.
    own = [n for n in dir(LazyModule) if not n.startswith("_")]
    assert own == []
    assert all(n.startswith("_lazy_") for n in LazyModule.__slots__)


NUMPY_ON_FIRST_USE = """
import sys, threading
import memoryd.index.workspace, memoryd.index.keyword.sidecar, memoryd.embeddings.fallback
from memoryd.runtime import lazy_numpy
assert "numpy" not in sys.modules, "imported with the engine"
from memoryd.index.keyword.build import Docs
from memoryd.index.vectors import mirror

users = [m for n, m in sys.modules.items() if n.startswith("memoryd.") and "np" in vars(m)]
assert all(vars(m)["np"] is lazy_numpy.np for m in users)
start, made, errors = threading.Barrier(8), [], []

def first_use():
    start.wait()
    try:
        made.append(len(Docs.empty(5).length) + len(mirror.dot(mirror.np.ones((2, 3),
            mirror.np.float32), mirror.np.ones(3, mirror.np.float32))))
    except BaseException as exc:
        errors.append(exc)

threads = [threading.Thread(target=first_use) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
import numpy
assert errors == [] and made == [7] * 8, (errors, made)
assert all(vars(m)["np"] is numpy for m in users), [m for m in users if vars(m)["np"] is not numpy]
assert lazy_numpy.np is numpy  # a module imported from now on gets numpy itself
print(len(users))
"""


def test_numpy_comes_with_its_first_use_and_then_is_every_modules_np() -> None:
    out = subprocess.run([sys.executable, "-c", NUMPY_ON_FIRST_USE], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= 10  # the engine's modules that use numpy
