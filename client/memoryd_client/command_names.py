"""How a person types ``memctl`` and ``memoryd`` here, for the next steps messages name.

The README installs both into a virtual environment that is not activated: a bare ``memctl``
in a ready line or a doctor's fix is then "command not found". A message names the bare
command when PATH finds this very installation's, else the path of the one beside the
running Python (``~/...`` under the home folder).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["typed"]


@functools.cache
def typed(name: str) -> str:
    """``name`` (``memctl`` or ``memoryd``) as a person types it to run this installation's."""
    return spelled(name, sys.executable, shutil.which, Path.home())


def spelled(name: str, python: str, which: Callable[[str], str | None], home: Path) -> str:
    beside = Path(python).parent / name
    if not (beside.is_file() and os.access(beside, os.X_OK)):
        return name  # not installed beside this Python: the bare name is the best guess
    found = which(name)
    try:
        if found and os.path.samefile(found, beside):
            return name
    except OSError:
        pass
    path = Path(os.path.abspath(beside))
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)
