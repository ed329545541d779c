"""Thin client for the memoryd daemon. Imports nothing heavy: no memoryd, SQLite or models.

    from memoryd_client import MemoryClient

    with MemoryClient() as client:
        result = client.search("what did we decide about the schema")

:class:`AsyncMemoryClient` (asyncio, pipelined) is loaded on first use so that the blocking
client and ``memctl`` do not pay for importing asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd_client.client import MemoryClient
from memoryd_client.errors import (
    AutostartFailed,
    BadResponse,
    ClientError,
    ClientTimeout,
    ConnectionLost,
    DaemonNotRunning,
    DiskFull,
    ForbiddenPath,
    FrameTooLarge,
    InternalError,
    InvalidParams,
    NotFound,
    ProtocolError,
    ProtocolMismatch,
    RemoteError,
    ShuttingDown,
    SocketUnusable,
    StaleSocket,
    Unavailable,
    UnknownMethod,
    UnknownWorkspace,
)
from memoryd_client.protocol import PROTOCOL_VERSION, ErrorCode
from memoryd_client.types import (
    AppendResult,
    FlushResult,
    GetResult,
    Hello,
    JobInfo,
    JobRun,
    JobsList,
    Progress,
    ProviderStatus,
    RecallItem,
    RecallResult,
    ReindexResult,
    SearchHit,
    SearchResult,
    Status,
    WorkspaceChange,
    WorkspaceInfo,
    WorkspaceStatus,
)

__version__ = "0.1.0"
"""The distribution's version (kept equal to pyproject's by a test; no metadata lookup)."""

if TYPE_CHECKING:
    from memoryd_client._async import AsyncMemoryClient


def __getattr__(name: str) -> Any:
    if name == "AsyncMemoryClient":
        from memoryd_client._async import AsyncMemoryClient

        return AsyncMemoryClient
    raise AttributeError(f"module 'memoryd_client' has no attribute {name!r}")


__all__ = [
    "PROTOCOL_VERSION",
    "AppendResult",
    "AsyncMemoryClient",
    "AutostartFailed",
    "BadResponse",
    "ClientError",
    "ClientTimeout",
    "ConnectionLost",
    "DaemonNotRunning",
    "DiskFull",
    "ErrorCode",
    "FlushResult",
    "ForbiddenPath",
    "FrameTooLarge",
    "GetResult",
    "Hello",
    "InternalError",
    "InvalidParams",
    "JobInfo",
    "JobRun",
    "JobsList",
    "MemoryClient",
    "NotFound",
    "Progress",
    "ProtocolError",
    "ProtocolMismatch",
    "ProviderStatus",
    "RecallItem",
    "RecallResult",
    "ReindexResult",
    "RemoteError",
    "SearchHit",
    "SearchResult",
    "ShuttingDown",
    "SocketUnusable",
    "StaleSocket",
    "Status",
    "Unavailable",
    "UnknownMethod",
    "UnknownWorkspace",
    "WorkspaceChange",
    "WorkspaceInfo",
    "WorkspaceStatus",
    "__version__",
]
