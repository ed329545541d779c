"""Reusable arrays for the large temporaries of a search (one value per chunk).

The daemon pins glibc's mmap threshold (runtime/heap.py: memory freed after a load goes
back to the system), so every array above 128 KB is a fresh mmap: at 100k chunks a float64
per chunk is 800 KB, ~200 page faults to touch and an munmap to drop. A keyword search at
100k made a dozen of them: 3.7 ms of CPU in such a process against 1.4 ms without the pin.
A search borrows a set of arrays from SCRATCH and gives it back; there are at most as many
sets as searches ever ran at once, each as large as the largest index it served
(~6 MB at 100k chunks).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from memoryd.runtime.lazy_numpy import np

if TYPE_CHECKING:
    import numpy.typing as npt


class Scratch:
    """Arrays by name, each reused by one search at a time."""

    def __init__(self) -> None:
        self._arrays: dict[str, npt.NDArray[Any]] = {}

    def empty(
        self, name: str, shape: int | tuple[int, ...], dtype: npt.DTypeLike
    ) -> npt.NDArray[Any]:
        """An array of ``shape`` and ``dtype`` (C order), contents undefined."""
        n = shape if isinstance(shape, int) else math.prod(shape)
        a = self._arrays.get(name)
        if a is None or a.dtype != dtype or len(a) < n:
            a = self._arrays[name] = np.empty(n + n // 8, dtype)
        return a[:n] if isinstance(shape, int) else a[:n].reshape(shape)

    def zeros(
        self, name: str, shape: int | tuple[int, ...], dtype: npt.DTypeLike
    ) -> npt.NDArray[Any]:
        a = self.empty(name, shape, dtype)
        a.fill(0)
        return a

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._arrays.values())


class ScratchPool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[Scratch] = []

    @contextlib.contextmanager
    def borrow(self) -> Iterator[Scratch]:
        with self._lock:
            s = self._free.pop() if self._free else Scratch()
        try:
            yield s
        finally:
            with self._lock:
                self._free.append(s)


SCRATCH = ScratchPool()
