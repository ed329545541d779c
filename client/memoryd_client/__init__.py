"""Thin client for the memoryd daemon. Imports nothing heavy: no memoryd, SQLite or models.

    from memoryd_client import MemoryClient

    with MemoryClient() as client:
        result = client.search("what did we decide about the schema")

:class:`AsyncMemoryClient` (asyncio, pipelined) and every other name here are loaded on first
use, so that ``memctl`` imports only what its command needs (and never asyncio for the
blocking client).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: `memctl hook` runs on every prompt

_LAZY = {  # name -> the module that defines it: imported on first use (memctl's start)
    "MemoryClient": "memoryd_client.client",
    "AutostartFailed": "memoryd_client.errors",
    "BadResponse": "memoryd_client.errors",
    "ClientError": "memoryd_client.errors",
    "ClientTimeout": "memoryd_client.errors",
    "Conflict": "memoryd_client.errors",
    "ConnectionLost": "memoryd_client.errors",
    "DaemonNotRunning": "memoryd_client.errors",
    "DiskFull": "memoryd_client.errors",
    "ForbiddenPath": "memoryd_client.errors",
    "FrameTooLarge": "memoryd_client.errors",
    "InternalError": "memoryd_client.errors",
    "InvalidParams": "memoryd_client.errors",
    "NotFound": "memoryd_client.errors",
    "ProtocolError": "memoryd_client.errors",
    "ProtocolMismatch": "memoryd_client.errors",
    "RemoteError": "memoryd_client.errors",
    "ShuttingDown": "memoryd_client.errors",
    "SocketUnusable": "memoryd_client.errors",
    "StaleSocket": "memoryd_client.errors",
    "Unavailable": "memoryd_client.errors",
    "UnknownMethod": "memoryd_client.errors",
    "UnknownWorkspace": "memoryd_client.errors",
    "PROTOCOL_VERSION": "memoryd_client.protocol",
    "ErrorCode": "memoryd_client.protocol",
    "AgentFlushResult": "memoryd_client.types",
    "AppendResult": "memoryd_client.types",
    "FlushResult": "memoryd_client.types",
    "ForgetResult": "memoryd_client.types",
    "ExportResult": "memoryd_client.types",
    "ImportResult": "memoryd_client.types",
    "Forgotten": "memoryd_client.types",
    "GetResult": "memoryd_client.types",
    "Hello": "memoryd_client.types",
    "JobInfo": "memoryd_client.types",
    "JobRun": "memoryd_client.types",
    "JobsList": "memoryd_client.types",
    "ObserveResult": "memoryd_client.trust_types",
    "Progress": "memoryd_client.types",
    "ProviderStatus": "memoryd_client.types",
    "RecallItem": "memoryd_client.types",
    "RecallResult": "memoryd_client.types",
    "ReindexResult": "memoryd_client.types",
    "ReviewItem": "memoryd_client.trust_types",
    "ReviewList": "memoryd_client.trust_types",
    "SearchHit": "memoryd_client.types",
    "SearchResult": "memoryd_client.types",
    "Status": "memoryd_client.types",
    "WorkspaceChange": "memoryd_client.types",
    "WorkspaceInfo": "memoryd_client.types",
    "WorkspaceStatus": "memoryd_client.types",
    "AsyncMemoryClient": "memoryd_client._async",
}

__version__ = "0.1.0"
"""The distribution's version (kept equal to pyproject's by a test; no metadata lookup)."""

if TYPE_CHECKING:
    from typing import Any

    from memoryd_client._async import AsyncMemoryClient
    from memoryd_client.client import MemoryClient
    from memoryd_client.errors import (
        AutostartFailed,
        BadResponse,
        ClientError,
        ClientTimeout,
        Conflict,
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
    from memoryd_client.trust_types import ObserveResult, ReviewItem, ReviewList
    from memoryd_client.types import (
        AgentFlushResult,
        AppendResult,
        ExportResult,
        FlushResult,
        ForgetResult,
        Forgotten,
        GetResult,
        Hello,
        ImportResult,
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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memoryd_client' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain global
    return value


__all__ = [
    "PROTOCOL_VERSION",
    "AgentFlushResult",
    "AppendResult",
    "AsyncMemoryClient",
    "AutostartFailed",
    "BadResponse",
    "ClientError",
    "ClientTimeout",
    "Conflict",
    "ConnectionLost",
    "DaemonNotRunning",
    "DiskFull",
    "ErrorCode",
    "ExportResult",
    "FlushResult",
    "ForbiddenPath",
    "ForgetResult",
    "Forgotten",
    "FrameTooLarge",
    "GetResult",
    "Hello",
    "ImportResult",
    "InternalError",
    "InvalidParams",
    "JobInfo",
    "JobRun",
    "JobsList",
    "MemoryClient",
    "NotFound",
    "ObserveResult",
    "Progress",
    "ProtocolError",
    "ProtocolMismatch",
    "ProviderStatus",
    "RecallItem",
    "RecallResult",
    "ReindexResult",
    "RemoteError",
    "ReviewItem",
    "ReviewList",
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
