"""The registry of workspaces this daemon serves: config-declared plus registered ones.

Names are unique (default: the folder name, then ``name-2``...: workspace/names.py, with
each workspace's index file). Each one (``Workspace``, workspace/served.py) has one
``WorkspaceIndex``, opened and scanned here. After the socket is up the indexes are opened
first (requests that need an index wait for that), then the embedding provider is chosen
in a thread (loading a local model, or importing openai, takes a second or more) and given
to each index: keyword search never waits for it, and a hybrid search answers by keyword
meanwhile, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.errors import InvalidParams, MemorydError, UnknownWorkspace
from memoryd.files.fsutil import remove_stale_temps
from memoryd.index.types import SyncProgress, SyncReport
from memoryd.runtime.config import Config
from memoryd.runtime.logs import get_logger
from memoryd.runtime.state import StateDB
from memoryd.workspace.names import NAME, config_entries, default_name, index_file
from memoryd.workspace.served import Workspace

if TYPE_CHECKING:  # the engine and numpy load in the background, after the socket is up
    from memoryd.embeddings.base import EmbeddingProvider
    from memoryd.embeddings.factory import ProviderChoice
    from memoryd.index.workspace import WorkspaceIndex

log = get_logger("memoryd.workspace.registry")

# A first scan that fails (disk full, an I/O error) is tried again after this, doubling up
# to the maximum, as the watcher retries a failed sync: the files are not left for a restart.
SCAN_RETRY_FIRST_S = 1.0
SCAN_RETRY_MAX_S = 300.0
# An index that cannot be opened (no file descriptor left, a full disk, an unmounted folder)
# is opened again after this, doubling up to OPEN_RETRY_MAX_S: the cause going away is
# enough, no restart needed.
OPEN_RETRY_FIRST_S = 1.0
OPEN_RETRY_MAX_S = 120.0


def _choose_provider(config: Config) -> ProviderChoice:
    from memoryd.embeddings.factory import choose_provider  # loads a model runtime: lazily

    return choose_provider(config.embedding)


class Registry:
    def __init__(
        self,
        config: Config,
        index_dir: Path,
        state: StateDB,
        before_serving: Callable[[Path, WorkspaceIndex], None] | None = None,
        reopened: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.config = config
        self.index_dir = index_dir
        self.state = state
        # Run on an index just opened, before any request sees it (blocking, its thread):
        # the daemon syncs the files a forget killed mid-way changed (lifecycle/journal.py).
        self.before_serving = before_serving
        self._items: dict[str, Workspace] = {}
        self.choice: ProviderChoice | None = None
        self.provider_ready = asyncio.Event()
        self._closing = False
        self._reopening: set[asyncio.Task[None]] = set()  # retried opens (_open_failed)
        # Told when a retried open succeeded (the daemon's watch and scheduler follow).
        self.reopened = reopened
        self._first_answer_pending = False  # the indexes' copies wait for it (open_all)

    # -- loading -----------------------------------------------------------------------

    def load(self) -> None:
        """Read config and state (fast, no index opened); bad config entries are errors."""
        entries = config_entries(self.config)
        for root, name in entries:  # explicit names first, so defaults step around them
            if name:
                self._items[name] = Workspace(name, root, "config")
        for root, name in entries:
            if not name:
                name = self._unique(default_name(root))
                self._items[name] = Workspace(name, root, "config")
        for reg in self.state.workspaces():
            if any(w.root == reg.path for w in self._items.values()):
                continue  # also declared in the config: the config entry wins
            name = reg.name if reg.name not in self._items else self._unique(reg.name)
            self._items[name] = Workspace(name, reg.path, "registry")

    async def reconcile_config(self, config: Config) -> tuple[list[str], list[str]]:
        """After a reload: open workspaces the config added, close those it dropped.

        Indexes already open read the new [search] settings at their next search, and keep
        the embedding and index settings they were opened with (a restart applies those).
        Returns the names added and removed.
        """
        entries = config_entries(config)
        self.config = config
        wanted = {root for root, _ in entries}
        removed = [w for w in self._items.values() if w.source == "config" and w.root not in wanted]
        for ws in removed:
            del self._items[ws.name]
            await self._forget(ws)
        added = []
        for root, name in entries:
            current = next((w for w in self._items.values() if w.root == root), None)
            if current is not None:
                current.source = "config"
                continue
            ws = Workspace(
                name
                if name and name not in self._items
                else self._unique(name or default_name(root)),
                root,
                "config",
            )
            self._items[ws.name] = ws
            added.append(ws)
        await asyncio.gather(*(self._open(ws) for ws in added))
        return [w.name for w in added], [w.name for w in removed]

    def _unique(self, base: str) -> str:
        name, n = base, 2
        while name in self._items:
            name = f"{base}-{n}"
            n += 1
        return name

    async def open_all(self, first_answer_first: bool = False) -> None:
        """Open every index (keyword search answers from here on). ``first_answer_first``: their
        in-memory copies (and numpy) load at ``first_answered``, or before a first write."""
        self._first_answer_pending = first_answer_first
        if self.config.embedding.provider == "none":  # nothing to load: known at once
            await self.load_provider()
        await asyncio.gather(*(self._open(ws) for ws in list(self._items.values())))

    def first_answered(self) -> None:
        """The daemon's first answer went out (or its wait ended): the copies load from now on."""
        self._first_answer_pending = False
        for index in (ws.index for ws in self._items.values() if ws.index is not None):
            index.open_later()

    async def scans_done(self, timeout: float) -> None:
        """Until every startup scan has ended and every in-memory keyword copy is loaded
        (searches rank in memory from then on), for at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(
            (ws.scan is not None and not ws.scan.done())
            or (ws.index is not None and ws.index.copies.keywords.scan == "loading")
            for ws in self._items.values()
        ):
            await asyncio.sleep(0.02)

    async def load_provider(self) -> None:
        """Choose the provider (slow for a local model) and give it to every index."""
        if self.choice is not None:
            return
        try:
            self.choice = await asyncio.to_thread(_choose_provider, self.config)
        except MemorydError as exc:
            from memoryd.embeddings.factory import ProviderChoice

            self.choice = ProviderChoice(
                None, self.config.embedding.provider, f"keyword only: {exc.message}"
            )
            log.error("embedding_provider_unavailable", reason=exc.message)
        self.provider_ready.set()
        p = self.choice.provider
        log.info(
            "embedding_provider",
            name=p.name if p else "none",
            model=p.model if p else "",
            reason=self.choice.reason,
        )
        # One not opening yet is opened with the provider (_make_index).
        opening = [ws for ws in self._items.values() if ws.opening]
        await asyncio.gather(*(self._attach(ws) for ws in opening))

    async def _attach(self, ws: Workspace) -> None:
        """Give the chosen provider to an index opened before it was known (once)."""
        await ws.opened.wait()
        choice, index = self.choice, ws.index
        if choice is None or index is None or not index.queries.pending:
            return
        await asyncio.to_thread(
            index.attach_provider, choice.provider, choice.reason, choice.fallback
        )

    @property
    def provider(self) -> EmbeddingProvider | None:
        return self.choice.provider if self.choice is not None else None

    async def _open(self, ws: Workspace) -> None:
        # open_all and add can both reach a workspace added while the indexes open:
        # two indexes on one file would fight over its lock.
        if ws.opening:
            await ws.opened.wait()
            return
        ws.opening = True
        started = time.perf_counter()
        try:
            index = await asyncio.to_thread(self._make_index, ws)
        except Exception as exc:  # one bad workspace must not stop the others
            ws.error = exc.message if isinstance(exc, MemorydError) else f"{exc}"
            self._open_failed(ws)
        else:
            if self._closing or self._items.get(ws.name) is not ws:  # removed meanwhile
                await asyncio.to_thread(index.close)
            else:
                ws.index, ws.error, ws.open_failures = index, None, 0
                if not self._first_answer_pending:  # opened with later=True as it passed
                    index.open_later()
                log.info(
                    "workspace_opened",
                    workspace=ws.name,
                    ms=round((time.perf_counter() - started) * 1000, 1),
                    provider="loading" if index.queries.pending else None,
                )
                self._start_scan(ws)
        finally:
            ws.opened.set()
        if self.choice is not None:  # chosen while this index opened: load_provider may
            await self._attach(ws)  # have passed it by

    def _open_failed(self, ws: Workspace) -> None:
        """Open the index again later, backing off: what failed may pass (descriptors freed,
        space made, the folder mounted) and the workspace comes back without a restart."""
        ws.open_failures += 1
        delay = min(OPEN_RETRY_MAX_S, OPEN_RETRY_FIRST_S * 2 ** (ws.open_failures - 1))
        ws.open_retry_at = time.time() + delay
        log.error(
            "workspace_unavailable",
            workspace=ws.name,
            path=str(ws.root),
            reason=ws.error,
            failures=ws.open_failures,
            retry_in_s=delay,
        )

        def retry() -> None:
            ws.open_retry = None
            if self._closing or self._items.get(ws.name) is not ws or ws.index is not None:
                return
            ws.opening = False  # _open starts afresh; requests keep answering unavailable
            task = asyncio.get_running_loop().create_task(self._reopen(ws), name="reopen")
            self._reopening.add(task)
            task.add_done_callback(self._reopening.discard)

        if ws.open_retry is not None:
            ws.open_retry.cancel()
        ws.open_retry = asyncio.get_running_loop().call_later(delay, retry)

    async def _reopen(self, ws: Workspace) -> None:
        await self._open(ws)
        if ws.index is not None and self.reopened is not None:
            await self.reopened()

    def _make_index(self, ws: Workspace) -> WorkspaceIndex:
        """Blocking (sqlite-vec probe, migrations): run in a thread."""
        from memoryd.index.workspace import WorkspaceIndex

        if not ws.root.is_dir():
            raise InvalidParams(f"{ws.root} is not a directory (missing or unmounted?)")
        stale = remove_stale_temps(ws.root)
        if stale:
            log.warning(
                "stale_temp_files_removed",
                workspace=ws.name,
                files=stale,
                reason="a rewrite was killed before its rename",
            )
        choice = self.choice
        index = WorkspaceIndex(
            ws.root,
            index_file(self.index_dir, ws.name, ws.root),
            self.config,
            choice.provider if choice else None,
            choice.reason if choice else "",
            fallback=choice.fallback if choice else None,
            search_settings=lambda: self.config.search,
            provider_pending=choice is None,
        )
        index.open(later=self._first_answer_pending)
        if self.before_serving is not None:
            try:
                self.before_serving(ws.root, index)
            except BaseException:
                index.close()
                raise
        return index

    def _start_scan(self, ws: Workspace) -> None:
        assert ws.index is not None

        def progress(p: SyncProgress) -> None:
            ws.scan_progress = p  # a plain store from the writer thread; status reads it
            for listener in list(ws.scan_listeners):
                listener(p)

        loop = asyncio.get_running_loop()
        ws.scan_started = time.time()
        ws.scan = ws.index.submit_sync(None, progress=progress)

        def done(fut: Future[SyncReport]) -> None:  # on the writer thread
            if fut.cancelled():  # closing
                return
            exc = fut.exception()
            if exc is None:
                ws.scan_report, ws.scan_failures, ws.scan_error = fut.result(), 0, None
                return
            with contextlib.suppress(RuntimeError):  # the loop is closed: shutting down
                loop.call_soon_threadsafe(self._scan_failed, ws, exc)

        ws.scan.add_done_callback(done)

    def _scan_failed(self, ws: Workspace, exc: BaseException) -> None:
        """Try the first scan again later: what it did not index waits for no restart."""
        if self._closing or self._items.get(ws.name) is not ws or ws.index is None:
            return
        ws.scan_failures += 1
        delay = min(SCAN_RETRY_MAX_S, SCAN_RETRY_FIRST_S * 2 ** (ws.scan_failures - 1))
        ws.scan_error = str(exc) or type(exc).__name__
        ws.scan_retry_at = time.time() + delay
        log.warning(
            "startup_scan_failed",
            workspace=ws.name,
            error=ws.scan_error,
            failures=ws.scan_failures,
            retry_in_s=delay,
        )

        def retry() -> None:
            ws.scan_retry = None
            if self._closing or self._items.get(ws.name) is not ws or ws.index is None:
                return
            try:
                self._start_scan(ws)
            except MemorydError:  # the index closed meanwhile
                return

        ws.cancel_scan_retry()
        ws.scan_retry = asyncio.get_running_loop().call_later(delay, retry)

    # -- lookup ------------------------------------------------------------------------

    def list(self) -> list[Workspace]:
        return list(self._items.values())

    def get(self, name: str) -> Workspace | None:
        return self._items.get(name)

    def resolve(self, ref: str | None) -> Workspace:
        """A workspace by name, by its path, or by a path inside it (the deepest wins)."""
        items = self._items
        if ref is None:
            if len(items) == 1:
                return next(iter(items.values()))
            if not items:
                raise UnknownWorkspace(
                    "no workspace is registered; add one with `memctl workspace add PATH`"
                )
            raise InvalidParams(
                f"several workspaces are registered ({', '.join(sorted(items))})"
                ": name one in workspace",
                {"param": "workspace", "workspaces": sorted(items)},
            )
        if ref in items:
            return items[ref]
        if "/" in ref or ref.startswith("~") or ref in (".", ".."):
            path = Path(ref).expanduser().resolve()
            inside = [w for w in items.values() if path == w.root or path.is_relative_to(w.root)]
            if inside:
                return max(inside, key=lambda w: len(w.root.parts))
        known = ", ".join(sorted(items)) or "none"
        raise UnknownWorkspace(
            f"no workspace named or containing {ref!r} (known: {known})", {"workspace": ref}
        )

    def opened_index(self, ref: str | None) -> tuple[Workspace, WorkspaceIndex | None]:
        """Workspace ``ref`` and its index, without awaits: None while its index is still
        opening (``index_of`` waits for it); once opened without one, ``Unavailable``."""
        ws = self.resolve(ref)
        index = ws.index  # set on the loop just before ``opened``, with no await between
        if index is None and ws.opened.is_set():
            index = ws.usable_index()  # raises: why it is not usable
        return ws, index

    async def index_of(self, ref: str | None) -> tuple[Workspace, WorkspaceIndex]:
        """Workspace ``ref`` and its index, once opened; ``Unavailable`` if it could not be."""
        ws, index = self.opened_index(ref)
        if index is None:
            await ws.opened.wait()
            index = ws.usable_index()
        return ws, index

    # -- changes -----------------------------------------------------------------------

    async def add(self, path: str, name: str | None) -> tuple[Workspace, bool]:
        root = Path(path).expanduser()
        if not root.is_absolute():
            raise InvalidParams(f"path must be absolute, got {path!r}", {"param": "path"})
        root = root.resolve()
        if root == root.parent:
            raise InvalidParams(
                f"path {path} is the file system's root: a workspace is a folder of its own",
                {"param": "path"},
            )
        if not root.is_dir():
            raise InvalidParams(f"path {path} is not an existing directory", {"param": "path"})
        for ws in self._items.values():
            if ws.root == root:
                if name and name != ws.name:
                    raise InvalidParams(
                        f"{root} is already registered as {ws.name}", {"param": "name"}
                    )
                return ws, False
        for ws in self._items.values():
            # A path inside both would name two workspaces (-w PATH, the current directory),
            # and the outer one's memory/ would index the inner one's notes a second time.
            if root.is_relative_to(ws.root) or ws.root.is_relative_to(root):
                where = "inside" if root.is_relative_to(ws.root) else "around"
                raise InvalidParams(
                    f"{root} is {where} workspace {ws.name} ({ws.root}): workspaces may not "
                    "nest, a path in both would belong to two workspaces and notes could be "
                    "indexed twice; register one of them, or move the folder out",
                    {"param": "path", "workspace": ws.name},
                )
        if name is not None:
            if not NAME.match(name):
                raise InvalidParams(
                    "name must be 1-64 letters, digits, '.', '_' or '-', "
                    "starting with a letter or digit",
                    {"param": "name"},
                )
            if name in self._items:
                raise InvalidParams(
                    f"name {name} is taken by {self._items[name].root}", {"param": "name"}
                )
        ws = Workspace(name or self._unique(default_name(root)), root, "registry")
        self.state.add_workspace(ws.name, root)
        self._items[ws.name] = ws
        log.info("workspace_added", workspace=ws.name, path=str(root))
        await self._open(ws)
        return ws, True

    async def remove(self, ref: str, delete_index: bool) -> Workspace:
        ws = self.resolve(ref)
        if ws.source == "config":
            raise InvalidParams(
                f"workspace {ws.name} is declared in the config file "
                f"({self.config.source}); remove it there",
                {"param": "workspace"},
            )
        self.state.remove_workspace(ws.root)
        del self._items[ws.name]
        await self._forget(ws)
        if delete_index:
            db = index_file(self.index_dir, ws.name, ws.root)
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(str(db) + suffix).unlink()
        log.info(
            "workspace_removed", workspace=ws.name, path=str(ws.root), index_deleted=delete_index
        )
        return ws

    async def _forget(self, ws: Workspace) -> None:
        """Close the index of a workspace already taken out of the registry."""
        ws.cancel_scan_retry()
        if not ws.opening:  # never started: never will
            ws.opening = True
            ws.opened.set()
            return
        await ws.opened.wait()  # an open in progress closes its own index (see _open)
        if ws.index is not None:
            await asyncio.to_thread(ws.index.close)
            ws.index = None

    async def close(self) -> None:
        """Close every index (the writer finishes its current transaction) and the provider."""
        self._closing = True
        for ws in self._items.values():
            ws.cancel_scan_retry()
        indexes = [w.index for w in self._items.values() if w.index is not None]
        await asyncio.gather(*(asyncio.to_thread(i.close) for i in indexes), return_exceptions=True)
        p = self.provider
        if p is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(p.close)
        fallback = self.choice.fallback if self.choice is not None else None
        if fallback is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(fallback.provider.close)
