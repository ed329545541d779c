"""fallback summary: a session that ended without a daily note gets an LLM summary, once.

A transcript idle for ``session_idle_minutes`` (and not older than ``max_age_days``: old
transcripts found on a first run are left alone) is looked at once. If the session wrote
to the daily file of a day it spans (a tool call names ``memory/YYYY-MM-DD``, or the file
was modified during the session, not by our own append) it is left alone; otherwise its
user/assistant messages are summarised and appended to the daily file of its last activity
under ``## Session summary (<session id>)``, through the same serialised path as the
``append`` method. The decision is recorded in the state database, so each session is
handled at most once; a heading already in the file (a run that stopped after appending)
is recorded rather than written twice. A session that cannot be handled (its LLM call
fails, or anything unexpected while reading or appending it) is listed as failed in the
run's report and retried next run; the other sessions are handled all the same.

It follows flush's rules (flush_origin.py, docs/provenance.md): a cron, heartbeat or
sub-agent session is left alone (scaffolding is not memory: its kind from a Claude Code
sub-agent's path, an OpenClaw session's key in its agent's store, or what an observer said);
blocks memoryd injected (``<memoryd-recall>``) are dropped; what the assistant said after a
tool call that fetched outside content, for the rest of that turn, is summarised apart and
recorded ``untrusted``; the rest is the agent's, no better than what observers saw the
session read (``observe``). Every line is recorded in the ledger (via ``summary``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote

from memoryd.files.injected import drop_injected
from memoryd.files.layout import (
    MEMORY_DIR,
    TRANSCRIPT_SUFFIX,
    Layout,
    daily_path,
    daily_rel,
    display_name,
    transcript_dirs,
)
from memoryd.files.openclaw_store import agent_store, kind_of_key, session_key
from memoryd.files.provenance import Provenance, least_trusted, ledger_for
from memoryd.files.transcripts import stream_transcript
from memoryd.jobs import _text
from memoryd.jobs.base import (
    JobContext,
    JobFailed,
    JobOutcome,
    JobResult,
    JobSkipped,
    LlmNotConfigured,
)
from memoryd.jobs.flush_origin import Turns, session_kind, skip_reason
from memoryd.jobs.llm import LlmClient, LlmError
from memoryd.jobs.llm_config import llm_problem
from memoryd.jobs.session_trust import stored_state
from memoryd.runtime.logs import get_logger

log = get_logger("memoryd.jobs")

NAME: Final = "fallback_summary"
SPAN_SLACK_S: Final = 120.0  # clocks and buffered writes: a note just after the end counts
MAX_SPAN_DAYS: Final = 7
PROMPT_RESERVE_TOKENS: Final = 400
MAX_REDUCE_ROUNDS: Final = 4
MAX_STAMP: Final = 32503680000.0  # 3000-01-01: later is a corrupt line, not a time
_DAILY_REF = re.compile(re.escape(MEMORY_DIR.encode()) + rb"/(\d{4}-\d{2}-\d{2})")
_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]+")

SYSTEM_SUMMARY: Final = """\
You write an AI agent's daily log. Summarise the conversation you get (or one part of it) \
in a few markdown bullets: what was decided, what was learned about the user or the work, \
what is still open. Be factual and brief. Reply with the bullets only."""

SYSTEM_MERGE: Final = """\
You write an AI agent's daily log. You get partial summaries of one conversation, in \
order. Combine them into one short list of markdown bullets: decisions, things learned, \
open items; when they conflict, the later one wins. Reply with the bullets only."""


@dataclass
class Session:
    path: Path
    rel: str
    id: str
    start: float
    end: float  # the transcript's last write
    messages: list[str] = field(default_factory=list)
    mentions: set[str] = field(default_factory=set)  # days whose daily file a tool call named
    too_long: bool = False  # more messages than a run's LLM calls can summarise (not all read)
    origins: list[str] = field(default_factory=list)  # each message's (flush_origin.Turns)
    kind: str | None = None  # interactive, cron, heartbeat, subagent (when known)


def _stamp(value: Any, tz: dt.tzinfo) -> float | None:
    """A line's timestamp as Unix seconds, or None: unparseable, not finite, or outside
    1970..2999 (a "0001-01-01" or -Infinity must not break date arithmetic later)."""
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            stamp = float(value) / 1000 if value > 1e12 else float(value)  # ms or s
        elif isinstance(value, str):
            when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            stamp = (when if when.tzinfo else when.replace(tzinfo=tz)).timestamp()
        else:
            return None
    except (ValueError, OverflowError):
        return None
    return stamp if math.isfinite(stamp) and 0 <= stamp < MAX_STAMP else None


def read_session(path: Path, layout: Layout, tz: dt.tzinfo, max_chars: int) -> Session:
    """The session in ``path``, read a block of lines at a time; its messages are kept up to
    ``max_chars`` (what the run's LLM calls can summarise): past that, reading stops and
    ``too_long`` says so."""
    messages: list[str] = []
    origins: list[str] = []
    chars = 0
    too_long = False
    session_id: str | None = None
    first: float | None = None
    mentions: set[str] = set()
    turns = Turns()
    line = 1
    with layout.open_file(path) as fh:  # beneath the workspace, by the reading rule
        end = os.fstat(fh.fileno()).st_mtime
        for raws, parsed in stream_transcript(fh):
            session_id = session_id or parsed.session_id
            said = {n: turns.origin(raw) for n, raw in enumerate(raws, line)}
            line += parsed.lines_consumed
            for raw in raws:
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(obj, dict):
                    continue
                msg = obj.get("message")
                ts = _stamp(obj.get("timestamp"), tz)
                if ts is None and isinstance(msg, dict):
                    ts = _stamp(msg.get("timestamp"), tz)
                if ts is not None:
                    first = ts if first is None else min(first, ts)
                if obj.get("type") in ("tool_call", "tool_result"):
                    mentions |= {m.decode() for m in _DAILY_REF.findall(raw)}
            for lineno, message in parsed.messages:
                text = drop_injected(message)  # what memoryd put before the model is not news
                if not text.split(":", 1)[-1].strip():
                    continue
                messages.append(text)
                origins.append(said.get(lineno) or "agent")
                chars += len(text) + 2
            if chars > max_chars:
                too_long = True
                break
    start = min(first if first is not None else end, end)
    sid = (
        _UNSAFE.sub("-", session_id or "").strip("-")[:80]
        or _UNSAFE.sub("-", path.stem).strip("-")[:80]
        or "session"
    )
    return Session(
        path,
        display_name(path.relative_to(layout.root).as_posix()),
        sid,
        start,
        end,
        messages,
        mentions,
        too_long,
        origins,
        session_kind(path, None),
    )


def _transcripts(root: Path) -> list[Path]:
    """The transcripts to look at: ``sessions/*.jsonl`` and OpenClaw's copies
    (``sessions/openclaw/<agent>/*.jsonl``), regular files only."""
    out: list[Path] = []
    for folder in transcript_dirs(root):
        found = sorted(folder.glob(f"*{TRANSCRIPT_SUFFIX}")) if folder.is_dir() else []
        out += [p for p in found if p.is_file() and not p.is_symlink()]
    return out


def summary_budget(ctx: JobContext) -> tuple[int, int]:
    """(characters of one part, characters a run's calls can summarise): one call per part
    of the first round and one to merge, within llm.max_calls_per_run."""
    cfg = ctx.config.llm
    part = max(
        1, _text.chars_for(cfg.context_tokens - cfg.max_output_tokens - PROMPT_RESERVE_TOKENS)
    )
    return part, max(0, cfg.max_calls_per_run - 1) * part


def wrote_daily(ctx: JobContext, s: Session) -> str | None:
    """Why the session counts as having written its daily note, or None. A session a
    ``flush`` took notes of has its notes already (the hooks flush it at its end)."""
    flushed = ctx.history.flushed_lines(s.path)
    if flushed:
        return f"flush already took notes of it (lines 1-{flushed})"
    if ledger_for(ctx.root).records_for_session(s.id):  # OpenClaw's flush, or flush by id
        return "notes of the session are in memory already (a flush took them)"
    tz = ctx.now.tzinfo
    first = dt.datetime.fromtimestamp(s.start, tz).date()
    last = dt.datetime.fromtimestamp(s.end, tz).date()
    day = max(first, last - dt.timedelta(days=MAX_SPAN_DAYS))
    while day <= last:
        rel = daily_rel(day)
        if day.isoformat() in s.mentions:
            return f"a tool call of the session wrote {rel}"
        try:
            st = daily_path(ctx.root, day).stat()
        except OSError:
            st = None
        if (
            st is not None
            and s.start - SPAN_SLACK_S <= st.st_mtime <= s.end + SPAN_SLACK_S
            and not ctx.history.is_own_append(ctx.root, rel, st.st_mtime_ns)
        ):
            return f"{rel} was written during the session"
        day += dt.timedelta(days=1)
    return None


def summarise(ctx: JobContext, llm: LlmClient, messages: list[str]) -> str:
    """The summary of ``messages``; a long conversation is summarised in parts, then merged."""
    cfg = ctx.config.llm
    budget = cfg.context_tokens - cfg.max_output_tokens - PROMPT_RESERVE_TOKENS
    blocks, text = messages, "\n\n".join(messages)
    system, user = SYSTEM_SUMMARY, f"Conversation:\n\n{text}"
    rounds = 0
    while _text.tokens(text) > budget:
        rounds += 1
        if rounds > MAX_REDUCE_ROUNDS:
            raise LlmError(
                "the conversation does not condense into llm.context_tokens "
                f"({cfg.context_tokens}); raise it"
            )
        parts = _text.pack(blocks, _text.chars_for(budget))
        partial = []
        for i, part in enumerate(parts, 1):
            ctx.check_cancelled()
            answer = llm.chat(SYSTEM_SUMMARY, f"Conversation, part {i} of {len(parts)}:\n\n{part}")
            partial.append(answer.finished_text("summary", cfg.max_output_tokens).strip())
        shorter = "\n\n".join(partial)
        if len(shorter) >= len(text):
            raise LlmError("the partial summaries do not get shorter; raise llm.context_tokens")
        blocks, text = partial, shorter
        system, user = SYSTEM_MERGE, f"Partial summaries, in order:\n\n{text}"
    ctx.check_cancelled()
    answer = llm.chat(system, user)
    summary = _text.demote_headings(
        _text.unwrap(answer.finished_text("summary", cfg.max_output_tokens))
    ).strip()
    problem = _text.not_markdown(summary)
    if problem or not summary:
        raise LlmError(f"the summary is not usable: {problem or 'it is empty'}")
    return summary


def run(ctx: JobContext) -> JobResult:
    opts = ctx.config.jobs.fallback_summary
    if not ctx.root.is_dir():
        raise JobSkipped(f"workspace folder {ctx.root} is missing")
    problem = llm_problem(ctx.config.llm, ctx.env)
    if problem and not ctx.dry_run:
        raise LlmNotConfigured(problem)
    now = ctx.now.timestamp()
    counts = {"active": 0, "too_old": 0, "handled_before": 0}
    candidates: list[tuple[float, Path]] = []
    for path in _transcripts(ctx.root):
        mtime = path.stat().st_mtime
        idle = now - mtime
        if idle > opts.max_age_days * 86400:  # first: a stat is cheaper than a lookup
            counts["too_old"] += 1
        elif ctx.history.session_outcome(ctx.root, ctx.rel(path)) is not None:
            counts["handled_before"] += 1
        elif idle < opts.session_idle_minutes * 60:
            counts["active"] += 1
        else:
            candidates.append((mtime, path))
    report: dict[str, Any] = dict(counts)
    todo: list[Session] = []
    left_alone: list[dict[str, str]] = []
    failed: list[dict[str, str]] = []
    _, max_chars = summary_budget(ctx)
    for _, path in sorted(candidates):
        try:
            s = read_session(path, ctx.layout, ctx.now.tzinfo or dt.UTC, max_chars)
            reason, outcome = _left_alone(ctx, s)
        except Exception as exc:  # one bad transcript must not stop the others
            _failed(ctx, failed, ctx.rel(path), exc)
            continue
        if outcome is None:
            todo.append(s)
            continue
        left_alone.append({"session": s.rel, "reason": reason or "no user/assistant messages"})
        if not ctx.dry_run:
            ctx.history.record_session(ctx.root, s.rel, outcome, now)
    report["left_alone"] = left_alone
    report["left_for_next_run"] = max(0, len(todo) - opts.max_sessions_per_run)
    todo = todo[: opts.max_sessions_per_run]
    if ctx.dry_run:
        report["would_summarise"] = [
            {
                "session": s.rel,
                "id": s.id,
                "into": daily_path(
                    ctx.root, dt.datetime.fromtimestamp(s.end, ctx.now.tzinfo).date()
                )
                .relative_to(ctx.root)
                .as_posix(),
            }
            for s in todo
        ]
        if problem:
            report["llm"] = f"not configured: {problem}"
        if failed:
            report["failed"] = failed
        return JobResult(
            f"dry run: would summarise {len(todo)} session(s); nothing written", report
        )
    return _summarise_all(ctx, todo, report, failed)


def _left_alone(ctx: JobContext, s: Session) -> tuple[str | None, str | None]:
    """Why the session is not summarised and how that is recorded; (None, None): it is."""
    reason = wrote_daily(ctx, s)
    if reason:
        return reason, "wrote_daily"
    if s.id in ledger_for(ctx.root).forgotten_sessions:
        return "forgotten (memctl forget --session): never summarised again", "wrote_daily"
    s.kind = s.kind or _kind_of(ctx, s)
    reason = skip_reason(s.kind)  # flush's rule: scheduled and delegated runs are not memory
    if reason:
        return reason, "not_memory"
    if s.too_long:
        cap = ctx.config.llm.max_calls_per_run
        return (
            f"too long to summarise: its messages need more than "
            f"llm.max_calls_per_run ({cap}) LLM calls"
        ), "too_long"
    return (None, None) if s.messages else (None, "empty")


def _kind_of(ctx: JobContext, s: Session) -> str | None:
    """The session's kind as an OpenClaw session's key says (its agent's store, read-only),
    else as an observer said (``observe`` with ``session_kind``)."""
    rel = s.path.relative_to(ctx.root).parts
    if len(rel) == 4 and rel[:2] == ("sessions", "openclaw"):
        home = ctx.history.state.conn.execute(
            "SELECT home FROM openclaw_homes WHERE workspace_path = ?", (str(ctx.root),)
        ).fetchone()
        if home is not None:
            store = agent_store(Path(str(home[0])), unquote(rel[2]))
            key = session_key(store, unquote(Path(rel[3]).stem))
            if key is not None:
                return kind_of_key(key)
    seen = stored_state(ctx.history.state, s.id)
    return seen.kind if seen is not None else None


def _failed(ctx: JobContext, failed: list[dict[str, str]], session: str, exc: Exception) -> None:
    """Note a session that could not be handled (logged with its traceback)."""
    log.exception("fallback_session_failed", workspace=ctx.workspace, session=session)
    failed.append({"session": session, "error": f"{type(exc).__name__}: {exc}"[:300]})


def _summarise_one(
    ctx: JobContext, llm: LlmClient, s: Session
) -> tuple[dict[str, str], Path | None]:
    """Summarise one session into its daily file: its report entry and the file touched."""
    day = dt.datetime.fromtimestamp(s.end, ctx.now.tzinfo).date()
    target = daily_path(ctx.root, day)
    heading = f"Session summary ({s.id})"
    rel = daily_rel(day)
    if _text.has_heading(target, heading):  # appended by a run that stopped before recording
        ctx.history.record_session(ctx.root, s.rel, "summarised", ctx.now.timestamp(), rel)
        return {"session": s.rel, "into": rel, "note": "already there"}, None
    parts = _parts(ctx, llm, s)
    summary = "\n".join(text for text, _ in parts)
    result = ctx.appender.append(
        ctx.root, summary, day, heading, ctx.config.index.max_file_bytes, parts, via="summary"
    )
    ctx.history.record_session(
        ctx.root,
        s.rel,
        "summarised",
        ctx.now.timestamp(),
        result.path,
        result.abs_path.stat().st_mtime_ns,
    )
    return {"session": s.rel, "into": result.path}, result.abs_path


def _parts(ctx: JobContext, llm: LlmClient, s: Session) -> list[tuple[str, Provenance]]:
    """The summary in parts of one origin each: the untrusted stretches (what followed an
    outside fetch in a turn) summarised apart from the rest, as flush does."""
    seen = stored_state(ctx.history.state, s.id)
    kind = s.kind or (seen.kind if seen is not None else None)
    rest = "agent" if seen is None else least_trusted("agent", seen.stretch)
    out = []
    for origin in (rest, "untrusted"):
        chosen = [
            m
            for m, o in zip(s.messages, s.origins, strict=True)
            if (o == "untrusted") == (origin == "untrusted")
        ]
        if chosen:
            out.append((summarise(ctx, llm, chosen), Provenance(origin, s.id, kind)))
    return out


def _summarise_all(
    ctx: JobContext, todo: list[Session], report: dict[str, Any], failed: list[dict[str, str]]
) -> JobResult:
    done: list[dict[str, str]] = []
    touched: list[Path] = []
    llm = ctx.llm() if todo else None
    for i, s in enumerate(todo, 1):
        ctx.check_cancelled()
        assert llm is not None
        ctx.progress(f"summarising session {i}/{len(todo)}")
        try:
            entry, path = _summarise_one(ctx, llm, s)
        except JobOutcome:  # cancelled: the run ends here
            raise
        except LlmError as exc:
            failed.append({"session": s.rel, "error": exc.message})
            continue
        except Exception as exc:  # one session failing must not stop the others
            _failed(ctx, failed, s.rel, exc)
            continue
        done.append(entry)
        if path is not None:
            touched.append(path)
    report.update(summarised=done, llm_calls=llm.calls if llm else 0)
    note = ctx.reindex(touched)
    if note:
        report["index"] = note
    message = (
        f"summarised {len(done)} session(s)"
        if done or failed
        else "no idle session needs a summary"
    )
    if failed:
        report["failed"] = failed
        raise JobFailed(
            f"{len(failed)} session(s) could not be summarised (first: "
            f"{failed[0]['session']}: {failed[0]['error']}); {message}; "
            "retried next run",
            report,
        )
    return JobResult(message, report)
