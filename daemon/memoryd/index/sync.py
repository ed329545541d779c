"""Bringing the index in line with the files: runs on the writer thread only.

A file is re-read only when its (mtime, size) changed, re-chunked only when its content hash
changed, and written in one transaction per file, keyword rows first: it is searchable by
keyword when its transaction commits, and the embedder adds vectors afterwards. Session
transcripts are ingested from the stored byte offset; the last chunk is re-chunked as it
grows, so chunks stay full-sized however often the file is appended to. A markdown file that
only grew re-chunks its tail (tails.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterable
from concurrent.futures import BrokenExecutor, Future
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from memoryd.files.annotations import strip_annotations
from memoryd.files.layout import IndexedFile, Layout, day_of
from memoryd.files.provenance import Ledger
from memoryd.files.transcripts import forgotten_session_of, parse_transcript
from memoryd.index import line_meta, store
from memoryd.index.chunker import (
    Chunk,
    MarkdownState,
    chunk_appended,
    chunk_lines,
    chunk_markdown_state,
)
from memoryd.index.file_reads import FileReads
from memoryd.index.keyword.mirror import KeywordMirror
from memoryd.index.line_meta import LineMeta, LineMetaMap
from memoryd.index.prepare import WORKERS_MIN_BYTES, Prepared, prepare_markdown, start_pool
from memoryd.index.readahead import ReadAhead
from memoryd.index.secure_delete import fts_secure
from memoryd.index.store import FileRow
from memoryd.index.sync_targets import Targets, sync_targets
from memoryd.index.tails import TailStates, replace_tail
from memoryd.index.transcript_steps import (
    Step,
    find_newline,
    long_line_row,
    read_step,
    transcript_row,
)
from memoryd.index.types import SyncProgress, SyncReport
from memoryd.index.vectors.mirror import VectorMirror
from memoryd.records import Fields, Record
from memoryd.runtime.foreground import Share
from memoryd.runtime.logs import get_logger
from memoryd_client.search_terms import SOURCE_SESSIONS

if TYPE_CHECKING:
    from dataclasses import dataclass as fields_record
    from dataclasses import dataclass as frozen_record  # records.py says why

    from tokenizers import Tokenizer
else:
    from memoryd.records import fields_record, frozen_record

log = get_logger("memoryd.index")

# A run that writes more chunks than this (and than half the in-memory BM25 holds) suspends
# that copy and leaves it to be loaded once after the run: cheaper than following each commit.
BULK_CHUNKS = 2000
# Files per transaction in a bulk run: FTS5 flushes a segment (and merges) per commit, so one
# transaction per file cost a cold index a third of its time in commits and FTS5 inserts.
# Their chunk rows reach chunks (and FTS5) in one statement at the commit (store.move_staged).
BATCH_FILES = 64


@frozen_record(frozen=True, eq=False, repr=False)
class _Chunked(Record):
    """A markdown file read ahead of its turn, and its chunking (prepare.py) under way."""

    row: FileRow
    size: int
    prepared: Future[Prepared]
    meta: dict[int, LineMeta]


def _markdown_row(f: IndexedFile, st: os.stat_result, digest: str) -> FileRow:
    return FileRow(
        f.rel, f.source, digest, st.st_mtime_ns, st.st_size, day_of(f.rel), 0, 0, 0, 1, 0, None
    )


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Syncer(Fields):
    """Brings a workspace's index in line with its files (one writer)."""

    conn: apsw.Connection
    layout: Layout
    # Asked for when a file is chunked (loaded on demand): the bundled one, which the
    # chunking workers of a bulk run (prepare.py) load too.
    tokenizer: Callable[[], Tokenizer]
    chunk_tokens: int
    chunk_overlap: int
    max_file_bytes: int
    on_commit: Callable[[str, FileRow | None], None] = lambda rel, row: None
    mirror: VectorMirror | None = None  # told of removed vectors (store.delete_chunks)
    keywords: KeywordMirror | None = None  # suspended during a bulk run (the caller reloads it)
    # True once the index is closing: a scan stops at the next file (or the next step of a
    # long transcript), each committed as it went, so SIGTERM never waits for a whole scan.
    stopping: Callable[[], bool] = lambda: False
    _batch: list[tuple[str, FileRow | None]] | None = None  # done, not yet committed
    tails: TailStates = field(default_factory=TailStates)  # for appends to markdown files
    # Per-line annotations and provenance (line_meta.py): the map the searches read, and
    # the ledger the provenance comes from (None: none kept, as in benchmarks of the text).
    meta: LineMetaMap = field(default_factory=LineMetaMap)
    ledger: Ledger | None = None
    # The files a forget holds: their chunks' deletes are FTS5 secure ones (secure_delete.py).
    secure: Callable[[str], bool] = lambda rel: False
    before_write: Callable[[], None] = lambda: None  # the deferred copies' load (copies.py)
    between_files: Callable[[], None] = lambda: None  # that load once asked (load_if_asked)

    reads: FileReads = field(init=False)
    # A bulk run's files whose chunker states are not kept (``_for_workers``), this run's.
    _unkept: set[str] = field(init=False, default_factory=set)
    _bulk: int | None = field(init=False, default=None)  # chunks to suspend past; None: no write
    # The lock shared with searches, pauses at most a third of the run (foreground.py).
    _share: Share = field(init=False, default_factory=lambda: Share(bounded=True))

    def __post_init__(self) -> None:
        store.create_staging(self.conn)
        self.reads = FileReads(self.layout, self.max_file_bytes)

    def _committed(self, rel: str, row: FileRow | None) -> None:
        """A file's writes are done: tell on_commit now, or when the open batch commits."""
        if self._batch is None:
            self.meta.commit(rel)
            self.on_commit(rel, row)
        else:
            self._batch.append((rel, row))

    def _between(self) -> None:
        """Between two files: a search being answered goes first (runtime/foreground.py),
        and the deferred copies load once asked (between_files)."""
        self._share.tick()
        self.between_files()

    def _write(self) -> apsw.Connection:
        """The connection, for a write; the run's first calls before_write, then sizes _bulk."""
        if self._bulk is None:
            self.before_write()
            chunks = self.keywords.stats()["chunks"] if self.keywords is not None else 0
            self._bulk = max(BULK_CHUNKS, int(chunks) // 2)
        return self.conn

    def _begin_batch(self) -> None:
        self._write().execute("BEGIN IMMEDIATE")
        self._batch = []

    def _end_batch(self, commit: bool = True) -> None:
        if self._batch is None:
            return
        done, self._batch = self._batch, None
        if not commit:
            if self.conn.in_transaction:  # an error may have rolled it back already
                self.conn.execute("ROLLBACK")  # the staged chunk rows with it
            self.meta.discard()
            return
        store.move_staged(self.conn)
        self.conn.execute("COMMIT")
        for rel, row in done:
            self.meta.commit(rel)
            self.on_commit(rel, row)

    def run(
        self,
        paths: Iterable[Path] | None,
        full: bool,
        progress: Callable[[SyncProgress], None] | None = None,
    ) -> SyncReport:
        report = SyncReport()
        if self.ledger is not None:
            self.ledger.refresh()  # once per run: the lines appended since come with records
        known = store.read_files(self.conn)
        targets = sync_targets(self.layout, known, paths, self._between)
        self._bulk = None
        if self.keywords is not None and sum(rel not in known for rel, _ in targets) > 256:
            self.keywords.suspend()  # a first index, or most of one: bulk from the start
            if not self.conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchall():
                self.keywords.stream()  # built as the batches commit (keyword/build.py's Stream)
        try:
            with contextlib.closing(ReadAhead[IndexedFile, _Chunked](start_pool)) as ahead:
                self._run_ahead(targets, known, full, report, progress, ahead)
        except BaseException:
            self._end_batch(commit=False)
            raise
        finally:
            self._unkept = set()
        self._end_batch()
        return report

    def _run_ahead(
        self,
        targets: Targets,
        known: dict[str, FileRow],
        full: bool,
        report: SyncReport,
        progress: Callable[[SyncProgress], None] | None,
        ahead: ReadAhead[IndexedFile, _Chunked],
    ) -> None:
        total = len(targets)
        handed = 0  # targets considered for reading ahead
        to_workers: set[int] | None = None  # the targets the workers chunk: bulk runs only
        ahead_ok = True
        for done, (rel, f) in enumerate(targets, 1):
            self._between()
            if self.stopping():
                log.info("sync_stopped", done=done - 1, total=total, reason="closing")
                break
            if (
                self.keywords is not None
                and report.chunks_written > (self._bulk or 0)  # None: nothing written yet
                and not self.keywords.suspended
            ):
                self.keywords.suspend()
            # Bulk: files share transactions (with the keyword copy suspended, nothing is
            # staged that a failed file's rolled-back savepoint could leave behind).
            if self._batch is not None and len(self._batch) >= BATCH_FILES:
                self._end_batch()
            if self._batch is None and self.keywords is not None and self.keywords.suspended:
                self._begin_batch()
            if self._batch is not None:  # bulk: the next new files chunked meanwhile
                handed = max(handed, done - 1)
                if to_workers is None:
                    to_workers = self._for_workers(targets, known, full)
                while ahead_ok and handed < total and ahead.room():
                    nxt = targets[handed][1]
                    if nxt is not None and handed in to_workers:
                        ahead_ok = self._hand_out(ahead, nxt)
                    handed += 1
            if f is None:
                if rel in known:
                    with self._write(), fts_secure(self.conn, self.secure(rel)):
                        report.chunks_removed += store.delete_file(self.conn, rel, self.mirror)
                        self._write_meta(rel, {})
                    report.files_removed += 1
                    self._committed(rel, None)
            else:
                report.files_scanned += 1
                try:
                    self._sync_one(f, known.get(rel), full, report, ahead.take(f))
                except apsw.Error:  # the index itself: the caller's to handle
                    raise
                except Exception as exc:  # an input nobody foresaw: the other files go on
                    if self._batch is not None:  # they may have staged what the savepoint undid
                        if self.mirror is not None:
                            self.mirror.missed()
                        if self.keywords is not None:
                            self.keywords.missed()
                    self._failed(f, exc, report)
            if progress is not None and (done == total or done % 20 == 0):
                progress(SyncProgress("indexing", done, total))

    def _sync_one(
        self,
        f: IndexedFile,
        row: FileRow | None,
        full: bool,
        report: SyncReport,
        ahead: _Chunked | None = None,
    ) -> None:
        """``ahead``: ``f`` read, and handed to the chunking workers (``_hand_out``); their
        exception is raised here, as chunking here would."""
        if ahead is not None:
            try:
                p = ahead.prepared.result()
            except BrokenExecutor as exc:  # a worker died (killed?): chunk it here
                log.warning("chunking_workers_failed", path=f.rel, error=repr(exc))
            else:
                self._write_markdown(
                    f, ahead.row, ahead.size, None, p.rows, None, report, ahead.meta
                )
                if self.keywords is not None:  # its rows come with the batch's commit
                    self.keywords.expect([(r[4], r[2]) for r in p.rows], p.counted)
                return
        try:
            st = f.path.stat()
        except OSError:  # vanished between listing and stat: the next event removes it
            return
        if (
            row is not None
            and not full
            and row.hash
            and row.mtime_ns == st.st_mtime_ns
            and row.size == st.st_size
            and (f.source != SOURCE_SESSIONS or row.ingested >= row.size or row.skipped_reason)
        ):
            if row.skipped_reason:
                report.files_skipped += 1
                report.skipped[f.rel] = row.skipped_reason
            return
        if f.name_error is not None:  # stored and shown under its display name
            self._skip(f, st, f.name_error, report)
            return
        if f.source == SOURCE_SESSIONS:  # read from the stored offset, never whole
            forgotten = self.ledger.forgotten_sessions if self.ledger is not None else frozenset()
            gone = forgotten_session_of(f.path, forgotten)
            if gone:  # a new transcript of a forgotten session: skipped, its chunks dropped
                self._skip(f, st, f"session {gone} was forgotten: never indexed again", report)
                return
            while self._sync_transcript(f, row, st, full, report) and not self.stopping():
                row, full = self._row(f.rel), False
            return
        data = self.reads.read(f, st)
        if isinstance(data, str):
            self._skip(f, st, data, report)
        elif data is not None:
            self._sync_markdown(f, row, st, data, full, report)

    def _chunks_whole(self, f: IndexedFile, row: FileRow | None, full: bool) -> bool:
        """``f`` is markdown that ``_sync_one`` would read and chunk whole, whatever it
        holds: new, or a full reindex."""
        return f.source != SOURCE_SESSIONS and f.name_error is None and (row is None or full)

    def _for_workers(self, targets: Targets, known: dict[str, FileRow], full: bool) -> set[int]:
        """The targets (by index) the chunking workers take: those chunked whole, but the
        ones modified last, when they hold WORKERS_MIN_BYTES at least. The chunker's state
        is kept (tails.py) for the files written last, and they are chunked here: from the
        workers it came as many small objects made on the pool's thread, which pinned
        ~85 MB of the small-object heap for good."""
        whole = {
            i: _stat(f)
            for i, (rel, f) in enumerate(targets)
            if f is not None and self._chunks_whole(f, known.get(rel), full)
        }
        # Written last: by mtime (then name), as warm_targets picks them after a restart.
        last = sorted(whole, key=lambda i: (whole[i][0], targets[i][0]))
        bulk = last[: max(0, len(last) - self.tails.files)]
        if sum(whole[i][1] for i in bulk) >= WORKERS_MIN_BYTES:
            return set(bulk)
        # Chunked here, cheaper than starting the workers: their states are not kept either.
        self._unkept = {targets[i][0] for i in bulk}
        return set()

    def _hand_out(self, ahead: ReadAhead[IndexedFile, _Chunked], f: IndexedFile) -> bool:
        """Read ``f`` (one that ``_chunks_whole``) and hand it to the chunking workers;
        a file that cannot be read is left to ``_sync_one`` (it says why there). False
        when the workers cannot take more: the rest is chunked here, as without them."""
        try:
            st = f.path.stat()
        except OSError:
            return True
        data = self.reads.read(f, st, quiet=True)
        if not isinstance(data, bytes):
            return True
        digest = hashlib.sha256(data).hexdigest()
        text = self.reads.decode(f.rel, data, digest)
        row = _markdown_row(f, st, digest)
        args = (strip_annotations(text), self.chunk_tokens, self.chunk_overlap)
        try:
            ahead.add(
                f,
                len(data),
                lambda pool: _Chunked(
                    row, len(data), pool.submit(prepare_markdown, *args), self._meta_of(f.rel, text)
                ),
            )
        except Exception as exc:  # no processes here (a sandbox, a limit): chunk it here
            log.warning("chunking_workers_unavailable", error=repr(exc))
            return False
        return True

    def _failed(self, f: IndexedFile, exc: Exception, report: SyncReport) -> None:
        """Skip a file indexing failed on, saying why in status; it is tried again when it
        changes (or on a full reindex)."""
        log.error(
            "file_index_failed", path=f.rel, error=f"{type(exc).__name__}: {exc}", exc_info=exc
        )
        try:
            st = f.path.stat()
        except OSError:
            return
        self._skip(f, st, f"could not be indexed: {type(exc).__name__}: {exc}"[:300], report)

    def _row(self, rel: str) -> FileRow | None:
        return store.read_files(self.conn, rel).get(rel)

    def _skip(self, f: IndexedFile, st: os.stat_result, reason: str, report: SyncReport) -> None:
        row = FileRow(
            f.rel,
            f.source,
            "skipped",
            st.st_mtime_ns,
            st.st_size,
            day_of(f.rel),
            0,
            0,
            0,
            1,
            0,
            reason,
        )
        with self._write(), fts_secure(self.conn, self.secure(f.rel)):
            report.chunks_removed += store.delete_chunks(self.conn, f.rel, mirror=self.mirror)
            store.upsert_file(self.conn, row)
            self._write_meta(f.rel, {})
        report.files_skipped += 1
        report.skipped[f.rel] = reason
        self._committed(f.rel, row)

    def _sync_markdown(
        self,
        f: IndexedFile,
        row: FileRow | None,
        st: os.stat_result,
        data: bytes,
        full: bool,
        report: SyncReport,
    ) -> None:
        resume = None
        if row is not None and not full and not row.skipped_reason:
            resume = self.tails.take(f.rel, row.hash, data)  # (hashes data on the way)
        digest = hashlib.sha256(data).hexdigest() if resume is None else resume.digest
        new_row = _markdown_row(f, st, digest)
        if row is not None and not full and row.hash == digest and not row.skipped_reason:
            with self.conn:  # touched, not changed: the new mtime only (no chunk: no _write)
                store.upsert_file(self.conn, new_row)
            self._committed(f.rel, new_row)
            return
        state = tail = None
        chunks: list[Chunk] = []
        # Annotation comments are not indexed as text (their words would weigh in BM25 and
        # the vectors): line_meta keeps what they say, read from the raw lines.
        if resume is not None:  # only grew: decode and chunk from where the chunker resumes
            state = resume.state
            raw = self.reads.decode(f.rel, data[resume.offset :], digest)
            tail = chunk_appended(state, strip_annotations(raw), self.tokenizer(), resume.first)
        if state is None or tail is None:
            raw = self.reads.decode(f.rel, data, digest)
            chunks, state = chunk_markdown_state(
                strip_annotations(raw),
                self.tokenizer(),
                self.chunk_tokens,
                self.chunk_overlap,
            )
            meta = self._meta_of(f.rel, raw)
        else:  # only the new lines are read for it
            assert resume is not None
            meta = self._meta_of(f.rel, raw, resume.first + 1, grew=True)
        rows = store.chunk_rows(chunks)
        self._write_markdown(f, new_row, len(data), state, rows, tail, report, meta)

    def _write_markdown(
        self,
        f: IndexedFile,
        new_row: FileRow,
        size: int,
        state: MarkdownState | None,
        rows: list[store.ChunkRow],
        tail: tuple[int, list[Chunk]] | None,
        report: SyncReport,
        meta: dict[int, LineMeta],
    ) -> None:
        """Write a markdown file's chunks (``rows``) whole, or (``tail``: chunk_appended's)
        the chunks after those it keeps; ``state`` is kept for the next append. ``meta``:
        its lines' annotations and provenance, replaced in the same transaction."""
        with self._write(), fts_secure(self.conn, self.secure(f.rel)):
            store.upsert_file(self.conn, new_row)
            self._write_meta(f.rel, meta)
            if tail is None:
                report.chunks_removed += store.delete_chunks(self.conn, f.rel, mirror=self.mirror)
                # In a bulk batch the rows wait for its commit: one FTS5 segment for the batch.
                report.chunks_written += store.insert_rows(
                    self.conn, f.rel, f.source, new_row.day, rows, defer=self._batch is not None
                )
            else:
                removed, written = replace_tail(
                    self.conn, f.rel, f.source, new_row.day, *tail, mirror=self.mirror
                )
                report.chunks_removed += removed
                report.chunks_written += written
        if state is None or f.rel in self._unkept:  # not kept for the bulk's older files
            self.tails.drop(f.rel)
        else:
            self.tails.put(f.rel, new_row.hash, size, state)
        report.files_changed += 1
        self._committed(f.rel, new_row)

    def _meta_of(
        self, rel: str, text: str, first: int = 1, grew: bool = False
    ) -> dict[int, LineMeta]:
        """The per-line meta of markdown file ``rel``'s ``text`` (its lines from ``first``
        on); ``grew``: the file only grew, its lines before ``first`` keep theirs."""
        meta = line_meta.file_meta(rel, text, self.ledger, first)
        if grew and self.meta.has(rel):
            meta |= dict(self.meta.lines(rel, 1, first - 1))
        return meta

    def _write_meta(self, rel: str, meta: dict[int, LineMeta]) -> None:
        """In the caller's transaction; the map takes it when that commits."""
        had = self.meta.has(rel)
        if had or meta:
            line_meta.write(self.conn, rel, meta, had)
            self.meta.stage(rel, meta)

    def _sync_transcript(
        self,
        f: IndexedFile,
        row: FileRow | None,
        st: os.stat_result,
        full: bool,
        report: SyncReport,
    ) -> bool:
        """Ingest what was appended since the stored offset (the last chunk is re-chunked as
        it grows), a step (TRANSCRIPT_STEP_BYTES, up to ``max_file_bytes`` for a longer line)
        at a time; True when more is left to read."""
        try:
            with self.reads.open(f) as fh:
                s = read_step(fh, row, st, full, self.max_file_bytes)
        except OSError as exc:
            log.warning("file_unreadable", path=f.rel, error=str(exc))
            return False
        if s is None:
            self._skip(f, st, "binary: contains NUL bytes", report)
            return False
        # The old tail region was counted already; only lines after it add to `malformed`.
        head = parse_transcript(s.buf[: s.old_end - s.start_off], first_line=s.start_line)
        new = s.buf[s.old_end - s.start_off :]
        if len(new) >= self.max_file_bytes and b"\n" not in new:
            # One line longer than a whole read (a tool's output pasted whole): reading from
            # here would never reach its end, and the lines after it would never be indexed.
            return self._skip_long_line(f, row, st, s, s.start_line + head.lines_consumed, report)
        tail = parse_transcript(new, first_line=s.start_line + head.lines_consumed)
        if row is not None and not s.restart and tail.consumed == 0:
            with self.conn:  # nothing new but a torn last line: the stat only (no chunk)
                store.upsert_file(self.conn, replace(row, mtime_ns=st.st_mtime_ns, size=st.st_size))
            return False
        chunks: list[Chunk] = chunk_lines(
            head.messages + tail.messages, self.tokenizer(), self.chunk_tokens, self.chunk_overlap
        )
        new_row = transcript_row(f, row, st, s, head, tail, chunks)
        with self._write(), fts_secure(self.conn, self.secure(f.rel)):
            report.chunks_removed += store.delete_chunks(
                self.conn, f.rel, None if s.restart else s.start_line, self.mirror
            )
            store.upsert_file(self.conn, new_row)
            report.chunks_written += store.insert_chunks(
                self.conn, f.rel, f.source, new_row.day, chunks
            )
        report.files_changed += 1
        self._committed(f.rel, new_row)
        return len(s.buf) >= s.want and new_row.ingested < st.st_size

    def _skip_long_line(
        self,
        f: IndexedFile,
        row: FileRow | None,
        st: os.stat_result,
        s: Step,
        line: int,
        report: SyncReport,
    ) -> bool:
        """Step over transcript line ``line`` (where step ``s`` left off, longer than
        max_file_bytes), counted as malformed. The chunks before it stay as they are and the
        next message starts a new chunk. False while the line has no newline yet (still
        being written)."""
        try:
            with self.reads.open(f) as fh:
                end = find_newline(fh, s.old_end + self.max_file_bytes)
        except OSError as exc:
            log.warning("file_unreadable", path=f.rel, error=str(exc))
            return False
        if end is None:
            return False
        log.warning(
            "session_line_too_long",
            path=f.rel,
            line=line,
            bytes=end - s.old_end,
            max_file_bytes=self.max_file_bytes,
        )
        new_row = long_line_row(f, row, st, s, end, line)
        with self._write(), fts_secure(self.conn, self.secure(f.rel)):
            if row is None or s.restart:  # a rewritten transcript: its old chunks go
                report.chunks_removed += store.delete_chunks(self.conn, f.rel, None, self.mirror)
            store.upsert_file(self.conn, new_row)
        report.files_changed += 1
        self._committed(f.rel, new_row)
        return new_row.ingested < st.st_size


def _stat(f: IndexedFile) -> tuple[int, int]:
    """(mtime_ns, size) of ``f``; (0, 0) when it vanished."""
    try:
        st = f.path.stat()
    except OSError:
        return 0, 0
    return st.st_mtime_ns, st.st_size
