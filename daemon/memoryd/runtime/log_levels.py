"""The log levels memoryd takes: a leaf, so ``memoryd --help`` lists them without loading
structlog (runtime/logs.py)."""

from __future__ import annotations

from typing import Final

LEVELS: Final = ("debug", "info", "warning", "error", "critical")
