"""Helpers for engine tests: a workspace on disk and WorkspaceIndex objects over it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.embeddings.base import EmbeddingProvider
from memoryd.index.types import NotInMemory, SearchRequest, SearchResponse
from memoryd.index.workspace import WorkspaceIndex
from memoryd.runtime.config import Config, config_from_mapping


def write_file(root: Path, rel: str, text: str | bytes) -> Path:
    """``root / rel`` holding ``text`` (a str as UTF-8), its folders made."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


class IndexFactory:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.ws = tmp / "ws"
        (self.ws / "memory").mkdir(parents=True)
        self.db = tmp / "index" / "ws.sqlite"
        self.made: list[WorkspaceIndex] = []

    def config(self, overrides: dict[str, Any] | None = None) -> Config:
        data: dict[str, Any] = {"embedding": {"provider": "none"}}
        for section, values in (overrides or {}).items():
            data.setdefault(section, {}).update(values)
        return config_from_mapping(data)

    def __call__(
        self,
        overrides: dict[str, Any] | None = None,
        provider: EmbeddingProvider | None = None,
        reason: str = "",
    ) -> WorkspaceIndex:
        ix = WorkspaceIndex(self.ws, self.db, self.config(overrides), provider, reason)
        ix.open()
        self.made.append(ix)
        return ix

    def write(self, rel: str, text: str | bytes) -> Path:
        return write_file(self.ws, rel, text)

    def write_all(self, files: Mapping[str, str | bytes]) -> None:
        """Each of ``files`` (rel -> text) written."""
        for rel, text in files.items():
            write_file(self.ws, rel, text)

    def bump_mtime(self, rel: str) -> None:
        """Make a change visible even within the file system's timestamp granularity."""
        path = self.ws / rel
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))

    def close_all(self) -> None:
        for ix in self.made:
            ix.close()


def search(ix: WorkspaceIndex, query: str, **kw: Any) -> SearchResponse:
    return ix.search(SearchRequest(query, **kw))


def in_memory(ix: WorkspaceIndex, req: SearchRequest) -> SearchResponse | None:
    """ix.search(req, in_memory=True), None when the in-memory copies cannot answer it."""
    try:
        return ix.search(req, in_memory=True)
    except NotInMemory:
        return None


def paths(resp: SearchResponse) -> list[str]:
    return [h.path for h in resp.results]
