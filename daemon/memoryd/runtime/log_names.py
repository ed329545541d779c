"""The names the log's modules share: the levels memoryd takes, and the key under which a
held event keeps the time it was logged at. A leaf, so ``memoryd --help`` lists the levels
without loading structlog (runtime/logs.py), and log_output.py reads the key without
importing logs.py (which imports log_output.py, when logging is configured)."""

from __future__ import annotations

from typing import Final

LEVELS: Final = ("debug", "info", "warning", "error", "critical")
LOGGED_AT: Final = "_memoryd_logged_at"
