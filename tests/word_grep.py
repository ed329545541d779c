"""Which files hold a line's words: the byte-grep of the forget and purge tests (the index
database, its WAL, the keyword copy's file, any file under a folder)."""

from __future__ import annotations

import contextlib
import gzip
import os
import zlib
from pathlib import Path


def holders(*tops: Path, words: tuple[bytes, ...]) -> list[str]:
    """Every file under ``tops`` whose bytes hold one of the words (any case)."""
    found = []
    for top in tops:
        for folder, _, names in os.walk(top):
            for name in names:
                path = Path(folder) / name
                try:
                    raw = path.read_bytes()
                except OSError:
                    continue
                data = raw.lower()
                if name.endswith(".gz"):  # an archive: what it unpacks to
                    with contextlib.suppress(OSError, EOFError, zlib.error):
                        data += gzip.decompress(raw).lower()
                if any(w in data for w in words):
                    found.append(str(path.relative_to(top.parent)))
    return sorted(found)
