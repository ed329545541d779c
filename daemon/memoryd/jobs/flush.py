"""flush: the durable facts of a conversation's newest part, into today's daily file.

An agent's hook calls it before context is lost (Claude Code's PreCompact and SessionEnd;
OpenClaw flushes memory before compaction the same way). The run reads the transcript
from where the last flush of that session stopped (an offset in the state database), up
to its last complete line, asks the configured LLM for what is worth remembering
(decisions, preferences, todos, names, dates) and appends the answer to the daily file
under a heading naming the session and the lines read, through the serialised append.

A run reads no more than its LLM calls (``llm.max_calls_per_run``) can take: a longer
stretch is flushed up to that point, the offset moves there, and the next flush goes on
from it. Reading stops there too, so a transcript of any size costs a bounded amount of
memory, and a single message longer than a whole run is cut to its beginning.

Never the same range twice: the offset moves only once the notes are written (or the LLM
found nothing durable); a heading already in the file (a run that stopped between the
append and the offset) is taken as written. An answer failing the checks of the other
LLM jobs (empty, cut off, chatty) writes nothing, fails the run and leaves the offset, so
the next flush tries that range again.
"""

from __future__ import annotations

import io
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final

from memoryd.errors import ForbiddenPath
from memoryd.files import openclaw_archives, openclaw_store
from memoryd.files.append import daily_path
from memoryd.files.injected import drop_injected
from memoryd.files.provenance import Provenance, least_trusted, ledger_for
from memoryd.files.session_headings import flush_heading as heading_for
from memoryd.files.transcripts import stream_transcript
from memoryd.jobs import _text
from memoryd.jobs.base import JobContext, JobFailed, JobResult, JobSkipped
from memoryd.jobs.flush_origin import (
    Turns,
    session_kind,
    skip_reason,
    trust_class,
    turns_before,
)
from memoryd.jobs.llm import LlmClient, LlmError
from memoryd.jobs.llm_config import llm_problem
from memoryd.jobs.transcript_folders import check_transcript
from memoryd.runtime.config import LlmConfig

NAME: Final = "flush"
NOTHING: Final = "NOTHING"
PROMPT_RESERVE_TOKENS: Final = 400
# An OpenClaw store's rows before a run's first replayed for the turn it starts in (as
# flush_origin.turns_before does with a transcript's last 4 MiB).
STORE_LOOKBACK_ROWS: Final = 2000

SYSTEM: Final = f"""\
You keep an AI agent's long-term memory. From the conversation you get (or one part of \
it), extract only what is worth remembering in later sessions: decisions and their \
reasons, the user's preferences, todos and open questions, names of people and things, \
dates and deadlines. Write them as short, self-contained markdown bullets. Leave out \
chit-chat, code, and anything only useful in this conversation. Reply with the bullets \
only; if nothing is worth remembering, reply with exactly {NOTHING}."""


def part_chars(cfg: LlmConfig) -> int:
    """Characters of conversation one LLM call takes (0: the window leaves no room)."""
    return _text.chars_for(cfg.context_tokens - cfg.max_output_tokens - PROMPT_RESERVE_TOKENS)


@dataclass
class NewLines:
    """What a run takes of the transcript after the offset."""

    messages: list[str] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)  # each message's (flush_origin.py)
    consumed: int = 0  # bytes, up to a line end
    lines: int = 0
    malformed: int = 0
    more: bool = False  # lines are left that this run's LLM calls cannot take
    cut_line: int | None = None  # a message longer than a whole run: its beginning only


def read_new(
    fh: BinaryIO, budget: _text.PartBudget, first_line: int, turns: Turns | None = None
) -> NewLines:
    """The complete lines from ``fh``'s position whose messages fit ``budget``, read a
    block at a time and no further than they fit; ``turns``: the turn they start in (a run
    that starts inside a turn that fetched a page, flush_origin.turns_before)."""
    out = NewLines()
    turns = turns or Turns()
    for raws, parsed in stream_transcript(fh, partial_last=False):
        block_first = out.lines + 1  # the block's first line, counted from the offset
        origins = {n: turns.origin(raw) for n, raw in enumerate(raws, block_first)}
        for lineno, message in parsed.messages:
            text = drop_injected(message)  # what memoryd put before the model is not news
            if not text.split(":", 1)[-1].strip():
                continue
            if budget.take(text):
                out.messages.append(text)
                out.origins.append(origins.get(lineno) or "agent")
                continue
            if not out.messages:  # alone longer than a run can read: its beginning
                while not budget.take(text):
                    text = text[: len(text) // 2]
                out.messages.append(text)
                out.origins.append(origins.get(lineno) or "agent")
                out.cut_line = first_line + lineno - 1
                continue
            skipped = lineno - block_first  # the lines before this message's
            out.consumed += sum(len(r) + 1 for r in raws[:skipped])
            out.lines += skipped
            out.more = True
            return out
        out.consumed += parsed.consumed
        out.lines += parsed.lines_consumed
        out.malformed += parsed.malformed
    return out


def extract(
    ctx: JobContext, llm: LlmClient, messages: list[str], origins: list[str] | None = None
) -> list[tuple[str, str]]:
    """The notes for these messages, with the origin of what fed each LLM call (empty when
    the LLM found nothing durable): a range too long for one prompt is asked in parts, and
    untrusted stretches apart from the rest (flush_origin.py)."""
    chars = part_chars(ctx.config.llm)
    if chars <= 0:
        raise LlmError("llm.context_tokens leaves no room for the conversation; raise it")
    parts: list[tuple[str, str]] = []
    for group, origin in _groups(messages, origins or ["agent"] * len(messages)):
        parts += [(p, origin) for p in _text.pack(group, chars)]
    notes: list[tuple[str, str]] = []
    for i, (part, origin) in enumerate(parts, 1):
        ctx.check_cancelled()
        where = f", part {i} of {len(parts)}" if len(parts) > 1 else ""
        answer = llm.chat(SYSTEM, f"Conversation{where}:\n\n{part}")
        text = _text.unwrap(answer.finished_text("notes", ctx.config.llm.max_output_tokens)).strip()
        if text.strip(". \n").upper() == NOTHING:
            continue
        problem = _text.not_markdown(text)
        if problem:
            raise LlmError(f"the notes are not usable: {problem}")
        notes.append((_text.demote_headings(text).strip(), origin))
    return notes


def _groups(messages: list[str], origins: list[str]) -> list[tuple[list[str], str]]:
    """Consecutive messages of one trust class, each run with its least trusted origin."""
    out: list[tuple[list[str], str]] = []
    for text, origin in zip(messages, origins, strict=True):
        if out and trust_class(out[-1][1]) == trust_class(origin):
            out[-1][0].append(text)
            out[-1] = (out[-1][0], least_trusted(out[-1][1], origin))
        else:
            out.append(([text], origin))
    return out


def run(ctx: JobContext) -> JobResult:
    transcript = Path(str(ctx.params["transcript"]))
    session = str(ctx.params["session_id"])
    kind = session_kind(transcript, ctx.params.get("session_kind"))
    _check(ctx, transcript, session, kind)
    offset, line = ctx.history.flush_offset(transcript, session)
    report: dict[str, Any] = {
        "transcript": str(transcript),
        "session": session,
        "from_byte": offset,
        "from_line": line + 1,
    }
    chars = part_chars(ctx.config.llm)
    if chars <= 0:
        raise JobFailed("llm.context_tokens leaves no room for the conversation; raise it")
    budget = _text.PartBudget(chars, ctx.config.llm.max_calls_per_run)
    new = _read(transcript, session, offset, line, budget, report)
    if new.lines == 0:
        return JobResult("nothing new in the transcript since the last flush", report)
    first, last = line + 1, line + new.lines
    new_offset = offset + new.consumed
    report.update(to_line=last, messages=len(new.messages), malformed=new.malformed)
    rest = ""
    if new.more:  # the next flush goes on from here
        report["more"] = True
        rest = f"; the transcript goes on after line {last}: the next flush continues there"
    if new.cut_line is not None:
        report["cut_line"] = new.cut_line
    now = ctx.now.timestamp()

    def moved(message: str) -> JobResult:
        ctx.history.set_flush_offset(transcript, session, new_offset, last, ctx.root, now)
        return JobResult(f"lines {first}-{last}: {message}{rest}", report)

    if not new.messages:
        return moved("no user or assistant text")
    if ctx.usage is not None:  # recalled lines the agent cited (path#Lx) since
        said = "\n".join(m for m in new.messages if m.startswith("assistant: "))
        ctx.usage.cited(ctx.now.date().isoformat(), ctx.workspace, said)
    day = ctx.now.date()
    target = daily_path(ctx.root, day)
    heading = heading_for(session, first, last)
    if _text.has_heading(target, heading):  # written by a run that stopped before the offset
        report["note"] = "already there"
        return moved("already flushed")
    llm = ctx.llm()
    ctx.progress("asking the LLM")
    try:
        notes = extract(ctx, llm, new.messages, new.origins)
    except LlmError as exc:
        report["llm_calls"] = llm.calls
        raise JobFailed(
            f"lines {first}-{last}: {exc.message}; nothing written, the next flush tries again",
            report,
        ) from None
    report["llm_calls"] = llm.calls
    if not notes:
        return moved("nothing worth remembering")
    ctx.check_cancelled()
    text = "\n".join(n for n, _ in notes)
    parts = [(n, Provenance(origin, session, kind)) for n, origin in notes]
    report["origins"] = sorted({origin for _, origin in notes})
    result = ctx.appender.append(ctx.root, text, day, heading, provenance=parts, via="flush")
    report.update(into=result.path, start_line=result.start_line, end_line=result.end_line)
    done = moved(f"notes appended to {result.path}")
    note = ctx.reindex([result.abs_path])
    if note:
        report["index"] = note
    return done


def _check(ctx: JobContext, transcript: Path, session: str, kind: str | None) -> None:
    """Whether this flush may run at all: JobSkipped (or JobFailed) says why not."""
    if not ctx.root.is_dir():
        raise JobSkipped(f"workspace folder {ctx.root} is missing")
    if session in ledger_for(ctx.root).forgotten_sessions:
        raise JobSkipped(f"session {session} was forgotten (memctl forget): never flushed again")
    if (why := skip_reason(kind)) is not None:
        raise JobSkipped(why, {"transcript": str(transcript), "session": session, "kind": kind})
    problem = llm_problem(ctx.config.llm, ctx.env)
    if problem:
        raise JobSkipped(f"no LLM configured: {problem}")
    try:  # asked for by an allowed path; the run opens what it really is now
        check_transcript(transcript, ctx.root, ctx.config.agents, ctx.env)
    except ForbiddenPath as exc:
        raise JobFailed(exc.message) from None


def _read(
    transcript: Path,
    session: str,
    offset: int,
    line: int,
    budget: _text.PartBudget,
    report: dict[str, Any],
) -> NewLines:
    if openclaw_store.is_store(transcript):
        return _read_store(transcript, session, line, budget, report)
    try:
        with open(transcript, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < offset:
                raise JobSkipped(
                    f"the transcript is shorter ({size} bytes) than what was already flushed "
                    f"({offset}): it was replaced; nothing is read twice",
                    report,
                )
            turns = turns_before(f, offset)  # the turn the run starts in
            f.seek(offset)
            return read_new(f, budget, line + 1, turns)
    except OSError as exc:
        raise JobFailed(
            f"cannot read the transcript {transcript}: {exc.strerror or exc}", report
        ) from None


def _read_store(
    store: Path, session: str, line: int, budget: _text.PartBudget, report: dict[str, Any]
) -> NewLines:
    """An OpenClaw session in its SQLite store: one event a line, so the offset's line count
    is the number of the session's rows already flushed."""
    report["store"] = "openclaw"
    try:
        with openclaw_store.open_store(store) as conn:
            rows = openclaw_store.session_rows(conn, session)
            archive = _archive_of(conn, session) if rows == 0 or rows < line else None
            if archive is not None:  # deleted or reset: its rows are in the archive now
                report["archive"] = archive.reason
                lines = openclaw_archives.archive_lines(conn, archive)
                turns = Turns()  # the turn the run starts in: the rows before it replayed
                for raw in itertools.islice(lines, line):
                    turns.origin(raw)
                archived = io.BufferedReader(openclaw_archives.LinesReader(lines, 0))
                return read_new(archived, budget, line + 1, turns)
            if rows < line:
                raise JobSkipped(
                    f"session {session} has {rows} events in {store}, fewer than already "
                    f"flushed ({line}), and no archive: nothing is read twice",
                    report,
                )
            start = max(0, line - STORE_LOOKBACK_ROWS)
            turns = Turns()  # the turn the run starts in: the rows before it replayed
            for raw in openclaw_store.event_lines(conn, session, start, line - start):
                turns.origin(raw)
            reader = io.BufferedReader(openclaw_store.SessionReader(conn, session, line))
            return read_new(reader, budget, line + 1, turns)
    except openclaw_store.StoreError as exc:
        raise JobFailed(str(exc), report) from None


def _archive_of(conn: Any, session: str) -> openclaw_archives.Archive | None:
    """The session's newest archive (OpenClaw archives a whole session on delete or reset)."""
    archives = openclaw_archives.list_archives(conn, session)
    return archives[-1] if archives else None
