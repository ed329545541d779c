"""What a job implementation receives and returns.

A job is a blocking function ``run(ctx) -> JobResult`` executed in a thread. It reports
``ok`` by returning, and ``skipped`` / ``failed`` by raising ``JobSkipped`` / ``JobFailed``
(with a one-line reason and a small JSON report). Anything else it raises is recorded as
``failed`` with the exception's text.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.files.append import Appender
from memoryd.files.layout import Layout, display_name
from memoryd.files.locks import FileLocks
from memoryd.jobs.history import History
from memoryd.runtime.config import Config
from memoryd.runtime.logs import get_logger
from memoryd.runtime.usage import Usage

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.jobs.llm import LlmClient

SYNC_TIMEOUT_S = 60.0

log = get_logger("memoryd.jobs")


@dataclass
class JobResult:
    message: str
    report: dict[str, Any] = field(default_factory=dict)


class JobOutcome(Exception):
    status = "failed"

    def __init__(self, message: str, report: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.report = report or {}


class JobSkipped(JobOutcome):
    status = "skipped"


class LlmNotConfigured(JobSkipped):
    """An LLM job without an LLM: said once at start, not logged on every scheduled run."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"no LLM configured: {problem}")


class JobFailed(JobOutcome):
    status = "failed"


class JobSettings(Protocol):
    """What the scheduler needs of a job's config table."""

    @property
    def enabled(self) -> bool: ...

    @property
    def schedule(self) -> str: ...


JobFn = Callable[["JobContext"], JobResult]


@dataclass(frozen=True)
class JobSpec:
    name: str
    summary: str
    uses_llm: bool
    settings: Callable[[Config], JobSettings]
    load: Callable[[], JobFn]  # imports the implementation on first use


@dataclass
class JobContext:
    job: str
    workspace: str
    root: Path  # resolved
    index: WorkspaceIndex | None
    config: Config
    now: dt.datetime  # aware, local zone: when the run started
    dry_run: bool
    force: bool
    appender: Appender  # appends daily-file blocks
    locks: FileLocks  # the daemon's file locks (files/locks.py), the appender's too
    history: History
    env: Mapping[str, str]
    cancelled: threading.Event
    trigger: str = "manual"  # schedule | catch-up | manual | hook
    progress: Callable[[str], None] = lambda phase: None
    params: Mapping[str, Any] = field(default_factory=dict)  # a run's own inputs (flush)
    run_id: int | None = None  # its row in the history (None when it could not be recorded)
    usage: Usage | None = None  # what memory costs each agent (runtime/usage.py)
    llm_clients: list[LlmClient] = field(default_factory=list)  # their tokens go to usage

    def checkpoint(self, report: dict[str, Any]) -> None:
        """Record the report so far on the running row, so that a kill right after says
        what was done (history.mark_interrupted reads it at the next start)."""
        if self.run_id is None:
            return
        try:
            self.history.checkpoint(self.run_id, report)
        except Exception as exc:  # the state database failing must not cost the run
            log.warning("job_checkpoint_failed", job=self.job, error=str(exc))

    def check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise JobFailed("cancelled: the daemon is shutting down (nothing was written)")

    def llm(self) -> LlmClient:
        """The configured LLM client; the run is ``skipped`` (with why) when there is none."""
        from memoryd.jobs.llm import LlmClient
        from memoryd.jobs.llm_config import llm_problem

        problem = llm_problem(self.config.llm, self.env)
        if problem:
            raise LlmNotConfigured(problem)
        client = LlmClient(self.config.llm, self.env, cancelled=self.cancelled)
        self.llm_clients.append(client)
        return client

    @property
    def layout(self) -> Layout:
        """The workspace's files as the jobs read them (transcripts included, whether or not
        they are indexed)."""
        return Layout(self.root, True, self.config.index.extra_paths)

    def rel(self, path: Path) -> str:
        """``path`` as reports, history and logs can hold it: workspace-relative, a name
        that is not UTF-8 shown with ``\\xNN`` (its str cannot be stored or sent)."""
        try:
            return display_name(path.relative_to(self.root).as_posix())
        except ValueError:
            return display_name(str(path))

    def reindex(self, paths: list[Path]) -> str | None:
        """Make the index pick up changed files now; returns a note when it could not."""
        if not paths:
            return None
        if self.index is None:
            return "the index is not open; the change is indexed when it is"
        try:
            self.index.submit_sync(paths).result(timeout=SYNC_TIMEOUT_S)
        except Exception as exc:  # the files are right; the index catches up on its own
            return f"index update failed ({type(exc).__name__}: {exc}); it retries on its own"
        return None
