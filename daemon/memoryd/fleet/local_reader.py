"""What a local index holds, read for publishing: file versions, and a file's chunks with
their BM25 terms and vectors. Its own read-only connection, one read transaction per call,
so a file's row and its chunks are a consistent snapshot."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memoryd.index import schema
from memoryd.index.keyword.counts import HEADING_WEIGHT, TEXT_WEIGHT, Stems, fts5_stems
from memoryd.index.vectors.windows import WINDOW_SLOTS, centroid

Version = tuple[str, int]  # (file hash, chunks with vectors): what the fleet compares


@dataclass(frozen=True)
class ChunkRow:
    id: int
    source: str
    day: str
    start_line: int
    end_line: int
    heading: str
    text: str
    tokens: int  # BM25 document length: text and heading tokens
    stems: list[str]  # distinct stems
    freqs: list[int]  # doubled column-weighted frequency of each (keyword_mirror's)
    embedding: np.ndarray | None  # the windows' normalised mean
    windows: bytes | None  # float16 window vectors, one after another


@dataclass(frozen=True)
class FilePayload:
    path: str
    source: str
    version: Version
    chunks: list[ChunkRow]


def pg_text(text: str) -> str:
    """Postgres text holds no NUL (a transcript's JSON may carry one as \\u0000)."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


class LocalIndexReader:
    """``read_text``: a readable file's text as ``get`` serves it (None: not readable)."""

    def __init__(self, db_path: Path, read_text: Callable[[str], str | None]) -> None:
        self.db_path = db_path
        self.conn = schema.connect(db_path, readonly=True)
        self.stems: Stems = fts5_stems(self.conn)
        self.read_text = read_text
        self.owner: object = None  # the WorkspaceIndex it reads for (the fleet service's)

    def body(self, path: str, source: str) -> tuple[str | None, int]:
        """What remote ``get`` serves: markdown only (``get`` refuses transcripts)."""
        if source != "memory":
            return None, 0
        text = self.read_text(path)
        if text is None:
            return None, 0
        lines = text.split("\n")
        return pg_text(text), len(lines) - (1 if lines[-1] == "" else 0)

    def close(self) -> None:
        self.conn.close()

    def versions(self) -> dict[str, tuple[str, Version]]:
        """path -> (source, version) of every indexed file (not the skipped ones)."""
        rows = self.conn.execute(
            "SELECT f.path, f.source, f.hash, "
            "  (SELECT count(*) FROM chunks c WHERE c.path = f.path AND c.embedded = 1) "
            "FROM files f WHERE f.skipped_reason IS NULL AND f.hash != ''"
        )
        return {str(p): (str(s), (str(h), int(n))) for p, s, h, n in rows}

    def payloads(self, paths: list[str]) -> Iterator[FilePayload | None]:
        """Each file as the index holds it now (None: gone since versions())."""
        for path in paths:
            with self.conn:  # one read transaction: the file row and its chunks agree
                yield self._payload(path)

    def _payload(self, path: str) -> FilePayload | None:
        found = self.conn.execute(
            "SELECT source, hash FROM files WHERE path = ? AND skipped_reason IS NULL", (path,)
        ).fetchall()
        if not found:
            return None
        source, hash_ = str(found[0][0]), str(found[0][1])
        rows = self.conn.execute(
            "SELECT id, source, day, start_line, end_line, heading, text, embedded "
            "FROM chunks WHERE path = ? ORDER BY start_line, id",
            (path,),
        ).fetchall()
        chunks = []
        embedded = 0
        for row in rows:
            cid, src, day = int(row[0]), str(row[1]), str(row[2])  # type: ignore[arg-type]
            a, b = int(row[3]), int(row[4])  # type: ignore[arg-type]
            heading, text, emb = str(row[5]), str(row[6]), bool(row[7])
            windows = self._windows(cid) if emb else None
            embedded += 1 if emb else 0  # as versions() counts
            embedding = centroid(windows) if windows is not None else None
            t, h = self.stems(text), self.stems(heading)
            freq: Counter[str] = Counter()
            for s, c in Counter(t).items():
                freq[s] += int(2 * TEXT_WEIGHT) * c
            for s, c in Counter(h).items():
                freq[s] += int(2 * HEADING_WEIGHT) * c
            chunks.append(
                ChunkRow(
                    cid,
                    src,
                    day,
                    a,
                    b,
                    pg_text(heading),
                    pg_text(text),
                    len(t) + len(h),
                    list(freq),
                    list(freq.values()),
                    embedding,
                    windows.astype(np.float16).tobytes() if windows is not None else None,
                )
            )
        return FilePayload(path, source, (hash_, embedded), chunks)

    def _windows(self, chunk_id: int) -> np.ndarray | None:
        base = chunk_id * WINDOW_SLOTS
        blobs = [
            bytes(b)
            for (b,) in self.conn.execute(
                "SELECT embedding FROM window_vectors WHERE id BETWEEN ? AND ? ORDER BY id",
                (base, base + WINDOW_SLOTS - 1),
            )
        ]
        if not blobs:
            return None
        return np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(len(blobs), -1)
