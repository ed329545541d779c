"""asyncio imported before ``ssl``, and given ``ssl`` after a daemon's first answer.

Importing asyncio imports ``ssl`` (and ``_ssl``, which loads OpenSSL's libraries, and their
enums): ~17 M instructions before the first answer of a daemon started by a question
(issue 38). The daemon's socket and its first answer never use TLS. On the Pythons checked
(``CHECKED``: 3.11, 3.12 and 3.13 read and tested), asyncio needs ``ssl`` at import for
three names only: ``asyncio.base_events``, ``asyncio.selector_events`` and
``asyncio.sslproto`` each bind ``ssl`` (``None`` when the import fails, which each of them
allows for), and ``sslproto`` defines ``SSLAgainErrors`` from it when it is not None.

``import_asyncio`` imports asyncio while ``import ssl`` fails and notes every module that
import made which holds ``ssl = None``. ``give_ssl`` (after the first answer, before anything
that could use TLS: the provider, git sync, the jobs) imports ``ssl`` and binds each of them,
and ``SSLAgainErrors`` where the module's own code defines it, as the plain import would
have, so no later user of asyncio or ssl can tell (tests/runtime/test_asyncio_ssl.py
compares every asyncio module with a plain import's). Anything else, a Python not checked or
a module holding ``ssl = None`` that is not one of asyncio's or without ``sslproto`` among
them, is given ``ssl`` at once (or imports asyncio plainly): never a deferral unchecked. A
module that imports ``ssl`` itself meanwhile gets it as always.
"""

from __future__ import annotations

import sys
import threading
from typing import Final

CHECKED: Final = frozenset({(3, 11), (3, 12), (3, 13)})
_AGAIN: Final = "SSLAgainErrors"  # asyncio.sslproto's: `if ssl is not None: SSLAgainErrors = ...`
_lock = threading.Lock()
_owed: list[str] = []  # the modules holding ssl = None from import_asyncio, until give_ssl


def import_asyncio() -> None:
    """Import asyncio without ``ssl`` when neither is imported yet on a Python checked
    (else: as it is)."""
    with _lock:
        if "asyncio" in sys.modules or "ssl" in sys.modules:
            return
        if sys.version_info[:2] not in CHECKED:
            import asyncio

            return
        before = set(sys.modules)
        sys.modules["ssl"] = None  # type: ignore[assignment]  # `import ssl` raises ImportError
        try:
            import asyncio  # noqa: F401
        finally:
            if "ssl" in sys.modules and sys.modules["ssl"] is None:
                del sys.modules["ssl"]
        _owed[:] = [
            name
            for name in sorted(set(sys.modules) - before)
            if getattr(sys.modules[name], "ssl", 0) is None
        ]
        expected = "asyncio.sslproto" in _owed and all(n.startswith("asyncio.") for n in _owed)
    if not expected:
        give_ssl()


def give_ssl() -> list[str]:
    """Import ``ssl`` and bind what asyncio's import would have bound (once); the modules
    given it."""
    with _lock:
        owed, _owed[:] = list(_owed), []
        if not owed:
            return []
        import ssl

        for name in owed:
            module = sys.modules[name]
            module.ssl = ssl  # type: ignore[attr-defined]
            if _AGAIN not in vars(module) and _AGAIN in _stored_names(module):
                setattr(module, _AGAIN, (ssl.SSLWantReadError, ssl.SSLSyscallError))
        return owed


def owed() -> bool:
    """asyncio is waiting for ``give_ssl``."""
    return bool(_owed)


def _stored_names(module: object) -> set[str]:
    """The names a module's own top-level code binds (its cached code, read again)."""
    import dis  # asyncio's inspect imported it already

    spec = getattr(module, "__spec__", None)
    loader = getattr(spec, "loader", None)
    get_code = getattr(loader, "get_code", None)
    code = get_code(spec.name) if get_code is not None and spec is not None else None
    if code is None:
        return set()
    return {
        i.argval for i in dis.get_instructions(code) if i.opname in ("STORE_NAME", "STORE_GLOBAL")
    }
