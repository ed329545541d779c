"""Frozen records whose comparison, hash and repr are shared methods instead of methods
``dataclasses`` generates per class.

``dataclass`` compiles each method it generates from source text: for the config's 17
frozen classes (runtime/config.py) the ``__eq__``, ``__hash__`` and ``__repr__`` were about
a third of that module's import, which every daemon start and every ``memctl`` command
that reads the config pays (issue 38: spawn -> first answer).
"""

from __future__ import annotations

import reprlib


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
