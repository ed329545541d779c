"""The open-file limit: raised to its hard limit at start, and what it leaves for clients.

Every connection, index connection (database, WAL, shared memory), watched folder and
log file is a file descriptor. The usual soft limit is 1,024 while the hard limit is far
higher (systemd sets 524,288): a daemon that keeps the soft one runs out with a thousand
idle clients, and then accepting fails in a loop and SQLite cannot open files.
"""

from __future__ import annotations

import resource

# Descriptors kept for everything that is not a client connection: indexes (3 fds per
# SQLite connection, a writer and readers per workspace), the watcher, logs, the model.
RESERVED_FDS = 256
MACOS_OPEN_MAX = 10240


def raise_nofile() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns (soft, hard) after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    # macOS refuses more than OPEN_MAX (10,240) whatever the hard limit says.
    for target in (want, min(want, MACOS_OPEN_MAX)):
        if target <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            continue
        soft = target
        break
    return soft, hard


def connection_cap(configured: int, soft_limit: int) -> int:
    """The connections we can serve: the configured cap, kept under the fd limit."""
    return max(1, min(configured, soft_limit - RESERVED_FDS))
