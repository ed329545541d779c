"""Frozen records whose comparison, hash and repr are shared methods instead of methods
``dataclasses`` generates per class.

``dataclass`` compiles each method it generates from source text: for the config's 17
frozen classes (runtime/config.py) the ``__eq__``, ``__hash__`` and ``__repr__`` were about
a third of that module's import, which every daemon start and every ``memctl`` command
that reads the config pays (issue 38: spawn -> first answer).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import reprlib
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from memoryd.field_inits import PLAIN, WITH_FACTORIES
from memoryd.record_inits import TEMPLATES

R = TypeVar("R", bound="Record")
F = TypeVar("F", bound="Fields")
# The generated __init__'s default for a field with a default factory (shown "<factory>").
_FACTORY: Final = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", object())


class Record:
    """For ``@dataclass(frozen=True, eq=False, repr=False)`` classes whose fields are all
    ``__init__`` fields: equal, hashed and shown as the generated methods would."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(self.__dict__.values()) == tuple(other.__dict__.values())

    def __hash__(self) -> int:
        return hash(tuple(self.__dict__.values()))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{self.__class__.__qualname__}({fields})"


class Fields:
    """For mutable ``@dataclass(eq=False, repr=False)`` classes: equal and shown as the
    generated ``__eq__`` and ``__repr__`` would (the fields with ``compare`` and ``repr``),
    unhashable as a dataclass with ``eq`` is. Those two methods compiled ~1.4 M instructions
    a class at import (issue 38); comparing or showing such an object is rare."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = _names(cast(Any, self.__class__), "compare")
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(
            f"{n}={getattr(self, n)!r}" for n in _names(cast(Any, self.__class__), "repr")
        )
        return f"{self.__class__.__qualname__}({shown})"


@functools.cache
def _names(cls: type, kind: str) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if getattr(f, kind))


def frozen_record(**params: Any) -> Callable[[type[R]], type[R]]:
    """``@dataclass(frozen=True, eq=False, repr=False)`` for a ``Record``, without compiling a
    method per class: its fields, ``dataclasses.fields``/``replace`` and
    ``FrozenInstanceError`` as a dataclass has them, shared ``__setattr__`` and
    ``__delattr__``, and an ``__init__`` made from a template (record_inits.py: the
    generated one's signature, defaults and speed) when every field is a plain positional or
    every one keyword-only and none has a default factory; else one shared ``__init__``
    (defaults and default factories as the generated one; ~10x slower per instance: for
    classes made seldom, as the config's sections). A frozen dataclass compiled three
    methods at every start, ~2.3 M instructions (issue 38). Modules write ``dataclass``
    under TYPE_CHECKING (what the type checker knows these classes as) and this at run
    time; tests/runtime/test_records.py holds them against their dataclass twins."""
    kw_only = params.pop("kw_only", False)
    if params != {"frozen": True, "eq": False, "repr": False} or not isinstance(kw_only, bool):
        raise TypeError(
            f"frozen_record takes frozen=True, eq=False, repr=False (and kw_only), not {params}"
        )

    def make(cls: type[R]) -> type[R]:
        if cls.__doc__ is None:  # else dataclass() would make one, "Name()", from
            # inspect.signature of the __init__ it does not write: ~1 M instructions a class
            cls.__doc__ = f"{cls.__qualname__}({', '.join(inspect.get_annotations(cls))})"
        # No method to generate: dataclass() only records the fields (and __match_args__);
        # its __dataclass_params__ say init=False, frozen=False: these three are ours.
        dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only)
        cls.__init__ = _init(cls, "frozen_record")  # type: ignore[method-assign]
        cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign]
        cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign]
        return cls

    return make


def fields_record(**params: Any) -> Callable[[type[F]], type[F]]:
    """``@dataclass(eq=False, repr=False)`` (``slots`` and ``kw_only`` as there) for a
    ``Fields`` class, without compiling its ``__init__``: its fields and ``dataclasses``'
    functions as a dataclass has them, and an ``__init__`` made from a template
    (field_inits.py: the generated one's signature, defaults, default factories and speed)
    when every field is an ``__init__`` field, all positional or all keyword-only, and the
    class has no ``__post_init__``; else one shared ``__init__`` (~10x slower per instance:
    for classes made seldom). The mutable dataclasses made before a daemon's first answer
    compiled ~25 M instructions of ``__init__`` at every start (issue 38). Modules write
    ``dataclass`` under TYPE_CHECKING and this at run time; tests/runtime/test_field_inits.py
    holds them against their dataclass twins."""
    slots = params.pop("slots", False)
    kw_only = params.pop("kw_only", False)
    if params != {"eq": False, "repr": False} or {type(slots), type(kw_only)} != {bool}:
        raise TypeError(f"fields_record takes eq=False, repr=False (slots, kw_only), not {params}")

    def make(cls: type[F]) -> type[F]:
        if cls.__doc__ is None:  # as frozen_record: no inspect.signature of an __init__
            cls.__doc__ = f"{cls.__qualname__}({', '.join(inspect.get_annotations(cls))})"
        made: type[F] = dataclasses.dataclass(
            cls, init=False, repr=False, eq=False, slots=slots, kw_only=kw_only
        )
        if made.__setattr__ is not object.__setattr__:  # the shared __init__ would pass it by
            raise TypeError(f"fields_record: {cls.__qualname__} has its own __setattr__")
        made.__init__ = _init(made, "fields_record", mutable=True)  # type: ignore[method-assign]
        return made

    return make


def _init(cls: type, maker: str, mutable: bool = False) -> Callable[..., None]:
    """A template's ``__init__`` or the shared one; refused where neither would be the one
    ``dataclass`` generates: an ``__init__`` of the class's own (``dataclass`` keeps it), an
    ``InitVar`` (neither takes it), a keyword-only field without a template (the shared one
    takes every field by position, in field order), what ``dataclass`` refuses."""
    if "__init__" in vars(cls):
        raise TypeError(f"{maker}: {cls.__qualname__} has its own __init__")
    fields = vars(cls)["__dataclass_fields__"].values()
    if any(str(getattr(f, "_field_type", "")) == "_FIELD_INITVAR" for f in fields):
        raise TypeError(f"{maker}: {cls.__qualname__} has an InitVar: not made here")
    _defaults_last(cls, dataclasses.fields(cls))
    init = _template_init(cls, mutable)
    if init is None and any(f.kw_only for f in dataclasses.fields(cls)):
        raise TypeError(f"{maker}: no keyword-only __init__ fits {cls.__qualname__}")
    return init or _init_of(cls)


def _template_init(cls: type, mutable: bool = False) -> Callable[..., None] | None:
    """The generated ``__init__``'s twin from a template, or None when none fits."""
    fields = dataclasses.fields(cls)
    names = tuple(f.name for f in fields)
    kw_only = {f.kw_only for f in fields}
    factories = [f.default_factory is not dataclasses.MISSING for f in fields]
    if (
        len(kw_only) != 1
        or any(not f.init for f in fields)
        or hasattr(cls, "__post_init__")
        or "self" in names
    ):
        return None
    keywords = kw_only == {True}
    n = len(fields)
    if not mutable:
        if not 0 < n <= len(TEMPLATES) or any(factories):
            return None
        init = TEMPLATES[n - 1](object.__setattr__, *names)
    elif not any(factories):
        if not 0 < n <= len(PLAIN):
            return None
        init = PLAIN[n - 1]()
    else:
        if not 0 < n <= len(WITH_FACTORIES):
            return None
        makers = tuple(
            cast(Callable[[], Any], f.default_factory) if has else object
            for f, has in zip(fields, factories, strict=True)
        )
        init = WITH_FACTORIES[n - 1](_FACTORY, makers)
    code = init.__code__
    if set(names) & {*code.co_freevars, *code.co_cellvars}:  # never a field's name
        return None
    if mutable:  # the attributes stored: the code's names, a0... in order
        if code.co_names != tuple(f"a{i}" for i in range(n)):
            return None
        code = code.replace(co_names=names)
    defaults = {
        f.name: _FACTORY if has else f.default
        for f, has in zip(fields, factories, strict=True)
        if has or f.default is not dataclasses.MISSING
    }
    init.__code__ = code.replace(
        co_varnames=("self", *names),
        co_argcount=1 if keywords else n + 1,
        co_kwonlyargcount=n if keywords else 0,
        co_name="__init__",
        co_qualname=f"{cls.__qualname__}.__init__",
    )
    if keywords:
        init.__kwdefaults__ = defaults or None
    else:
        init.__defaults__ = tuple(defaults.values()) or None
    init.__annotations__ = {f.name: f.type for f in fields} | {"return": None}
    init.__module__ = cls.__module__
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _defaults_last(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """Refuse what ``dataclass`` refuses when it writes an ``__init__`` (here it does not):
    a positional field without a default after one with."""
    seen_default = False
    for f in fields:
        if not f.init or f.kw_only:
            continue
        has = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if seen_default and not has:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has


def _init_of(cls: type) -> Callable[..., None]:
    """The shared ``__init__``: the generated one's arguments, defaults and errors, then the
    fields without an ``__init__`` parameter (a default factory's value; in a slotted class,
    a default) and ``__post_init__`` (one without parameters), as the generated one."""
    every = dataclasses.fields(cls)
    fields = [f for f in every if f.init]
    slotted = "__slots__" in vars(cls)
    later = [
        (f.name, cast(Any, f.default_factory), f.default)
        for f in every
        if not f.init
        and (
            f.default_factory is not dataclasses.MISSING
            or (slotted and f.default is not dataclasses.MISSING)
        )
    ]
    post = getattr(cls, "__post_init__", None)
    if getattr(post, "__code__", None) is not None and post.__code__.co_argcount > 1:  # type: ignore[union-attr]
        raise TypeError(
            f"{cls.__qualname__}: __post_init__ with parameters (InitVar) is not made here"
        )
    names = [f.name for f in fields]
    known = frozenset(names)
    at = f"{cls.__qualname__}.__init__()"
    needed = sum(
        f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        for f in fields
    )
    takes = (  # worded as Python words it for the generated __init__
        f"{len(fields) + 1}" if needed == len(fields) else f"from {needed + 1} to {len(fields) + 1}"
    )

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(fields):
            raise TypeError(
                f"{at} takes {takes} positional arguments but {len(args) + 1} were given"
            )
        unknown = kwargs.keys() - known
        if unknown:
            raise TypeError(f"{at} got an unexpected keyword argument {min(unknown)!r}")
        for name, value in zip(names, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{at} got multiple values for argument {name!r}")
            object.__setattr__(self, name, value)
        missing = []
        for f in fields[len(args) :]:
            if f.name in kwargs:
                value = kwargs[f.name]
            elif f.default is not dataclasses.MISSING:
                value = f.default
            elif f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
            else:
                missing.append(repr(f.name))
                continue
            object.__setattr__(self, f.name, value)
        if missing:
            listed = (
                missing[0]
                if len(missing) == 1
                else " and ".join(
                    [", ".join(missing[:-1]) + ("," if len(missing) > 2 else ""), missing[-1]]
                )
            )
            s = "" if len(missing) == 1 else "s"
            raise TypeError(
                f"{at} missing {len(missing)} required positional argument{s}: {listed}"
            )
        for name, factory, default in later:
            object.__setattr__(self, name, default if factory is dataclasses.MISSING else factory())
        if post is not None:
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
