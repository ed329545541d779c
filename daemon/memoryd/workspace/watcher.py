"""File watching: watchfiles over every workspace, batched to each index's writer.

One ``awatch`` over exactly the folders that matter, each without its subfolders: the
workspace roots (MEMORY.md; memory/ or sessions/ appearing) and every folder of the trees
that hold indexed files (``Layout.watched_dirs``). Anything else in a workspace (a
repository, a build tree) is never watched. The watch restarts when the workspaces change
or such a folder comes or goes.
Changes are filtered (editor temp files out, then ``index.is_indexed_path``), grouped per
workspace and handed to ``index.submit_sync(paths)`` one batch at a time: while a batch
is in flight, new changes collect for the next one. ``wait_synced`` lets a search wait for
the changes queued before it was asked (read-your-writes), and only for those: under a
steady stream of writes the batch is never idle, and a search that waited for idleness
waited out its whole budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from memoryd.records import Fields, Record
from memoryd.runtime.foreground import FOREGROUND
from memoryd.runtime.logs import get_logger

if TYPE_CHECKING:
    from dataclasses import dataclass as fields_record
    from dataclasses import dataclass as frozen_record  # records.py says why

    from memoryd.index.workspace import WorkspaceIndex
else:
    from memoryd.records import fields_record, frozen_record

log = get_logger("memoryd.workspace.watcher")

# watchfiles wakes every step to look for changes and closes a batch after a quiet step:
# 50 ms keeps idle CPU near zero (20 ms cost ~0.25% of a core) and a watched write is
# still indexed well within 100 ms; searches do not wait for it anyway (catch_up).
STEP_MS = 50
RESTART_DELAY_S = 5.0  # after the watch itself failed (a root vanished, inotify limits)
# A failed sync (disk full, an I/O error) keeps its files and is tried again after this,
# doubling up to the maximum: what changed meanwhile is not left for a restart.
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 300.0
_TEMP_SUFFIXES = (".swp", ".swo", ".swx", ".tmp", ".temp", ".part", ".crdownload", "~")


def is_editor_temp(path: Path) -> bool:
    """Swap, backup and atomic-save temp files of editors (and of fsutil.atomic_write)."""
    name = path.name
    return (
        name.endswith(_TEMP_SUFFIXES) or name.startswith((".#", ".~lock.", "#")) or name == "4913"
    )  # vim's probe file


@frozen_record(frozen=True, eq=False, repr=False)
class WatchTarget(Record):
    """A workspace to watch and the index its changed files go to."""

    name: str
    root: Path
    index: WorkspaceIndex


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class _Batch(Fields):
    """A workspace's changed files waiting for their sync, and how its syncs went."""

    pending: set[Path] = field(default_factory=set)
    in_flight: int = 0
    task: asyncio.Task[None] | None = None
    last_sync: float | None = None
    last_error: str | None = None
    failures: int = 0  # in a row
    retry: set[Path] = field(default_factory=set)  # files of failed syncs, for the retry
    retry_handle: asyncio.TimerHandle | None = None
    retry_at: float = 0.0  # time.time() of the next retry
    # Tickets: every submit that queues a path takes the next number; ``done`` is the last
    # number whose paths were synced (or given up to a retry). A search waits until ``done``
    # reaches the ticket of the last change it could see, whatever was queued after it.
    queued: int = 0
    done: int = 0
    tickets: dict[Path, int] = field(default_factory=dict)  # of paths not yet done
    waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)

    def finished(self, upto: int) -> None:
        """The changes up to ticket ``upto`` are committed (or left to a retry)."""
        self.done = max(self.done, upto)
        self.tickets = {p: t for p, t in self.tickets.items() if t > self.done}
        still = []
        for ticket, fut in self.waiters:
            if ticket <= self.done:
                if not fut.done():
                    fut.set_result(None)
            else:
                still.append((ticket, fut))
        self.waiters = still

    def cancel_retry(self) -> None:
        if self.retry_handle is not None:
            self.retry_handle.cancel()
            self.retry_handle = None


class Watcher:
    def __init__(self, debounce_ms: int) -> None:
        self.debounce_ms = max(1, debounce_ms)
        self.step_ms = min(STEP_MS, self.debounce_ms)
        self._targets: dict[str, WatchTarget] = {}
        self._batches: dict[str, _Batch] = {}
        self._task: asyncio.Task[None] | None = None
        self._watching = asyncio.Event()  # set once the current stream's watches are in place
        self._stop: asyncio.Event | None = None
        self.state = "stopped"
        # Told of every batch of changed memory files (sync commits after writes settle).
        self.listeners: list[Callable[[str, set[Path]], None]] = []

    # -- the watch ---------------------------------------------------------------------

    async def set_targets(self, targets: Iterable[WatchTarget]) -> None:
        """Watch exactly these workspaces from now on (restarts the watch if they changed)."""
        new = {t.name: t for t in targets}
        if {n: t.root for n, t in new.items()} == {
            n: t.root for n, t in self._targets.items()
        } and self._task is not None:
            self._targets = new
            return
        await self.stop()
        self._targets = new
        for name in list(self._batches):
            if name not in new:
                batch = self._batches.pop(name)
                batch.cancel_retry()
                if batch.task is not None:
                    batch.task.cancel()
        if new:
            self._stop = asyncio.Event()
            self.state = "starting"
            self._watching = asyncio.Event()
            self._task = asyncio.create_task(self._run(self._stop), name="memoryd-watcher")
            # The stream registers its inotify/FSEvents watches in its first step: from our
            # return on, no change in these workspaces is missed. (Changes during the
            # restart itself are left to the next sync.)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._watching.wait(), 5.0)

    async def close(self) -> None:
        """At shutdown: no more retries, and the watch stops."""
        for batch in self._batches.values():
            batch.cancel_retry()
        await self.stop()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        assert self._stop is not None
        self._stop.set()  # the watch thread notices within one step
        done, _ = await asyncio.wait({task}, timeout=2.0)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.state = "stopped"

    def _folders(self) -> list[Path]:
        """Every folder to watch, each without its subfolders: the workspace roots and each
        folder of the trees that hold indexed files (``Layout.watched_dirs``), hidden ones
        (memory/.history) left out as indexing leaves them out."""
        out = {t.root for t in self._targets.values() if t.root.is_dir()}
        for t in self._targets.values():
            for top in t.index.layout.watched_dirs():
                for dirpath, dirnames, _files in os.walk(top):  # links are not followed
                    # watchfiles cannot watch a folder whose name is not UTF-8 (the scan
                    # still indexes what it holds, and lists its notes as skipped)
                    dirnames[:] = [d for d in dirnames if not d.startswith(".") and _utf8(d)]
                    out.add(Path(dirpath))
        return sorted(out)

    async def _run(self, stop: asyncio.Event) -> None:
        # Its Rust extension and anyio (whose asyncio backend awatch imports on first use)
        # load in a thread: on the event loop they held up the first searches after a start.
        watchfiles = await asyncio.to_thread(_import_watchfiles)

        # The folders the last start watched (None: this is the first, after the
        # workspaces' own scans).
        watched: set[Path] | None = None
        while not stop.is_set():
            folders = self._folders()
            if not folders:
                self.state = "no folders to watch"
                self._watching.set()
                return
            cycle = asyncio.Event()  # set: stop the stream (to stop, or to restart)
            relay = asyncio.create_task(_relay(stop, cycle))

            async def stream(folders: list[Path] = folders, cycle: asyncio.Event = cycle) -> None:
                async for changes in watchfiles.awatch(
                    *folders,
                    debounce=self.debounce_ms,
                    step=self.step_ms,
                    stop_event=cycle,
                    recursive=False,
                    ignore_permission_denied=True,
                ):
                    paths = [Path(p) for _change, p in changes]
                    self._dispatch(paths)
                    known = set(folders)
                    if any(p in known or p.is_dir() for p in paths) and (
                        self._folders() != folders
                    ):
                        cycle.set()  # a folder came or went: watch the new set

            task = asyncio.create_task(stream())
            try:
                await asyncio.sleep(0)  # the stream's first step puts its watches in place
                self.state = "watching"
                self._watching.set()
                log.info(
                    "watch_started",
                    folders=len(folders),
                    roots=sorted(str(t.root) for t in self._targets.values()),
                )
                # What was written into a new folder before its watch existed is found by
                # syncing the folder whole (an unchanged file costs a stat).
                for folder in sorted(set(folders) - (set(folders) if watched is None else watched)):
                    target = self._owner(folder)
                    if target is not None:
                        self.submit(target.name, [folder])
                watched = set(folders)
                await task
            except Exception as exc:  # a root vanished, inotify limit reached...
                if cycle.is_set() and not stop.is_set():
                    continue  # a watched folder deleted under the stream: restart at once
                if _undecodable_name(exc):
                    # watchfiles fails a whole batch on a name that is not UTF-8 (it cannot
                    # make a str of it): restart at once and sync every watched folder, as
                    # the batch's other changes are lost with it.
                    log.warning("watch_name_not_utf8", error=str(_undecodable_name(exc)))
                    watched = set()
                    continue
                self.state = f"error: {exc}"
                log.error("watch_failed", error=str(exc), retry_in_s=RESTART_DELAY_S)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), RESTART_DELAY_S)
            finally:
                cycle.set()
                await asyncio.gather(task, return_exceptions=True)
                relay.cancel()

    def _owner(self, path: Path) -> WatchTarget | None:
        best: WatchTarget | None = None
        for t in self._targets.values():
            if path.is_relative_to(t.root) and (
                best is None or len(t.root.parts) > len(best.root.parts)
            ):
                best = t
        return best

    def _dispatch(self, paths: Iterable[Path]) -> None:
        by_ws: dict[str, set[Path]] = {}
        for path in paths:
            if is_editor_temp(path):
                continue
            target = self._owner(path)
            if target is not None and target.index.freshness.is_indexed_path(path):
                by_ws.setdefault(target.name, set()).add(path)
        for name, paths in by_ws.items():
            self.submit(name, paths)

    # -- batches -----------------------------------------------------------------------

    def submit(self, name: str, paths: Iterable[Path]) -> None:
        """Queue paths of workspace ``name`` for its writer (the watcher's and append's way in)."""
        target = self._targets.get(name)
        if target is None:
            return
        paths = set(paths)
        for listener in self.listeners:
            listener(name, paths)
        batch = self._batches.setdefault(name, _Batch())
        new = set(paths) - batch.pending  # (one already waiting for the next round is
        if new:  # covered by the ticket it came with)
            batch.queued += 1
            batch.pending |= new
            batch.tickets.update(dict.fromkeys(new, batch.queued))
        if batch.pending and batch.task is None:
            batch.task = asyncio.create_task(self._flush(target, batch))

    async def _flush(self, target: WatchTarget, batch: _Batch) -> None:
        try:
            while batch.pending:
                paths, batch.pending = sorted(batch.pending), set()
                upto = batch.queued
                batch.in_flight = len(paths)
                try:
                    await asyncio.wrap_future(target.index.submit_sync(paths))
                    batch.last_sync, batch.last_error, batch.failures = time.time(), None, 0
                except Exception as exc:  # the index keeps serving; status shows why
                    self._retry_later(target, batch, paths, exc)
                    return
                finally:
                    batch.in_flight = 0
                batch.finished(upto)
        finally:
            batch.task = None
            batch.finished(batch.queued)  # done, or failed: retried later, not waited for

    def _retry_later(
        self, target: WatchTarget, batch: _Batch, paths: list[Path], exc: Exception
    ) -> None:
        """Keep the files of a failed sync (and those queued behind it) and try them again
        after a back-off; searches do not wait for them meanwhile."""
        batch.failures += 1
        delay = min(RETRY_MAX_S, RETRY_FIRST_S * 2 ** (batch.failures - 1))
        batch.last_error = str(exc) or type(exc).__name__
        batch.retry.update(paths, batch.pending)
        batch.pending.clear()
        batch.retry_at = time.time() + delay
        log.warning(
            "watch_sync_failed",
            workspace=target.name,
            error=batch.last_error,
            files=len(batch.retry),
            failures=batch.failures,
            retry_in_s=delay,
        )

        def retry() -> None:
            batch.retry_handle = None
            if self._targets.get(target.name) is target:
                paths, batch.retry = set(batch.retry), set()
                self.submit(target.name, paths)

        batch.cancel_retry()
        batch.retry_handle = asyncio.get_running_loop().call_later(delay, retry)

    def pending(self, name: str) -> int:
        """Files changed in ``name`` and not yet committed to its index."""
        batch = self._batches.get(name)
        if batch is None:
            return 0
        return len(batch.pending) + batch.in_flight + len(batch.retry)

    def failing(self, name: str) -> str | None:
        """Why syncs of ``name`` fail, and when they are tried again (None when they work)."""
        batch = self._batches.get(name)
        if batch is None or not batch.failures:
            return None
        wait = max(0.0, batch.retry_at - time.time())
        return (
            f"syncing changes failed {batch.failures} time(s) in a row "
            f"({batch.last_error}); {len(batch.retry)} file(s) retried in {wait:.0f} s"
        )

    def settled(self, name: str) -> bool:
        """Whether every change of ``name`` queued so far is committed: ``wait_synced``
        would return True at once, whatever the paths (a search's check without a wait)."""
        batch = self._batches.get(name)
        return batch is None or batch.done >= batch.queued

    async def wait_synced(
        self,
        name: str,
        timeout: float,
        concerns: Callable[[Path], bool] | None = None,
        quick: bool = False,
    ) -> bool:
        """Wait until the changes of ``name`` queued so far are committed (not those queued
        meanwhile), only those to paths ``concerns`` accepts when given; False on timeout.
        ``quick``: the caller is a quick request, set aside while it waits (FOREGROUND)."""
        batch = self._batches.get(name)
        if batch is None:
            return True
        if concerns is None:
            ticket = batch.queued
        else:
            ticket = max((t for p, t in batch.tickets.items() if concerns(p)), default=0)
        if batch.done >= ticket:
            return True
        fut = asyncio.get_running_loop().create_future()
        batch.waiters.append((ticket, fut))
        try:
            with FOREGROUND.aside() if quick else contextlib.nullcontext():
                await asyncio.wait_for(fut, max(0.0, timeout))
        except TimeoutError:
            return False
        return True

    async def sync_now(
        self,
        name: str,
        index: WorkspaceIndex,
        paths: list[Path],
        timeout: float,
        concerns: Callable[[Path], bool] | None = None,
        quick: bool = False,
    ) -> bool:
        """Sync ``paths`` (changes the watcher has not reported yet) and wait up to
        ``timeout`` for those ``concerns`` accepts (all when not given); concurrent callers
        share the batch. False when it took longer. ``quick``: as in wait_synced."""
        if name in self._targets:
            self.submit(name, paths)
            return await self.wait_synced(name, timeout, concerns, quick)
        fut = asyncio.wrap_future(index.submit_sync(paths))  # not watched (yet)
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        with FOREGROUND.aside() if quick else contextlib.nullcontext():
            done, _ = await asyncio.wait({fut}, timeout=max(0.0, timeout))
        return bool(done)

    def describe(self, name: str) -> str:
        """The watcher state for ``status``."""
        batch = self._batches.get(name)
        if name not in self._targets:
            return "not watched"
        failing = self.failing(name)
        if failing:
            return f"{self.state}; {failing}"
        if batch is not None and batch.last_error:
            return f"{self.state}; last sync failed: {batch.last_error}"
        return self.state


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _undecodable_name(exc: BaseException) -> BaseException | None:
    """The watchfiles error for a path it could not decode, if that is what ``exc`` holds
    (anyio wraps it in an exception group)."""
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            found = _undecodable_name(sub)
            if found is not None:
                return found
        return None
    text = str(exc)
    return exc if "Unable to decode path" in text else None


async def _relay(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


def _import_watchfiles() -> ModuleType:
    with contextlib.suppress(ImportError):  # anyio's private module: a later one may move it
        import anyio._backends._asyncio  # noqa: F401  # what awatch would import on the loop
    import watchfiles

    return watchfiles
