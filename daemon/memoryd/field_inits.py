"""``__init__`` templates for ``records.fields_record``: one per number of fields, compiled
with this module (its bytecode is cached), not at each start.

``dataclasses`` writes a mutable class's ``__init__`` as source text and compiles it when the
class is made: ~1-3 M instructions a class (Python's parser), ~20 such classes before a
daemon's first answer (issue 38: spawn -> first answer). ``records.fields_record`` takes the
template with as many parameters as the class has fields and gives its code the fields'
names (``CodeType.replace``, no parsing): as parameters, and as the attributes it stores
(``self.a0 = a0`` is a STORE_ATTR of the code's first name), in field order, as the generated
``__init__`` does, at the same speed per instance. ``_f*`` are for classes with a default
factory: a parameter left at ``__factory`` (the generated one's sentinel) is given the field's
factory's value, as the generated ``__init__`` does, at one identity test more per field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Init = Callable[..., None]
Factories = tuple[Callable[[], Any], ...]  # a field without one: never called


def _m1() -> Init:
    def __init__(self: Any, a0: Any) -> None:
        self.a0 = a0

    return __init__


def _m2() -> Init:
    def __init__(self: Any, a0: Any, a1: Any) -> None:
        self.a0 = a0
        self.a1 = a1

    return __init__


def _m3() -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2

    return __init__


def _m4() -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any, a3: Any) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3

    return __init__


def _m5() -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4

    return __init__


def _m6() -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5

    return __init__


def _m7() -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any, a6: Any) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6

    return __init__


def _m8() -> Init:
    def __init__(
        self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any, a6: Any, a7: Any
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7

    return __init__


def _m9() -> Init:
    def __init__(
        self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any, a6: Any, a7: Any, a8: Any
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8

    return __init__


def _m10() -> Init:
    def __init__(
        self: Any,
        a0: Any,
        a1: Any,
        a2: Any,
        a3: Any,
        a4: Any,
        a5: Any,
        a6: Any,
        a7: Any,
        a8: Any,
        a9: Any,
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8
        self.a9 = a9

    return __init__


def _m11() -> Init:
    def __init__(
        self: Any,
        a0: Any,
        a1: Any,
        a2: Any,
        a3: Any,
        a4: Any,
        a5: Any,
        a6: Any,
        a7: Any,
        a8: Any,
        a9: Any,
        a10: Any,
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8
        self.a9 = a9
        self.a10 = a10

    return __init__


def _m12() -> Init:
    def __init__(
        self: Any,
        a0: Any,
        a1: Any,
        a2: Any,
        a3: Any,
        a4: Any,
        a5: Any,
        a6: Any,
        a7: Any,
        a8: Any,
        a9: Any,
        a10: Any,
        a11: Any,
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8
        self.a9 = a9
        self.a10 = a10
        self.a11 = a11

    return __init__


def _m13() -> Init:
    def __init__(
        self: Any,
        a0: Any,
        a1: Any,
        a2: Any,
        a3: Any,
        a4: Any,
        a5: Any,
        a6: Any,
        a7: Any,
        a8: Any,
        a9: Any,
        a10: Any,
        a11: Any,
        a12: Any,
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8
        self.a9 = a9
        self.a10 = a10
        self.a11 = a11
        self.a12 = a12

    return __init__


def _m14() -> Init:
    def __init__(
        self: Any,
        a0: Any,
        a1: Any,
        a2: Any,
        a3: Any,
        a4: Any,
        a5: Any,
        a6: Any,
        a7: Any,
        a8: Any,
        a9: Any,
        a10: Any,
        a11: Any,
        a12: Any,
        a13: Any,
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8
        self.a9 = a9
        self.a10 = a10
        self.a11 = a11
        self.a12 = a12
        self.a13 = a13

    return __init__


def _m15() -> Init:
    def __init__(
        self: Any,
        a0: Any,
        a1: Any,
        a2: Any,
        a3: Any,
        a4: Any,
        a5: Any,
        a6: Any,
        a7: Any,
        a8: Any,
        a9: Any,
        a10: Any,
        a11: Any,
        a12: Any,
        a13: Any,
        a14: Any,
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8
        self.a9 = a9
        self.a10 = a10
        self.a11 = a11
        self.a12 = a12
        self.a13 = a13
        self.a14 = a14

    return __init__


def _m16() -> Init:
    def __init__(
        self: Any,
        a0: Any,
        a1: Any,
        a2: Any,
        a3: Any,
        a4: Any,
        a5: Any,
        a6: Any,
        a7: Any,
        a8: Any,
        a9: Any,
        a10: Any,
        a11: Any,
        a12: Any,
        a13: Any,
        a14: Any,
        a15: Any,
    ) -> None:
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8
        self.a9 = a9
        self.a10 = a10
        self.a11 = a11
        self.a12 = a12
        self.a13 = a13
        self.a14 = a14
        self.a15 = a15

    return __init__


def _f1(__factory: object, __f: Factories) -> Init:
    def __init__(self: Any, a0: Any) -> None:
        self.a0 = a0 if a0 is not __factory else __f[0]()

    return __init__


def _f2(__factory: object, __f: Factories) -> Init:
    def __init__(self: Any, a0: Any, a1: Any) -> None:
        self.a0 = a0 if a0 is not __factory else __f[0]()
        self.a1 = a1 if a1 is not __factory else __f[1]()

    return __init__


def _f3(__factory: object, __f: Factories) -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any) -> None:
        self.a0 = a0 if a0 is not __factory else __f[0]()
        self.a1 = a1 if a1 is not __factory else __f[1]()
        self.a2 = a2 if a2 is not __factory else __f[2]()

    return __init__


def _f4(__factory: object, __f: Factories) -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any, a3: Any) -> None:
        self.a0 = a0 if a0 is not __factory else __f[0]()
        self.a1 = a1 if a1 is not __factory else __f[1]()
        self.a2 = a2 if a2 is not __factory else __f[2]()
        self.a3 = a3 if a3 is not __factory else __f[3]()

    return __init__


def _f5(__factory: object, __f: Factories) -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any) -> None:
        self.a0 = a0 if a0 is not __factory else __f[0]()
        self.a1 = a1 if a1 is not __factory else __f[1]()
        self.a2 = a2 if a2 is not __factory else __f[2]()
        self.a3 = a3 if a3 is not __factory else __f[3]()
        self.a4 = a4 if a4 is not __factory else __f[4]()

    return __init__


def _f6(__factory: object, __f: Factories) -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any) -> None:
        self.a0 = a0 if a0 is not __factory else __f[0]()
        self.a1 = a1 if a1 is not __factory else __f[1]()
        self.a2 = a2 if a2 is not __factory else __f[2]()
        self.a3 = a3 if a3 is not __factory else __f[3]()
        self.a4 = a4 if a4 is not __factory else __f[4]()
        self.a5 = a5 if a5 is not __factory else __f[5]()

    return __init__


def _f7(__factory: object, __f: Factories) -> Init:
    def __init__(self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any, a6: Any) -> None:
        self.a0 = a0 if a0 is not __factory else __f[0]()
        self.a1 = a1 if a1 is not __factory else __f[1]()
        self.a2 = a2 if a2 is not __factory else __f[2]()
        self.a3 = a3 if a3 is not __factory else __f[3]()
        self.a4 = a4 if a4 is not __factory else __f[4]()
        self.a5 = a5 if a5 is not __factory else __f[5]()
        self.a6 = a6 if a6 is not __factory else __f[6]()

    return __init__


def _f8(__factory: object, __f: Factories) -> Init:
    def __init__(
        self: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any, a6: Any, a7: Any
    ) -> None:
        self.a0 = a0 if a0 is not __factory else __f[0]()
        self.a1 = a1 if a1 is not __factory else __f[1]()
        self.a2 = a2 if a2 is not __factory else __f[2]()
        self.a3 = a3 if a3 is not __factory else __f[3]()
        self.a4 = a4 if a4 is not __factory else __f[4]()
        self.a5 = a5 if a5 is not __factory else __f[5]()
        self.a6 = a6 if a6 is not __factory else __f[6]()
        self.a7 = a7 if a7 is not __factory else __f[7]()

    return __init__


PLAIN: tuple[Callable[[], Init], ...] = (
    _m1,
    _m2,
    _m3,
    _m4,
    _m5,
    _m6,
    _m7,
    _m8,
    _m9,
    _m10,
    _m11,
    _m12,
    _m13,
    _m14,
    _m15,
    _m16,
)
WITH_FACTORIES: tuple[Callable[[object, Factories], Init], ...] = (
    _f1,
    _f2,
    _f3,
    _f4,
    _f5,
    _f6,
    _f7,
    _f8,
)
