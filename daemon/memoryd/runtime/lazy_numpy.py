"""numpy, imported when it is first used instead of when the engine's modules are.

A daemon started by a question answers it by keyword from SQLite's FTS5 and the compiled
part: numpy (~230 M instructions and ~90 modules to import, a fifth of a start) is needed
only once the in-memory copies load, which is after that first answer (issue 38: spawn ->
first answer). The modules that use numpy write ``from memoryd.runtime.lazy_numpy import np``
(and import ``numpy.typing`` for annotations only); their ``np`` is a stand-in until the
first attribute is read from it, anywhere.

That first read imports numpy under a lock, and only then, with numpy whole, binds every
loaded module's ``np`` that still holds the stand-in (and this module's, for modules
imported later) to numpy itself: from then on a search reads the module as it would have
read it with a plain ``import numpy as np``, no stand-in in between. A thread that reads the
stand-in meanwhile waits on the lock, so none sees a half-imported numpy (3.11's
``importlib.util.LazyLoader`` gives no such promise: a second thread can find the module
half-run). A module that kept the stand-in anyway (one being imported while the binding ran)
still works: each of its reads goes through ``__getattr__`` to numpy.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["LazyModule", "imported", "np"]


class LazyModule:
    """A stand-in for the module ``name``, bound as ``alias`` in the modules that use it."""

    # Every name of its own starts with _lazy_: any other is the module's (np.load is
    # numpy's load, never a method of this class).
    __slots__ = ("_lazy_alias", "_lazy_lock", "_lazy_module", "_lazy_name")

    def __init__(self, name: str, alias: str) -> None:
        self._lazy_name = name
        self._lazy_alias = alias
        self._lazy_module: ModuleType | None = None
        self._lazy_lock = threading.Lock()
        os.register_at_fork(after_in_child=self._lazy_after_fork)

    def __getattr__(self, attr: str) -> Any:  # only for names not in __slots__
        return getattr(self._lazy_load(), attr)

    def __repr__(self) -> str:
        state = "imported" if self._lazy_module is not None else "not imported yet"
        return f"<lazy module {self._lazy_name!r} ({state})>"

    def _lazy_load(self) -> ModuleType:
        """The module, imported (once) and bound in place of this stand-in."""
        module = self._lazy_module
        if module is not None:
            return module
        with self._lazy_lock:
            module = self._lazy_module
            if module is None:
                module = importlib.import_module(self._lazy_name)
                self._lazy_bind(module)
                self._lazy_module = module  # last: the unlocked read above sees it whole
            return module

    def _lazy_bind(self, module: ModuleType) -> None:
        """Every module's ``alias`` that is this stand-in becomes ``module``."""
        for m in list(sys.modules.values()):
            # Plain modules only: reading a lazily loaded one (importlib.util.LazyLoader's)
            # would import it.
            if type(m) is ModuleType and m.__dict__.get(self._lazy_alias) is self:
                m.__dict__[self._lazy_alias] = module

    def _lazy_after_fork(self) -> None:
        # A fork while another thread held the lock would leave it held in the child.
        self._lazy_lock = threading.Lock()


def imported(module: object) -> bool:
    """Whether ``module`` (a stand-in or a module) is imported: a module always is."""
    return not isinstance(module, LazyModule) or module._lazy_module is not None


if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy", "np")
