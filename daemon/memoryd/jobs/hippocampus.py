"""hippocampus: fold the last days' notes into MEMORY.md with the configured LLM.

MEMORY.md is a person's curated memory, so this job refuses to write what it cannot
verify. On every failure (LLM down, garbage, empty or cut-off answer, an answer that drops
too much or a heading, an edit made meanwhile, shutdown) MEMORY.md stays byte-identical.
When it does write: the previous version is kept in ``memory/.history/`` first (and
committed when the workspace is a git repository), the write happens only if MEMORY.md's
hash is still the one read (checked again just before the atomic rename), and the index
picks the change up at once. Daily files are only read, never modified.

Input larger than the model's window is never cut: the notes are worked through in parts
(durable facts extracted from each, repeatedly if needed), then merged into MEMORY.md.
"""

from __future__ import annotations

import datetime as dt
import difflib
import errno
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memoryd.errors import ForbiddenPath, NotFound
from memoryd.files.fsutil import atomic_write_at
from memoryd.files.layout import (
    HISTORY_DIR,
    MEMORY_DIR,
    MEMORY_FILES,
    NOTE_SUFFIX,
    TRANSCRIPT_SUFFIX,
    Layout,
    archived_daily_dir,
    transcript_dirs,
)
from memoryd.files.provenance import ledger_for
from memoryd.files.reader import read_all
from memoryd.files.transcripts import stream_transcript
from memoryd.jobs import _text, curation
from memoryd.jobs._git import Git, GitError
from memoryd.jobs.base import JobContext, JobFailed, JobResult, JobSkipped
from memoryd.jobs.llm import LlmClient, LlmError
from memoryd.jobs.llm_config import llm_problem
from memoryd.runtime.config import HippocampusConfig
from memoryd.secrets import mask, redact
from memoryd.sync.conflict_note import find_notes

NAME: Final = "hippocampus"
PROMPT_RESERVE_TOKENS: Final = 600  # instructions and markers around the inputs
OUTPUT_HEADROOM: Final = 0.9  # the new MEMORY.md may grow a little past the old one
MAX_REDUCE_ROUNDS: Final = 4
HIGHLIGHT_CHARS: Final = 500  # per transcript message: highlights, not the transcript
PROMPT_MARKERS: Final = ("<<<MEMORY.md", "MEMORY.md>>>", "<<<NOTES", "NOTES>>>")

SYSTEM_UPDATE: Final = """\
You maintain MEMORY.md, the long-term memory of an AI agent: a markdown file that people \
also edit by hand. You get the current MEMORY.md and notes from the last days (daily logs, \
perhaps conversation highlights), oldest first. Reply with the complete updated MEMORY.md:
- keep all durable knowledge already in it; remove an item only when a newer note clearly \
makes it obsolete or wrong;
- add the durable knowledge from the notes: decisions, preferences, facts about people, \
projects and tools, lessons learned, commitments; leave out small talk and passing details;
- when facts conflict, the newer one wins;
- keep the file's own structure: its headings, their order, its style; add a section only \
when nothing fits;
- reply with the file's content only: no preamble, no explanation, no code fence."""

SYSTEM_EXTRACT: Final = """\
You help maintain an AI agent's long-term memory. From the notes you get (one part of \
several, oldest first), list every piece of durable knowledge worth keeping: decisions, \
preferences, facts about people, projects and tools, lessons learned, commitments. One \
markdown bullet each, starting with its date when known; when two notes conflict, keep the \
newer. Leave out small talk and passing details. Reply with the bullets only."""


@dataclass(frozen=True)
class Memory:
    path: Path  # the real file to write (a symlink inside the workspace is written through)
    rel: str
    data: bytes | None  # None: there is no MEMORY.md yet
    text: str
    sha: str


def _sha(data: bytes | None) -> str:
    return hashlib.sha256(data or b"").hexdigest()[:16]


class _Edited(Exception):
    """MEMORY.md is no longer what the job read."""


def read_memory(root: Path, max_bytes: int) -> Memory:
    """MEMORY.md as it is now, opened beneath the workspace by the reading rule: a link to a
    file that is not memory (or out of the workspace) is neither sent nor rewritten."""
    name = next((n for n in MEMORY_FILES if (root / n).is_file()), MEMORY_FILES[0])
    try:
        opened = Layout(root).open_memory(name)
    except NotFound:
        return Memory(root / name, name, None, "", _sha(None))
    except ForbiddenPath as exc:
        raise JobFailed(f"{exc.message}: {name} is not rewritten") from None
    with os.fdopen(opened.fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise JobFailed(
                f"{name} is {size} bytes, over index.max_file_bytes ({max_bytes}): not rewritten"
            )
        data = read_all(fh.fileno(), max_bytes + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise JobFailed(f"{name} is not valid UTF-8: not rewritten") from None
    return Memory(root / opened.rel, opened.rel, data, text, _sha(data))


class _Notes:
    """Note blocks gathered up to a budget of characters: what the run's LLM calls can
    condense (beyond it the run fails before its first call, and reading stops)."""

    def __init__(self, ctx: JobContext) -> None:
        cfg = ctx.config.llm
        self.part_chars = max(
            1, _text.chars_for(cfg.context_tokens - cfg.max_output_tokens - PROMPT_RESERVE_TOKENS)
        )
        # One call per part of the first round, one to merge: the later rounds' calls come
        # out of what is left, and the client stops them at the cap in any case.
        self.max_chars = max(0, cfg.max_calls_per_run - 1) * self.part_chars
        self.cap = cfg.max_calls_per_run
        self.blocks: list[str] = []
        self.chars = 0
        self.over = False

    def add(self, block: str) -> bool:
        """Keep ``block``; False once over the budget (stop reading)."""
        self.blocks.append(block)
        self.chars += len(block)
        self.over = self.chars > self.max_chars
        return not self.over

    def refuse(self, report: dict[str, Any], what: str) -> JobFailed:
        need = -(-self.chars // self.part_chars) + 1
        return JobFailed(
            f"the notes of {what} are over {self.chars // _text.CHARS_PER_TOKEN} "
            f"tokens: condensing them takes more than {need} LLM calls, over "
            f"llm.max_calls_per_run ({self.cap}); lower "
            "jobs.hippocampus.lookback_days or raise llm.max_calls_per_run. "
            "MEMORY.md unchanged",
            report,
        )


def read_notes(
    ctx: JobContext, opts: HippocampusConfig, gate: curation.Gate | None = None
) -> tuple[list[str], dict[str, Any]]:
    """Blocks of notes, oldest first: daily files of the window, then transcript highlights.
    Each file is read within index.max_file_bytes (a transcript a block at a time), and all
    of them within what llm.max_calls_per_run can condense: JobFailed beyond."""
    today = ctx.now.date()
    first = today - dt.timedelta(days=opts.lookback_days - 1)
    notes = _Notes(ctx)
    layout = ctx.layout
    max_bytes = ctx.config.index.max_file_bytes
    files: list[str] = []
    too_large: list[str] = []
    report: dict[str, Any] = {"daily_files": files, "sessions": 0}
    what = f"the last {opts.lookback_days} days"
    for offset in range(opts.lookback_days):
        day = first + dt.timedelta(days=offset)
        for path in _daily_files(ctx.root, day):
            with layout.open_file(path) as fh:
                data = read_all(fh.fileno(), max_bytes + 1)
            if len(data) > max_bytes:
                too_large.append(ctx.rel(path))
                continue
            text = data.decode("utf-8", errors="replace").strip()
            if gate is not None:  # untrusted, system and non-interactive lines never go
                text = gate.filter_text(text, ctx.rel(path)).strip()
            if text:
                files.append(ctx.rel(path))
                if not notes.add(f"=== {ctx.rel(path)} ===\n{text}\n"):
                    raise notes.refuse(report, what)
    if too_large:
        report["too_large"] = too_large  # named, not silently left out
    if opts.include_sessions:
        since = dt.datetime.combine(first, dt.time(), ctx.now.tzinfo).timestamp()
        for path in _recent_transcripts(ctx.root, since):
            lines: list[str] = []
            with layout.open_file(path) as fh:
                for _raw, parsed in stream_transcript(fh):
                    lines += [
                        f"- {text[:HIGHLIGHT_CHARS]}"
                        + ("..." if len(text) > HIGHLIGHT_CHARS else "")
                        for _, text in parsed.messages
                    ]
                    if notes.chars + sum(map(len, lines)) > notes.max_chars:
                        break
            if lines:
                report["sessions"] += 1
                block = f"=== {ctx.rel(path)} (highlights) ===\n" + "\n".join(lines) + "\n"
                if not notes.add(block):
                    raise notes.refuse(report, what)
    return notes.blocks, report


def _daily_files(root: Path, day: dt.date) -> list[Path]:
    found: list[Path] = []
    for folder in (root / MEMORY_DIR, archived_daily_dir(root, day.year)):
        if folder.is_dir():
            found += sorted(
                p
                for p in folder.glob(f"{day.isoformat()}*{NOTE_SUFFIX}")
                if p.is_file() and p.resolve().is_relative_to(root)
            )
    return found


def _recent_transcripts(root: Path, since: float) -> list[Path]:
    """Transcripts written since ``since``: ``sessions/`` and OpenClaw's copies."""
    found = [
        (p.stat().st_mtime, p)
        for folder in transcript_dirs(root)
        if folder.is_dir()
        for p in folder.glob(f"*{TRANSCRIPT_SUFFIX}")
        if p.is_file() and p.stat().st_mtime >= since
    ]
    return [p for _, p in sorted(found)]


def consolidate(
    ctx: JobContext, llm: LlmClient, memory: Memory, notes: list[str], report: dict[str, Any]
) -> str:
    """The LLM's complete updated MEMORY.md (finished, not empty); LlmError otherwise."""
    cfg = ctx.config.llm
    budget = cfg.context_tokens - cfg.max_output_tokens - PROMPT_RESERVE_TOKENS
    mem_tokens = _text.tokens(memory.text)
    if mem_tokens > cfg.max_output_tokens * OUTPUT_HEADROOM:
        raise JobFailed(
            f"MEMORY.md is about {mem_tokens} tokens: the complete updated file "
            f"would not fit llm.max_output_tokens ({cfg.max_output_tokens}); "
            "raise it",
            report,
        )
    if mem_tokens >= budget:
        raise JobFailed(
            f"MEMORY.md (about {mem_tokens} tokens) leaves no room for notes in "
            f"llm.context_tokens ({cfg.context_tokens}); raise it",
            report,
        )
    combined = "\n".join(notes)
    rounds = 0
    while mem_tokens + _text.tokens(combined) > budget:
        rounds += 1
        if rounds > MAX_REDUCE_ROUNDS:
            raise JobFailed(
                "the notes do not condense into llm.context_tokens "
                f"({cfg.context_tokens}) next to MEMORY.md; raise it",
                report,
            )
        parts = _text.pack(notes, _text.chars_for(budget))
        extracted = []
        for i, part in enumerate(parts, 1):
            ctx.check_cancelled()
            ctx.progress(f"extracting part {i}/{len(parts)} (round {rounds})")
            user = f"Notes, part {i} of {len(parts)}, oldest first:\n\n{part}"
            answer = llm.chat(SYSTEM_EXTRACT, user)
            extracted.append(
                answer.finished_text(
                    f"answer for part {i}/{len(parts)}", cfg.max_output_tokens
                ).strip()
            )
        shorter = "\n".join(extracted)
        if len(shorter) >= len(combined):
            raise JobFailed(
                "the notes do not get shorter when condensed, so they cannot fit "
                f"llm.context_tokens ({cfg.context_tokens}); raise it",
                report,
            )
        notes, combined = extracted, shorter
        report["parts"] = report.get("parts", 0) + len(parts)
    report["rounds"] = rounds
    ctx.check_cancelled()
    ctx.progress("merging into MEMORY.md")
    current = memory.text if memory.data is not None else "(MEMORY.md does not exist yet)\n"
    user = (
        f"Current MEMORY.md:\n<<<MEMORY.md\n{current}MEMORY.md>>>\n\n"
        f"Notes, oldest first:\n<<<NOTES\n{combined}\nNOTES>>>\n\n"
        "Reply with the complete updated MEMORY.md."
    )
    answer = llm.chat(SYSTEM_UPDATE, user)
    report["model"] = answer.model
    return answer.finished_text("answer", cfg.max_output_tokens)


def check_answer(
    old: str, new: str, max_drop_ratio: float, force: bool, report: dict[str, Any]
) -> None:
    """Refuse an answer that is not markdown, or drops too much or a heading (unless force)."""
    problem = _text.not_markdown(new, old)
    if not problem and any(m in new for m in PROMPT_MARKERS):
        problem = "it repeats the prompt (its <<< >>> markers) instead of giving the file"
    if problem or not new.strip():
        raise JobFailed(
            f"the answer is not a markdown file: {problem or 'it is empty'}; MEMORY.md unchanged",
            report,
        )
    old_lines = _text.content_lines(old)
    kept = set(_text.content_lines(new))
    dropped = [line for line in old_lines if line not in kept]
    ratio = len(dropped) / len(old_lines) if old_lines else 0.0
    new_heads = set(_text.headings(new))
    removed = [h for h in dict.fromkeys(_text.headings(old)) if h not in new_heads]
    report.update(
        lines_before=len(old.splitlines()),
        lines_after=len(new.splitlines()),
        lines_dropped=len(dropped),
        dropped_ratio=round(ratio, 3),
        headings_removed=removed,
    )
    problems = []
    if ratio > max_drop_ratio:
        problems.append(
            f"drops {ratio:.0%} of MEMORY.md's lines "
            f"(limit {max_drop_ratio:.0%}, jobs.hippocampus.max_drop_ratio)"
        )
    if removed:
        problems.append(
            "removes the heading"
            + ("s " if len(removed) > 1 else " ")
            + ", ".join(repr(h) for h in removed[:5])
        )
    if problems and not force:
        raise JobFailed(
            f"the answer {' and '.join(problems)}: MEMORY.md unchanged "
            "(run by hand with --force to accept it)",
            report,
        )
    if problems:
        report["forced"] = problems


def unified_diff(memory: Memory, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            memory.text.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"a/{memory.rel}",
            f"b/{memory.rel}",
        )
    )


def run(ctx: JobContext) -> JobResult:
    opts = ctx.config.jobs.hippocampus
    if not ctx.root.is_dir():
        raise JobSkipped(f"workspace folder {ctx.root} is missing")
    memory = read_memory(ctx.root, ctx.config.index.max_file_bytes)
    candidates, gate = curation.gather(ctx, window_files(ctx, opts.lookback_days))
    problem = llm_problem(ctx.config.llm, ctx.env)
    if problem:  # a default install curates too: the deterministic part only
        return _curate(ctx, memory, candidates, gate, f"no LLM ({problem})")
    llm = ctx.llm()
    notes, report = read_notes(ctx, opts, gate)
    if not notes:
        raise JobSkipped(
            f"nothing to consolidate: no notes from the last {opts.lookback_days} days", report
        )
    notes_sha = hashlib.sha256("\n".join(notes).encode()).hexdigest()[:16]
    report.update(memory_sha256_before=memory.sha, notes_sha256=notes_sha)
    last = ctx.history.last_ok(NAME, ctx.root)
    if (
        ctx.trigger != "manual"
        and last is not None
        and last.report.get("notes_sha256") == notes_sha
        and last.report.get("memory_sha256_after") == memory.sha
    ):
        raise JobSkipped("nothing new since the last run (same notes, MEMORY.md as left)", report)
    try:
        answer = consolidate(ctx, llm, memory, notes, report)
    except LlmError as exc:
        raise JobFailed(f"{exc.message}; MEMORY.md unchanged", report) from None
    finally:
        report["llm_calls"] = llm.calls
    new = _text.unwrap(answer)
    try:
        check_answer(memory.text, new, opts.max_drop_ratio, ctx.force, report)
    except JobFailed as refused:
        if "dropped_ratio" not in report or report["dropped_ratio"] <= opts.max_drop_ratio:
            raise  # not markdown, or a heading removed: nothing written
        # A rewrite that drops too much: this run appends instead, and rewrites nothing.
        return _curate(ctx, memory, candidates, gate, f"append-only: {refused.message}", True)
    new = _restore_secrets(memory.text, curation.curate(new, [], dt.date.min).text)
    report.update(curation.describe_rewrite(memory.text, new, candidates))
    return _finish(ctx, memory, new, report, "llm", candidates, gate)


def window_files(ctx: JobContext, lookback_days: int) -> list[tuple[str, Path, dt.date]]:
    first = ctx.now.date() - dt.timedelta(days=lookback_days - 1)
    days = (first + dt.timedelta(days=i) for i in range(lookback_days))
    return [(ctx.rel(p), p, day) for day in days for p in _daily_files(ctx.root, day)]


def _restore_secrets(old: str, new: str) -> str:
    """The model saw MEMORY.md with secrets redacted; a line it kept as it was gets the
    owner's original back (a secret written by hand stays in the file)."""
    originals = {redact(line).text: line for line in old.splitlines() if redact(line).found}
    if not originals:
        return new
    return "".join(
        originals.get(line.rstrip("\n"), line.rstrip("\n")) + "\n"
        for line in new.splitlines(keepends=True)
    )


def _curate(
    ctx: JobContext,
    memory: Memory,
    candidates: list[curation.Candidate],
    gate: curation.Gate,
    mode: str,
    append_only: bool = False,
) -> JobResult:
    """The deterministic run (no model, or the model's rewrite refused)."""
    day = (
        dt.datetime.fromtimestamp(memory.path.stat().st_mtime, ctx.now.tzinfo).date()
        if memory.data is not None
        else dt.date.min
    )
    extra = [c for c in candidates if c.hits or c.days > 1][: curation.TOP_IN_REPORT]
    done = curation.curate(memory.text, candidates, day, extra if append_only else None)
    report: dict[str, Any] = {"memory_sha256_before": memory.sha, **done.report()}
    return _finish(ctx, memory, done.text, report, mode, candidates, gate)


def _finish(
    ctx: JobContext,
    memory: Memory,
    new: str,
    report: dict[str, Any],
    mode: str,
    candidates: list[curation.Candidate],
    gate: curation.Gate,
) -> JobResult:
    report["mode"] = mode
    report["candidates"] = [c.brief() for c in candidates[: curation.TOP_IN_REPORT]]
    report["gate_refused"] = dict(gate.refused)
    report["sync_conflicts"] = find_notes(new)  # MEMORY.md lines under a sync conflict note
    text = curation.report_markdown(ctx.now.isoformat(timespec="seconds"), mode, report)
    new_bytes = new.encode("utf-8")
    if ctx.dry_run:
        report["diff"] = mask(unified_diff(memory, new))  # as every answer shows a file
        report["report"] = mask(text)
        changed = sum(
            1
            for line in report["diff"].splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )
        return JobResult(
            f"dry run: would change {changed} line(s) of {memory.rel}; nothing written", report
        )
    if new_bytes == (memory.data or b""):
        report["memory_sha256_after"] = memory.sha
        report["report_file"] = curation.write_report(ctx, text)
        return JobResult(f"{memory.rel} already up to date ({mode})", report)
    ctx.check_cancelled()
    _write(ctx, memory, new_bytes, report)
    report["memory_sha256_after"] = _sha(new_bytes)
    report["report_file"] = curation.write_report(ctx, text)  # once MEMORY.md is written
    counts = ", ".join(f"{len(report[k])} {k}" for k in ("promoted", "merged", "retired"))
    return JobResult(
        f"{memory.rel} curated ({mode}): {counts}"
        + (f"; previous version in {report['backup']}" if report.get("backup") else ""),
        report,
    )


_NO_SPACE: Final = (errno.ENOSPC, errno.EDQUOT)


def _write(ctx: JobContext, memory: Memory, new: bytes, report: dict[str, Any]) -> None:
    """Back up, then replace MEMORY.md; a full disk fails the run saying so (``disk_full``),
    with MEMORY.md as it was (every write is to a temp file renamed into place)."""
    try:
        _write_checked(ctx, memory, new, report)
    except OSError as exc:
        if exc.errno not in _NO_SPACE:
            raise
        raise JobFailed(
            f"the disk is full ({os.strerror(exc.errno)}): {memory.rel} was not written "
            "and is unchanged; the next run retries",
            {**report, "error": "disk_full"},
        ) from None


def _write_checked(ctx: JobContext, memory: Memory, new: bytes, report: dict[str, Any]) -> None:
    def unchanged() -> None:
        try:
            now: bytes | None = memory.path.read_bytes()
        except FileNotFoundError:
            now = None
        if now != memory.data:
            raise _Edited()

    edited = JobSkipped(
        f"{memory.rel} was edited during the run: not written (the next run retries)", report
    )
    try:
        unchanged()
    except _Edited:
        raise edited from None
    if memory.data is not None:
        report["backup"] = _keep_backup(ctx, memory)
    git = Git(ctx.root)
    git_note = git.repository()
    if git_note is None and memory.data is not None:
        try:
            git.commit_file(memory.rel, f"memoryd: {memory.rel} before hippocampus")
        except GitError as exc:
            git_note = str(exc)
    # Recorded before the rename: a kill right after it is then an ``ok`` run at the next
    # start (MEMORY.md holds this), not ``failed: interrupted``.
    ctx.checkpoint(
        {
            **report,
            "memory_sha256_after": _sha(new),
            "writing": {"path": memory.rel, "sha256": hashlib.sha256(new).hexdigest()},
        }
    )
    try:
        # Under the file's lock: a forget or import in this daemon waits, and the check
        # just before the rename sees everything they wrote.
        with ctx.locks.lock_for(memory.path):
            ledger = ledger_for(ctx.root)
            ledger.refresh()
            text = new.decode("utf-8", "replace")
            # Records before the lines (files/provenance.py): promoted lines keep theirs.
            ledger.add(
                curation.promoted_records(
                    ledger, memory.rel, memory.text, text, ctx.now.timestamp()
                )
            )
            _write_beneath(ctx.root, memory.rel, new, before_replace=unchanged)
    except _Edited:
        raise edited from None
    if git_note is None:
        try:
            commit = git.commit_file(
                memory.rel,
                f"memoryd hippocampus: consolidate {len(report['daily_files'])} daily file(s)",
            )
            report["git_commit"] = commit
        except GitError as exc:
            git_note = str(exc)
    report["git"] = git_note or "committed"
    note = ctx.reindex([memory.path])
    if note:
        report["index"] = note


def _keep_backup(ctx: JobContext, memory: Memory) -> str:
    """Copy the current MEMORY.md to memory/.history/ (durably) before anything changes."""
    assert memory.data is not None
    stem = f"{Path(memory.rel).stem}.{ctx.now.strftime('%Y%m%dT%H%M%S')}"
    folder = Layout(ctx.root).open_dir(HISTORY_DIR, make=True)  # beneath: never led out
    try:
        name, n = f"{stem}.md", 2
        while _exists_at(folder, name):
            name, n = f"{stem}-{n}.md", n + 1
        atomic_write_at(folder, name, memory.data)
    finally:
        os.close(folder)
    return f"{HISTORY_DIR}/{name}"


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _write_beneath(root: Path, rel: str, data: bytes, before_replace: Callable[[], None]) -> None:
    """Replace memory file ``rel`` (links resolved) through its folder opened beneath the
    workspace: a folder swapped for a link meanwhile cannot lead the write out of it."""
    folder, _, name = rel.rpartition("/")
    dir_fd = Layout(root).open_dir(folder)
    try:
        atomic_write_at(dir_fd, name, data, before_replace=before_replace)
    finally:
        os.close(dir_fd)
