"""How memctl shows results to a person (``--json`` prints the daemon's maps instead)."""

from __future__ import annotations

import datetime as _dt
from typing import TextIO

from memoryd_client.types import Progress, SearchResult, Status


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
    if not status.workspaces:
        lines.append("no workspace registered (memctl workspace add PATH)")
    for ws in status.workspaces:
        lines.append(f"workspace {ws.name}  {ws.path}")
        vectors = "ready" if ws.vector_ready else "not ready"
        lines.append(
            f"  files {ws.files}  chunks {ws.chunks}  pending files {ws.pending_files}  "
            f"pending vectors {ws.pending_vectors}  vectors {vectors}"
        )
        detail = f"  last sync {_when(ws.last_sync)}"
        if ws.index_generation is not None:
            detail += f"  generation {ws.index_generation}"
        if ws.watcher:
            detail += f"  watcher {ws.watcher}"
        lines.append(detail)
        lines.extend(f"  degraded: {reason}" for reason in ws.degraded)
        lines.extend(f"  skipped {path}: {why}" for path, why in ws.skipped.items())
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
        lines.append(f"{hit.path}:{hit.start_line}-{hit.end_line}  {hit.score:.3f}")
        lines.extend(f"    {line}" for line in hit.snippet.splitlines())
    return lines


class ProgressBar:
    """A one-line progress bar on a terminal (``reindex``); nothing when not a TTY."""

    WIDTH = 30

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    def __call__(self, progress: Progress) -> None:
        label = progress.phase or "working"
        if progress.total:
            filled = min(self.WIDTH, self.WIDTH * progress.done // max(progress.total, 1))
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            line = f"{label:<12} [{bar}] {progress.done}/{progress.total}"
        else:
            line = f"{label:<12} {progress.done}"
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
