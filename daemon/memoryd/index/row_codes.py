"""The small integers the in-memory copies store per chunk for its source and its day.

The keyword copy (keyword/) and the vector copy (vectors/) filter a search by source and by
since/until on these arrays; both encode alike, so the codes live here, below both.
"""

from __future__ import annotations

from memoryd.files.layout import ISO_DAY

__all__ = ["NO_DAY", "SOURCE_CODES", "day_number"]

SOURCE_CODES = {"memory": 0, "sessions": 1}
NO_DAY = 0


def day_number(day: str) -> int:
    """'2026-11-23' -> 20261123, ordered as the strings are; '' (undated) -> 0, which no
    since/until admits."""
    return int(day[:4] + day[5:7] + day[8:10]) if ISO_DAY.fullmatch(day) else NO_DAY
