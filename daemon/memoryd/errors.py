"""Exceptions the engine raises, each carrying the wire error code a caller should see.

A leaf module: the server turns these into protocol errors, the CLI into one-line messages.
"""

from __future__ import annotations

from typing import Any

from memoryd_client.protocol import ErrorCode


class MemorydError(Exception):
    code: str = ErrorCode.INTERNAL

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}


class ConfigError(MemorydError):
    """A config key or value that cannot be used; the message names the key and value."""

    code = ErrorCode.INVALID_PARAMS


class InvalidParams(MemorydError):
    code = ErrorCode.INVALID_PARAMS


class NotFound(MemorydError):
    code = ErrorCode.NOT_FOUND


class ForbiddenPath(MemorydError):
    code = ErrorCode.FORBIDDEN_PATH


class TooLarge(MemorydError):
    """More than a limit allows (one append, a daily file's size)."""

    code = ErrorCode.TOO_LARGE


class DiskFull(MemorydError):
    """The disk (or quota) is full; what was being written is not there, whole or in part."""

    code = ErrorCode.DISK_FULL


class UnknownWorkspace(MemorydError):
    code = ErrorCode.UNKNOWN_WORKSPACE


class Conflict(MemorydError):
    """A file kept changing under a rewrite (an outside writer): what was not done is named
    in the error's data; nothing is claimed that did not happen."""

    code = ErrorCode.CONFLICT


class Unavailable(MemorydError):
    code = ErrorCode.UNAVAILABLE


class EmbeddingError(Unavailable):
    """The embedding provider could not answer (down, garbage, misconfigured)."""


class IndexUnavailable(Unavailable):
    """The index database cannot be opened or used."""
