"""The reused arrays of a search's large temporaries (index/scratch.py)."""

from __future__ import annotations

import numpy as np

from memoryd.index.scratch import ScratchPool


def test_a_set_is_reused_by_the_next_search_and_never_shared_by_two_at_once() -> None:
    pool = ScratchPool()
    with pool.borrow() as a:
        first = a.zeros("x", 1000, np.float64)
        assert first.shape == (1000,) and not first.any()
        first[:] = 7.0
        with pool.borrow() as b:  # a second search meanwhile gets its own set
            assert b is not a
            assert not b.zeros("x", 1000, np.float64).any()
    with pool.borrow() as again:
        assert again in (a, b)
        reused = again.empty("x", 500, np.float64)
        assert np.shares_memory(reused, again.empty("x", 800, np.float64))
        grid = again.empty("m", (3, 4), np.float32)
        assert grid.shape == (3, 4) and grid.flags.c_contiguous
        assert again.empty("x", 100, np.int16).dtype == np.int16  # another dtype: a new array
