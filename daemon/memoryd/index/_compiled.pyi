# The index's compiled part (_compiled.h); absent when it could not be built (its users fall
# back to their Python versions).
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

_T = TypeVar("_T")

# snippets.ChunkLines: (stems, line, n_lines, vocab, entries)
_Chunk = tuple[memoryview, memoryview, int, dict[str, int], bytes]

# LineStems._lent: its chunks by id, their uses (ticks), the first tick this call gives
_Lru = tuple[dict[int, tuple[int, Any]], dict[int, int], int]

def line_scores(
    chunks: Sequence[_Chunk],
    numbers: Sequence[int],
    weights: Sequence[float],
    vocab: dict[str, int] | None = None,
) -> list[list[float]] | None: ...
def cached_line_scores(
    lru: _Lru,
    cands: list[_T],
    numbers: Sequence[int],
    weights: Sequence[float],
    vocab: dict[str, int],
    timed_of: Callable[[str], Sequence[bool]] | None = None,
    boost: float = 1.0,
) -> list[_T] | None: ...
def best_window(lines: Sequence[str], scores: Sequence[float], budget: int) -> tuple[int, int]: ...
def snippet(
    text: str,
    start_line: int,
    end_line: int,
    scores: Sequence[float],
    budget: int,
    text_lines: Callable[[str], tuple[str, ...]],
    whole_lines: Callable[[str, int, int, int], tuple[str, int] | None],
    snippet_type: type[_T],
) -> _T | None: ...
def take_spans(
    vectors: npt.NDArray[np.float32], spans: Sequence[tuple[int, int]], out: npt.NDArray[np.float32]
) -> int: ...
def span_best(
    sims: npt.NDArray[np.float32],
    spans: Sequence[tuple[int, int]],
    wids: npt.NDArray[np.int64],
    slots: int,
) -> tuple[list[int], list[float]]: ...
def bm25_top(
    terms: Sequence[tuple[Any, ...]],
    norm: npt.NDArray[np.float64],
    keep: npt.NDArray[np.bool_],
    chunk_id: npt.NDArray[np.int64],
    limit: int,
) -> list[tuple[int, float]]: ...
def known_top(
    cands: list[Any],
    vector: bool,
    hybrid: bool,
    idf_total: float,
    weights: tuple[float, float, float, float, float],
    keep: int,
) -> list[tuple[float, float | None, float | None, Any]] | None: ...
def hit_dicts(hits: list[Any], hit_type: type) -> list[dict[str, Any]] | None: ...
def hit_rows(hits: list[Any]) -> dict[str, Any] | None: ...
def hit_rows_of(hits: list[Any], hit_type: type) -> dict[str, Any] | None: ...
def pack_frame(obj: Any) -> bytes | None: ...
def stat_many(paths: Sequence[str]) -> list[tuple[int, int] | None]: ...
def fs_type(path: str) -> int | str | None: ...
def watch_open() -> int: ...
def watch_add(fd: int, path: str, mask: int, file: bool) -> int: ...
def watch_remove(fd: int, wd: int) -> None: ...
def watch_ready(fd: int, mounts: int) -> int: ...
def watch_read(fd: int) -> list[int]: ...
def make_candidates(
    cls: type[_T],
    names: tuple[str, ...],
    ids: list[int],
    found: Mapping[int, tuple[Any, ...]],
    bm25: Mapping[int, float] | None,
    tail: tuple[Any, ...],
) -> list[_T] | None: ...
def keyword_hits(
    ids: list[int],
    found: Mapping[int, tuple[Any, ...]],
    uses: tuple[dict[int, int], int] | None,
    bm25: dict[int, float] | list[tuple[int, float]] | None,
    sources: tuple[str, ...],
    lines: tuple[
        _Lru,
        Sequence[int],
        Sequence[float],
        dict[str, int],
        Callable[[str], Sequence[bool]] | None,
        float,
    ],
    weights: tuple[float, float, float, float, float, float],
    keep: int,
    show: tuple[Any, ...],
    dating: tuple[Any, ...] | None,
) -> list[Any] | None: ...
def day_chunks(
    day: Any,
    alive: Any,
    source: Any,
    chunk_id: Any,
    used: int,
    numbers: tuple[int, ...],
    codes: tuple[int, ...],
    limit: int,
) -> list[int]: ...
