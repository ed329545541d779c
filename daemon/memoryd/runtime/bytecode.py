"""Bytecode for the modules ``memoryd run`` imported before it could cache any.

``cli.cmd_run`` lets the daemon write bytecode even under PYTHONDONTWRITEBYTECODE (machines
and images set it). The modules imported before that line (``memoryd``, ``memoryd.cli`` and
what it imports at the top) were left without a cached file, or with a stale one after an
edit or an upgrade of an install that wrote none (an editable install, ``pip --no-compile``),
so every later start compiled them from source again: ~20 M instructions for ``cli.py``
before a spawned daemon's first answer (issue 38). A wheel installed by pip has them
compiled at install time. ``note_early`` names what was imported by then; ``cache_early``
(after the first answer) has each one's own loader read its cached file, which compiles and
writes it only when missing or stale, as an import would have.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import sys

_early: list[str] = []


def note_early() -> None:
    """The modules imported so far (before bytecode may be written)."""
    _early[:] = list(sys.modules)


def cache_early() -> list[str]:
    """Write the cached bytecode of the noted modules whose file is missing or older than
    their source (once); the names written. Never raises: a read-only install stays as is."""
    names, _early[:] = list(_early), []
    if sys.dont_write_bytecode:
        return []
    written = []
    for name in names:
        spec = getattr(sys.modules.get(name), "__spec__", None)
        loader = getattr(spec, "loader", None)
        if spec is None or not isinstance(loader, importlib.machinery.SourceFileLoader):
            continue
        with contextlib.suppress(Exception):  # OSError, SyntaxError of an edited file, ...
            if spec.cached is None or not _stale(spec.origin, spec.cached):
                continue
            loader.get_code(spec.name)  # validates, compiles and writes, as importing does
            written.append(spec.name)
    return written


def _stale(source: str | None, cached: str) -> bool:
    """The cached file is missing, of another Python, or not of this source's time and size
    (a timestamp pyc, as imports write; a hash-based one is left to the import)."""
    if source is None:
        return False
    try:
        with open(cached, "rb") as f:
            head = f.read(16)
    except OSError:
        return True
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return True
    if int.from_bytes(head[4:8], "little"):
        return False
    st = os.stat(source)
    mtime, size = int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF
    return head[8:16] != mtime.to_bytes(4, "little") + size.to_bytes(4, "little")
