"""``__init__`` templates for ``records.frozen_record``: one per number of fields, compiled
with this module (its bytecode is cached), not at each start.

``dataclasses`` writes each class's ``__init__`` as source text and compiles it when the class
is made: ~1 M instructions an ``__init__`` (Python's parser), and another ~0.65 M each for a
frozen class's ``__setattr__`` and ``__delattr__``; ~2.3 M a record, ~40 such classes before a
daemon's first answer (issue 38: spawn -> first answer). ``init_of`` takes the template with
as many parameters as the class has fields and gives its code the fields' names as the
parameters' (``CodeType.replace``: no parsing); each stores its value with
``object.__setattr__``, in field order, as the generated ``__init__`` of a frozen dataclass
does, at the same speed per instance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Init = Callable[..., None]
_Set = Callable[[object, str, object], None]


def _t1(__set: _Set, __n0: str) -> Init:
    def __init__(self: object, a0: Any) -> None:
        __set(self, __n0, a0)

    return __init__


def _t2(__set: _Set, __n0: str, __n1: str) -> Init:
    def __init__(self: object, a0: Any, a1: Any) -> None:
        __set(self, __n0, a0)
        __set(self, __n1, a1)

    return __init__


def _t3(__set: _Set, __n0: str, __n1: str, __n2: str) -> Init:
    def __init__(self: object, a0: Any, a1: Any, a2: Any) -> None:
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)

    return __init__


def _t4(__set: _Set, __n0: str, __n1: str, __n2: str, __n3: str) -> Init:
    def __init__(self: object, a0: Any, a1: Any, a2: Any, a3: Any) -> None:
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)

    return __init__


def _t5(__set: _Set, __n0: str, __n1: str, __n2: str, __n3: str, __n4: str) -> Init:
    def __init__(self: object, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any) -> None:
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)

    return __init__


def _t6(__set: _Set, __n0: str, __n1: str, __n2: str, __n3: str, __n4: str, __n5: str) -> Init:
    def __init__(self: object, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any) -> None:
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)

    return __init__


def _t7(
    __set: _Set, __n0: str, __n1: str, __n2: str, __n3: str, __n4: str, __n5: str, __n6: str
) -> Init:
    def __init__(
        self: object, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any, a6: Any
    ) -> None:
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)

    return __init__


def _t8(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
) -> Init:
    def __init__(
        self: object, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, a5: Any, a6: Any, a7: Any
    ) -> None:
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)

    return __init__


def _t9(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
    __n8: str,
) -> Init:
    def __init__(
        self: object,
        a0: Any,
        a1: Any,
        a2: Any,
        a3: Any,
        a4: Any,
        a5: Any,
        a6: Any,
        a7: Any,
        a8: Any,
    ) -> None:
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)
        __set(self, __n8, a8)

    return __init__


def _t10(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
    __n8: str,
    __n9: str,
) -> Init:
    def __init__(
        self: object,
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
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)
        __set(self, __n8, a8)
        __set(self, __n9, a9)

    return __init__


def _t11(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
    __n8: str,
    __n9: str,
    __n10: str,
) -> Init:
    def __init__(
        self: object,
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
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)
        __set(self, __n8, a8)
        __set(self, __n9, a9)
        __set(self, __n10, a10)

    return __init__


def _t12(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
    __n8: str,
    __n9: str,
    __n10: str,
    __n11: str,
) -> Init:
    def __init__(
        self: object,
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
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)
        __set(self, __n8, a8)
        __set(self, __n9, a9)
        __set(self, __n10, a10)
        __set(self, __n11, a11)

    return __init__


def _t13(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
    __n8: str,
    __n9: str,
    __n10: str,
    __n11: str,
    __n12: str,
) -> Init:
    def __init__(
        self: object,
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
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)
        __set(self, __n8, a8)
        __set(self, __n9, a9)
        __set(self, __n10, a10)
        __set(self, __n11, a11)
        __set(self, __n12, a12)

    return __init__


def _t14(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
    __n8: str,
    __n9: str,
    __n10: str,
    __n11: str,
    __n12: str,
    __n13: str,
) -> Init:
    def __init__(
        self: object,
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
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)
        __set(self, __n8, a8)
        __set(self, __n9, a9)
        __set(self, __n10, a10)
        __set(self, __n11, a11)
        __set(self, __n12, a12)
        __set(self, __n13, a13)

    return __init__


def _t15(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
    __n8: str,
    __n9: str,
    __n10: str,
    __n11: str,
    __n12: str,
    __n13: str,
    __n14: str,
) -> Init:
    def __init__(
        self: object,
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
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)
        __set(self, __n8, a8)
        __set(self, __n9, a9)
        __set(self, __n10, a10)
        __set(self, __n11, a11)
        __set(self, __n12, a12)
        __set(self, __n13, a13)
        __set(self, __n14, a14)

    return __init__


def _t16(
    __set: _Set,
    __n0: str,
    __n1: str,
    __n2: str,
    __n3: str,
    __n4: str,
    __n5: str,
    __n6: str,
    __n7: str,
    __n8: str,
    __n9: str,
    __n10: str,
    __n11: str,
    __n12: str,
    __n13: str,
    __n14: str,
    __n15: str,
) -> Init:
    def __init__(
        self: object,
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
        __set(self, __n0, a0)
        __set(self, __n1, a1)
        __set(self, __n2, a2)
        __set(self, __n3, a3)
        __set(self, __n4, a4)
        __set(self, __n5, a5)
        __set(self, __n6, a6)
        __set(self, __n7, a7)
        __set(self, __n8, a8)
        __set(self, __n9, a9)
        __set(self, __n10, a10)
        __set(self, __n11, a11)
        __set(self, __n12, a12)
        __set(self, __n13, a13)
        __set(self, __n14, a14)
        __set(self, __n15, a15)

    return __init__


TEMPLATES: tuple[Callable[..., Init], ...] = (
    _t1,
    _t2,
    _t3,
    _t4,
    _t5,
    _t6,
    _t7,
    _t8,
    _t9,
    _t10,
    _t11,
    _t12,
    _t13,
    _t14,
    _t15,
    _t16,
)
