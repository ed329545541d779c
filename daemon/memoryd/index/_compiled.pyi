# The index's compiled part (_compiled.h); absent when it could not be built (its users fall
# back to their Python versions).
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

# snippets.ChunkLines: (stems, line, n_lines, vocab)
_Chunk = tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], int, dict[str, int]]

def line_scores(
    chunks: Sequence[_Chunk], numbers: Sequence[int], weights: Sequence[float]
) -> list[list[float]]: ...
def best_window(lines: Sequence[str], scores: Sequence[float], budget: int) -> tuple[int, int]: ...
