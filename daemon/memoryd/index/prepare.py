"""A bulk sync's markdown chunked and counted in processes of their own.

A first index of 100k chunks spent its time in Python on both sides of one GIL: chunking
(~6 s of CPU), and the in-memory BM25 built from the chunks after the sync (~9 s, mostly
tokenizing them again). The writer meanwhile waited for the GIL each time SQLite gave it
back. Here the files the writer hands out (readahead.py) are chunked, and the chunks
tokenized and counted for the BM25 copy (keyword_counts), in worker processes: the writer
keeps one core for SQLite, the copy is merged as the batches commit (keyword/build.py's
Stream), and both cores work. Only a large run pays for them (WORKERS_MIN_BYTES). The
workers run at a lower priority (runtime/priority.py): the writer is the critical path
(at 100k chunks, 14.1-14.3 s at nice +10 against 15.0 at +5 and 14.5-17.8 at +0; a third
worker only adds contention: 14.6-16.8 s against 13.6-14.3), and a search must not wait
behind chunking.

The chunker's tokenizer is the bundled one (embeddings/tokenizer.py), as the writer's.
Only the text crosses: the writer reads, hashes and decodes the file (the workspace's
rules for opening files stay on its side), and gets back the chunks and their counts.
Chunks come back as row tuples: as dataclass instances they cost the writer 1.7 s of
unpickling at 100k chunks. What comes back is few, large objects: small ones made on the
pool's thread outlive the run scattered over the small-object heap (the chunker's states
for appends did: the writer chunks the few files it keeps those for itself, sync.py).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.index.chunker import chunk_markdown_state
from memoryd.index.keyword.counts import Counted, Stems, count_chunks, fts5_stems
from memoryd.index.store import ChunkRow, chunk_rows
from memoryd.records import Record
from memoryd.runtime.priority import lower_this_process

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from dataclasses import dataclass as frozen_record  # records.py says why

    from tokenizers import Tokenizer
else:
    from memoryd.records import frozen_record

# multiprocessing and the process pool are imported by the functions that use them: only a
# large bulk run starts workers, and a daemon answering its first search from an existing
# index never does (~14 M instructions of its start, issue 38).

MAX_WORKERS = 2  # with the writer's own core, two keep a 2-core machine busy
# Markdown a bulk run chunks whole (but the files modified last) below this size is chunked
# by the writer itself (sync.py): each worker costs ~0.25 s of CPU to start, and a chunk
# ~1.4-1.5x the CPU through them (the text and the results pickled both ways, each worker
# learning the token costs anew, a lowered priority that a busy machine starves). CPU in
# all, workers against the writer alone, at load 4-10 on 2 cores: 1,001 files (8.7 MB,
# 7,273 chunks) 3.3-3.9 s against 1.9 s; 30k chunks (36 MB) 11.6 s against 7.0; 60k
# (71 MB) 16.4-17.4 s against 12.8-13.5. In wall clock the writer alone was faster up to
# 30k chunks (0.6-0.76x of the workers'); at 45-60k the workers took 0.5-1.1x of its; on an
# idle machine the second core wins sooner. 32 MiB is ~28k chunks of daily logs: larger
# first indexes keep their workers.
WORKERS_MIN_BYTES = 32 << 20


@frozen_record(frozen=True, eq=False, repr=False)
class Prepared(Record):
    """Chunks prepared off the writer: their rows and keyword postings."""

    rows: list[ChunkRow]  # the chunks as their rows hold them (tuples: cheap to send)
    counted: Counted  # the chunks' keyword postings (keyword_counts)


_worker: tuple[Tokenizer, Stems] | None = None


def _start() -> None:
    """A worker's initializer: the chunker's tokenizer (for chunk budgets) and FTS5's."""
    global _worker
    import multiprocessing

    import apsw

    lower_this_process()  # the writer is the critical path, and searches come first

    parent = multiprocessing.parent_process()
    if parent is not None:  # exit with the daemon, even a kill -9 of it
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()

    _worker = (load_tokenizer(), fts5_stems(apsw.Connection(":memory:")))


def _exit_with(sentinel: int) -> None:
    """A worker waits on its task queue, whose pipe it holds both ends of: the daemon's
    death closes nothing it reads. The parent's sentinel does become readable then."""
    import multiprocessing.connection

    multiprocessing.connection.wait([sentinel])
    os._exit(0)


def prepare_markdown(text: str, chunk_tokens: int, overlap: int) -> Prepared:
    """In a worker: what the writer would make of ``text`` itself (sync._sync_markdown)."""
    assert _worker is not None, "prepare_markdown runs in a pool started by start_pool"
    tokenizer, stems = _worker
    chunks, _ = chunk_markdown_state(text, tokenizer, chunk_tokens, overlap)
    rows = chunk_rows(chunks)
    counted = count_chunks([(r[4], r[2]) for r in rows], stems)
    return Prepared(rows, counted)


def start_pool() -> ProcessPoolExecutor:
    """Worker processes, started fresh ("spawn": the daemon has threads, and a fork of a
    process with threads may inherit a lock held mid-operation). They exit with the pool,
    or when the daemon dies (``_exit_with``). A program that indexes in process
    must guard its ``__main__`` as multiprocessing asks: a worker imports it."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = max(1, min(MAX_WORKERS, os.cpu_count() or 1))
    return ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("spawn"), initializer=_start
    )
