"""bench/holders.py reads `perf sched timehist` and sums who had the cores in a window."""

from __future__ import annotations

import importlib.util
from pathlib import Path

# Loaded from its file: bench/ on sys.path would shadow the tests' own packages (its
# fleet.py hides tests/fleet) for every test after this one in the same worker.
_SPEC = importlib.util.spec_from_file_location(
    "bench_holders", Path(__file__).resolve().parents[2] / "bench" / "holders.py"
)
assert _SPEC is not None and _SPEC.loader is not None
holders = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(holders)

TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
     100.010000 [0000]  <idle>                              0.000      0.000     10.000
     100.012000 [0001]  memoryd[500]                        1.000      4.000      0.500
     100.013000 [0000]  memoryd[501/500]                    0.000      0.000      3.000
     100.014000 [0001]  Web Content[77]                     0.000      0.000      2.000
     100.016000 [0000]  python[900]                         0.000      0.000      3.000
     100.020000 [0001]  python3[42]                         0.000      0.000      2.000
"""


def test_spells_read_every_task_line_and_skip_the_headers() -> None:
    spells = holders.parse(TIMEHIST)
    assert len(spells) == 6
    assert spells[0] == (100.0, 100.01, "idle", 0, 0)
    assert ("Web Content", 77, 77) in [(c, p, t) for _, _, c, p, t in spells]
    assert ("memoryd", 500, 501) in [(c, p, t) for _, _, c, p, t in spells]


def test_held_sums_overlaps_by_role_and_leaves_out_the_searchs_own_threads() -> None:
    spells = holders.parse(TIMEHIST)
    roles = {500: "daemon this", 900: "bench client"}
    got = holders.held(spells, (100.011, 100.015), roles, skip_tids={500})
    # idle ended before the window, python3 began after it, the loop thread (500) is skipped
    assert {k: round(v, 6) for k, v in got.items()} == {
        "daemon this thread": 2.0,  # 100.010-100.013, from 100.011
        "Web Content": 2.0,  # 100.012-100.014
        "bench client": 2.0,  # 100.013-100.016, to 100.015
    }
