"""The in-memory BM25 kept on disk beside the index, so that a start reads it back in a
fraction of a second instead of re-tokenising every chunk (~30 s at 100k chunks).

It is written when the index closes cleanly and trusted at open only when it describes
exactly the chunks in the index: a digest of every chunk's (id, text hash, heading length,
source, day) must match, and so must the file format and the stems the tokenizer gives a
probe text (a tokenizer change makes every saved stem wrong). Anything else (a crash after
writes, a file from another version) and the copy is rebuilt from the chunks, as without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

import apsw

from memoryd.index.keyword.build import Postings
from memoryd.index.keyword.mirror import KeywordMirror
from memoryd.runtime.lazy_numpy import np
from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.index")

FORMAT = 1
PROBE = "Running runners ran: naïve CAFÉ déjà-vu, 2024-05-01 x1y2 東京 données"
_ARRAYS = ("length", "source", "day", "chunk_id", "counts", "slots", "freq2")


def path_for(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".bm25")


def chunks_digest(conn: apsw.Connection) -> str:
    """What the copy depends on, for every chunk: a text's hash covers heading and text."""
    rows = conn.execute(
        "SELECT id, text_hash, length(heading), source, day FROM chunks ORDER BY id"
    )
    h = hashlib.blake2b(digest_size=20)
    h.update("\n".join(map(repr, rows)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _stamp(mirror: KeywordMirror, conn: apsw.Connection) -> dict[str, object]:
    return {"format": FORMAT, "probe": mirror.analyze(PROBE, "")[1], "chunks": chunks_digest(conn)}


def save(mirror: KeywordMirror, path: Path, conn: apsw.Connection) -> bool:
    """Write the copy (atomically); without a usable copy, remove any stale file."""
    saved = mirror.export()
    if saved is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return False
    meta = {**_stamp(mirror, conn), "rows": saved.rows, "tokens": saved.tokens}
    stems = "\0".join(saved.stems).encode("utf-8", "surrogatepass")
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        np.savez(
            f,
            meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
            stems=np.frombuffer(stems, np.uint8),
            **{name: getattr(saved, name) for name in _ARRAYS},
        )
    os.replace(tmp, path)
    return True


def load(mirror: KeywordMirror, path: Path, conn: apsw.Connection) -> bool:
    """Load the copy from ``path`` if it matches the index; False when it does not (or is
    missing or unreadable): the caller builds it from the chunks."""
    if mirror.max_bytes <= 0:
        return False
    try:
        # Our own handle: np.load leaves the file it opened open when the content is bad.
        with path.open("rb") as fh, np.load(fh, allow_pickle=False) as z:
            arrays = {name: z[name] for name in (*_ARRAYS, "meta", "stems")}
    except FileNotFoundError:
        return False
    except Exception as exc:  # truncated, not ours (zipfile, numpy, OS errors): rebuilt
        log.warning("keyword_sidecar_unreadable", path=str(path), error=repr(exc))
        return False
    meta = json.loads(arrays["meta"].tobytes())
    stamp = _stamp(mirror, conn)
    if any(meta.get(k) != v for k, v in stamp.items()):
        return False
    stems = arrays["stems"].tobytes().decode("utf-8", "surrogatepass")
    saved = Postings(
        **{name: arrays[name] for name in _ARRAYS},
        rows=int(meta["rows"]),
        tokens=int(meta["tokens"]),
        stems=stems.split("\0") if stems else [],
    )
    if len(saved.stems) != len(saved.counts) or int(saved.counts.sum()) != len(saved.slots):
        return False
    mirror.adopt(saved)
    return True
