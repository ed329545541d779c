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

import builtins
import collections
import contextlib
import types
from collections.abc import Iterator
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
_tuple_new = tuple.__new__  # the name the templates look up, in namedtuple's own namespace
# ``collections.namedtuple`` evaluates its ``__new__`` from source (~0.28 M instructions a
# class, ~17 before a daemon's first answer: issue 38); ``_namedtuple`` is that function
# with ``_eval`` for ``eval``: the same ``__new__`` from these, its parameters renamed.
_NEW: tuple[Any, ...] = (
    lambda _cls, a0: _tuple_new(_cls, (a0,)),
    lambda _cls, a0, a1: _tuple_new(_cls, (a0, a1)),
    lambda _cls, a0, a1, a2: _tuple_new(_cls, (a0, a1, a2)),
    lambda _cls, a0, a1, a2, a3: _tuple_new(_cls, (a0, a1, a2, a3)),
    lambda _cls, a0, a1, a2, a3, a4: _tuple_new(_cls, (a0, a1, a2, a3, a4)),
    lambda _cls, a0, a1, a2, a3, a4, a5: _tuple_new(_cls, (a0, a1, a2, a3, a4, a5)),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6: _tuple_new(_cls, (a0, a1, a2, a3, a4, a5, a6)),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7: _tuple_new(_cls, (a0, a1, a2, a3, a4, a5, a6, a7)),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7, a8: _tuple_new(
        _cls, (a0, a1, a2, a3, a4, a5, a6, a7, a8)
    ),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9: _tuple_new(
        _cls, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9)
    ),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10: _tuple_new(
        _cls, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10)
    ),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11: _tuple_new(
        _cls, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11)
    ),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12: _tuple_new(
        _cls, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12)
    ),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13: _tuple_new(
        _cls, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13)
    ),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14: _tuple_new(
        _cls, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14)
    ),
    lambda _cls, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15: _tuple_new(
        _cls, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15)
    ),
)


def _eval(source: str, namespace: dict[str, Any]) -> Any:
    """namedtuple's ``eval(code, namespace)`` of its ``__new__``: from a template when the
    source is the one this Python's namedtuple writes for these names, else ``eval``."""
    head, sep, _ = source.partition(": _tuple_new(_cls, (")
    names = head.removeprefix("lambda _cls, ").rstrip(",").split(", ")
    arg_list = ", ".join(names) + ("," if len(names) == 1 else "")
    if (
        sep
        and source == f"lambda _cls, {arg_list}: _tuple_new(_cls, ({arg_list}))"
        and 0 < len(names) <= len(_NEW)
        and "_tuple_new" in namespace
        and "_cls" not in names
    ):
        code = _NEW[len(names) - 1].__code__
        return types.FunctionType(code.replace(co_varnames=("_cls", *names)), namespace)
    return builtins.eval(source, namespace)


_namedtuple: Any = types.FunctionType(  # called with names known at run time only
    collections.namedtuple.__code__,
    vars(collections) | {"eval": _eval},
    "namedtuple",
    collections.namedtuple.__defaults__,
    collections.namedtuple.__closure__,
)
_namedtuple.__kwdefaults__ = collections.namedtuple.__kwdefaults__


@contextlib.contextmanager
def for_the_standard_library() -> Iterator[None]:
    """``collections.namedtuple`` is ``_namedtuple`` meanwhile: the standard library's
    modules a daemon's start imports (inspect, dis, urllib.parse, selectors,
    concurrent.futures) make ~19 named tuples, ~5 M instructions of ``eval`` before a spawned
    daemon's first answer; the same classes, their ``__new__`` from a template. For one
    thread, before any other starts (cli.py); put back after."""
    original = collections.namedtuple
    collections.namedtuple = _namedtuple
    try:
        yield
    finally:
        collections.namedtuple = original


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
