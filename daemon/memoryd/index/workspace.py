"""WorkspaceIndex: one workspace's index, the API the daemon calls. (Being implemented.)

Threading contract:
- All mutations run on this index's single writer thread (``submit_sync`` / ``sync``).
- ``search`` and ``get`` are thread-safe and use read-only connections from a pool, so
  they never wait behind indexing. They are blocking; the daemon calls them in a thread.
- Embedding runs in the background after keyword rows are committed; a file is
  searchable by keyword as soon as its sync returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from memoryd.config import Config
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.index.types import GetResult, SearchRequest, SearchResponse, SyncProgress, SyncReport


class WorkspaceIndex:
    def __init__(self, root: Path, db_path: Path, config: Config,
                 provider: EmbeddingProvider | None, provider_reason: str = "") -> None:
        self.root = root.resolve()
        self.db_path = db_path
        self.config = config
        self.provider = provider
        self.generation = 0  # bumps after every committed change

    def open(self) -> None:
        """Open (create, migrate; a corrupt file is moved aside and rebuilt). Fast: no scan."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def submit_sync(self, paths: Iterable[Path] | None = None, *, full: bool = False,
                    progress: Callable[[SyncProgress], None] | None = None) -> Future[SyncReport]:
        """Queue a sync on the writer thread. paths=None: scan the whole workspace."""
        raise NotImplementedError

    def sync(self, paths: Iterable[Path] | None = None, *, full: bool = False,
             progress: Callable[[SyncProgress], None] | None = None) -> SyncReport:
        return self.submit_sync(paths, full=full, progress=progress).result()

    def wait_embedded(self, timeout: float | None = None) -> bool:
        """Block until no chunk waits for a vector (or the provider is degraded)."""
        raise NotImplementedError

    def search(self, req: SearchRequest) -> SearchResponse:
        raise NotImplementedError

    def get(self, path: str, from_line: int | None = None, lines: int | None = None) -> GetResult:
        raise NotImplementedError

    def is_indexed_path(self, path: Path) -> bool:
        """Whether a change at ``path`` (absolute) concerns this index (the watcher's filter)."""
        raise NotImplementedError

    def status(self) -> dict[str, Any]:
        raise NotImplementedError
