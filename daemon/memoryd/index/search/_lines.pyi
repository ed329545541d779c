# The compiled module (_lines.c); absent when it could not be built (snippets.py falls back).
from collections.abc import Sequence

from memoryd.index.search.snippets import ChunkLines

def line_scores(
    chunks: Sequence[ChunkLines], numbers: Sequence[int], weights: Sequence[float]
) -> list[list[float]]: ...
def best_window(lines: Sequence[str], scores: Sequence[float], budget: int) -> tuple[int, int]: ...
