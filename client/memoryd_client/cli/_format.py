"""How memctl shows results to a person (``--json`` prints the daemon's maps instead)."""

from __future__ import annotations

import datetime as _dt

from memoryd_client.command_names import typed
from memoryd_client.rate import clock_text
from memoryd_client.types import JobInfo, JobRun, JobsList, SearchResult, Status


def format_status(status: Status) -> list[str]:
    lines = [
        f"memoryd {status.version}  pid {status.pid}  up {_duration(status.uptime_s)}"
        + (f"  socket {status.socket}" if status.socket else ""),
        f"config: {status.config_source or 'defaults (no config file)'}",
    ]
    p = status.provider
    provider = f"provider: {p.name}"
    if p.model:
        provider += f"  model {p.model}"
    if p.dims:
        provider += f"  dims {p.dims}"
    if p.reason:
        provider += f"  ({p.reason})"
    lines.append(provider)
    lines.extend(f"degraded: {reason}" for reason in status.degraded)
    if not status.workspaces:
        lines.append(f"no workspace registered ({typed('memctl')} workspace add PATH)")
    for ws in status.workspaces:
        lines.append(f"workspace {ws.name}  {ws.path}")
        vectors = "ready" if ws.vector_ready else "not ready"
        if ws.vector_scan:
            vectors += f" (KNN: {ws.vector_scan})"
        keywords = f"  BM25: {ws.keyword_scan}" if ws.keyword_scan else ""
        embedding = ""
        if ws.embedding_rate:
            embedding = f"  embedding {ws.embedding_rate:.1f} chunks/s"
            if ws.embedding_eta_s is not None:
                embedding += f", ETA {clock_text(ws.embedding_eta_s)}"
        lines.append(
            f"  files {ws.files}  chunks {ws.chunks}  pending files {ws.pending_files}  "
            f"pending vectors {ws.pending_vectors}{embedding}  vectors {vectors}{keywords}"
        )
        detail = f"  last sync {_when(ws.last_sync)}"
        if ws.index_generation is not None:
            detail += f"  generation {ws.index_generation}"
        if ws.watcher:
            detail += f"  watcher {ws.watcher}"
        lines.append(detail)
        lines.extend(f"  degraded: {reason}" for reason in ws.degraded)
        lines.extend(f"  skipped {path}: {why}" for path, why in ws.skipped.items())
        if ws.sessions_left_out:
            lines.append(
                f"  sessions: {ws.sessions_left_out} transcript(s) in sessions/ not indexed "
                "(index.sessions = false)"
            )
        width = max((len(j.name) for j in ws.jobs), default=0)
        lines.extend(f"  job {_job_line(j, width)}" for j in ws.jobs)
    if any(ws.sessions_left_out for ws in status.workspaces):
        where = status.config_source or "the config file"
        lines.append(
            f"to search transcripts too: set `sessions = true` under [index] in {where} "
            "(or MEMORYD_INDEX_SESSIONS=true), then restart memoryd"
        )
    return lines


def _stamp(iso: str | None) -> str:
    """A local ISO time from the daemon, shortened to minutes for people."""
    if not iso:
        return "never"
    return iso[:16].replace("T", " ")


def _job_line(job: JobInfo, width: int) -> str:
    head = f"{job.name:<{width}}  "
    if not job.enabled:
        head += "disabled"
    elif not job.schedule:  # flush: when a hook or a person asks
        head += "on request"
    else:
        head += f"{job.schedule}  next {_stamp(job.next_run)}"
    if job.running:
        head += "  (running now)"
    last = job.last_run
    if last is None:
        return head + "  last: never run"
    dry = " (dry run)" if last.dry_run else ""
    return f"{head}  last: {last.status}{dry} {_stamp(last.started_at)}: {last.message}"


def format_jobs(result: JobsList) -> list[str]:
    llm = result.llm
    llm_text = (
        f"{llm.get('model')} at {llm.get('base_url') or 'OpenAI'}"
        if llm.get("configured")
        else f"not configured ({llm.get('reason')})"
    )
    lines = [f"time zone {result.timezone or 'local'}; LLM: {llm_text}"]
    if not result.jobs:
        lines.append(f"no workspace registered ({typed('memctl')} workspace add PATH)")
    width = max((len(j.name) for j in result.jobs), default=0)
    workspace = None
    for job in result.jobs:
        if job.workspace != workspace:
            workspace = job.workspace
            lines.append(f"workspace {workspace}")
        lines.append(f"  {_job_line(job, width)}")
        for run in job.history:
            dry = " (dry run)" if run.dry_run else ""
            lines.append(
                f"    {_stamp(run.started_at)}  {run.trigger or '':<8} "
                f"{run.status}{dry}: {run.message}"
            )
    return lines


def format_run(run: JobRun) -> list[str]:
    """A run's outcome; for a dry run also what it would do (hippocampus: the diff)."""
    lines: list[str] = []
    report = run.report
    diff = report.get("diff")
    if isinstance(diff, str) and diff:
        lines.extend(diff.rstrip("\n").splitlines())
    for action in report.get("actions") or []:
        if isinstance(action, dict):
            to = f" -> {action['to']}" if action.get("to") else ""
            lines.append(
                f"{action.get('action')} {action.get('path')}{to} ({action.get('bytes')} bytes)"
            )
    for item in report.get("would_summarise") or []:
        if isinstance(item, dict):
            lines.append(f"summarise {item.get('session')} into {item.get('into')}")
    took = f" in {run.seconds:.1f}s" if run.seconds is not None else ""
    lines.append(f"{run.job} ({run.workspace}): {run.status}{took}: {run.message}")
    return lines


def _when(stamp: str | float | None) -> str:
    """A time from the daemon (epoch seconds or already text) in local time."""
    if stamp is None or stamp == "":
        return "never"
    if isinstance(stamp, int | float):
        return _dt.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")
    return stamp


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def format_search(result: SearchResult) -> list[str]:
    if not result.results:
        return ["(no results)"]
    lines: list[str] = []
    for i, hit in enumerate(result.results):
        if i:
            lines.append("")
        where = f"{hit.workspace}:{hit.path}" if hit.workspace else hit.path
        if hit.host:  # fleet mode: the host that published it
            where = f"{hit.host}:{where}"
        lines.append(f"{where}:{hit.start_line}-{hit.end_line}  {hit.score:.3f}")
        lines.extend(f"    {line}" for line in hit.snippet.splitlines())
    return lines
