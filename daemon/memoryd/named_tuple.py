"""``class X(NamedTuple)`` at run time without ``typing``'s check of each field's annotation.

Under ``from __future__ import annotations`` every annotation is a string, and
``typing.NamedTuple`` turns each one into a ``ForwardRef``, which compiles it (Python's
parser: ~150 k instructions a field). The engine's and the daemon's named tuples have ~85
fields, ~14 M instructions before a spawned daemon's first answer (issue 38). The class
made here is the one ``typing`` makes (``collections.namedtuple`` with the class body's
defaults, docstring, methods and qualified name, the same errors for a field without a
default after one with, or a body that redefines a named tuple's own attribute), but its
``__annotations__`` keep the strings as written (``typing.get_type_hints`` reads either)
and it has no ``__orig_bases__`` (``typing`` keeps its NamedTuple function there).

Modules import ``typing.NamedTuple`` under TYPE_CHECKING (what the type checker knows
these classes as) and this at run time; tests/runtime/test_named_tuple.py holds the two
to each other. No generic named tuples (none here).
"""

from __future__ import annotations

import collections
from typing import Any

# typing's own lists (3.11-3.13): what a body may not define, and what it does not copy
_PROHIBITED = frozenset(
    {
        "__new__",
        "__init__",
        "__slots__",
        "__getnewargs__",
        "_fields",
        "_field_defaults",
        "_make",
        "_replace",
        "_asdict",
        "_source",
    }
)
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})
_namedtuple: Any = collections.namedtuple  # called with names known at run time only


class _Maker(type):
    def __new__(mcs, typename: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if not bases:  # NamedTuple itself, below
            return super().__new__(mcs, typename, bases, ns)
        if bases != (NamedTuple,):
            raise TypeError("can only inherit from a NamedTuple type")
        types: dict[str, Any] = ns.get("__annotations__", {})
        defaulted: list[str] = []
        for name in types:
            if name in ns:
                defaulted.append(name)
            elif defaulted:
                raise TypeError(
                    f"Non-default namedtuple field {name} cannot follow default field"
                    f"{'s' if len(defaulted) > 1 else ''} {', '.join(defaulted)}"
                )
        made: Any = _namedtuple(
            typename, list(types), defaults=[ns[n] for n in defaulted], module=ns["__module__"]
        )
        made.__annotations__ = made.__new__.__annotations__ = dict(types)
        for key, value in ns.items():
            if key in _PROHIBITED:
                raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
            if key not in _SPECIAL and key not in made._fields:
                setattr(made, key, value)
        return made


class NamedTuple(metaclass=_Maker):
    """Subclassed as ``typing.NamedTuple`` is; never a base of the classes made."""
