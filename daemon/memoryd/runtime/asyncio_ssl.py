"""asyncio imported before ``ssl``, and given ``ssl`` after a daemon's first answer.

Importing asyncio imports ``ssl`` (and ``_ssl``, which loads OpenSSL's libraries, and their
enums): ~28 M instructions, 4% of a daemon started by a question before its answer
(issue 38). The daemon's socket and its first answer never use TLS. asyncio needs ``ssl``
at import for nothing else than three names: ``asyncio.base_events``,
``asyncio.selector_events`` and ``asyncio.sslproto`` each bind ``ssl`` (``None`` when the
import fails, which each of them allows for), and ``sslproto`` defines ``SSLAgainErrors``
from it. ``import_asyncio`` imports asyncio while ``import ssl`` fails; ``give_ssl`` (after
the first answer, before anything that could use TLS: the provider, git sync, the jobs)
imports ``ssl`` and binds those names to what the plain import binds, so no later user of
asyncio or ssl can tell (tests/runtime/test_asyncio_ssl.py compares every asyncio module
with a plain import's). A module that imports ``ssl`` itself meanwhile gets it as always.
"""

from __future__ import annotations

import sys
import threading
from typing import Final

_ASYNCIO_WITH_SSL: Final = ("asyncio.base_events", "asyncio.selector_events", "asyncio.sslproto")
_lock = threading.Lock()
_owed = False  # asyncio was imported without ssl and has not been given it yet


def import_asyncio() -> None:
    """Import asyncio without ``ssl`` when neither is imported yet (else: as it is)."""
    global _owed
    with _lock:
        if "asyncio" in sys.modules or "ssl" in sys.modules:
            return
        sys.modules["ssl"] = None  # type: ignore[assignment]  # `import ssl` raises ImportError
        try:
            import asyncio  # noqa: F401
        finally:
            if "ssl" in sys.modules and sys.modules["ssl"] is None:
                del sys.modules["ssl"]
        _owed = all(getattr(sys.modules[m], "ssl", 0) is None for m in _ASYNCIO_WITH_SSL)


def give_ssl() -> None:
    """Import ``ssl`` and bind asyncio's names as its own import would have (once)."""
    global _owed
    with _lock:
        if not _owed:
            return
        import ssl

        for name in _ASYNCIO_WITH_SSL:
            sys.modules[name].ssl = ssl  # type: ignore[attr-defined]
        sslproto = sys.modules["asyncio.sslproto"]
        sslproto.SSLAgainErrors = (ssl.SSLWantReadError, ssl.SSLSyscallError)  # type: ignore[attr-defined]
        _owed = False


def owed() -> bool:
    """asyncio is waiting for ``give_ssl``."""
    return _owed
