"""memoryd.named_tuple.NamedTuple: the class typing.NamedTuple makes, annotations kept as
written (no ForwardRef compiled a field: issue 38, spawn -> first answer)."""

from __future__ import annotations

import collections
import importlib
import inspect
import typing

import pytest

from memoryd import named_tuple


def _pair() -> tuple[type, type]:
    made = []
    for base in (named_tuple.NamedTuple, typing.NamedTuple):

        class Point(base):  # type: ignore[misc, valid-type]
            """A point, and what it says."""

            x: int
            y: tuple[str, ...] | None = None
            label: str = "p"

            def twice(self) -> int:
                return int(self.x) * 2

            @property
            def shown(self) -> str:
                return f"{self.label}{self.x}"

            @classmethod
            def at(cls, x: int) -> Point:
                return cls(x)

            @staticmethod
            def unit() -> int:
                return 1

        made.append(Point)
    return made[0], made[1]


def test_the_class_is_the_one_typing_makes() -> None:
    mine, theirs = _pair()
    assert mine.__mro__[1:] == theirs.__mro__[1:] == (tuple, object)
    for attr in ("_fields", "_field_defaults", "__doc__", "__qualname__", "__module__"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
    assert set(vars(mine)) == set(vars(theirs)) - {"__orig_bases__"}
    assert typing.get_type_hints(mine) == typing.get_type_hints(theirs)
    assert all(isinstance(a, str) for a in mine.__annotations__.values())
    a, b = mine(1, ("a",)), theirs(1, ("a",))
    assert a == b and repr(a) == repr(b) and hash(a) == hash(b)
    assert (a.twice(), a.shown, mine.at(2), mine.unit()) == (2, "p1", (2, None, "p"), 1)
    assert a._replace(x=5) == (5, ("a",), "p") and a._asdict() == b._asdict()
    errors = []
    for cls in (mine, theirs):
        with pytest.raises(TypeError) as raised:
            cls()
        errors.append(str(raised.value))
    assert errors[0] == errors[1]


def test_the_same_errors_for_a_body_typing_refuses() -> None:
    for base in (named_tuple.NamedTuple, typing.NamedTuple):
        with pytest.raises(
            TypeError, match="Non-default namedtuple field b cannot follow default field a"
        ):

            class Order(base):  # type: ignore[misc, valid-type]
                a: int = 0
                b: int

        with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _asdict"):

            class Redefines(base):  # type: ignore[misc, valid-type]
                a: int

                def _asdict(self) -> dict[str, int]:
                    return {}


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("memoryd.index.types", "SearchHit"),
        ("memoryd.index.search.fusion", "SearchEnv"),
        ("memoryd.index.search.rows", "Row"),
        ("memoryd.index.search.snippets", "ChunkLines"),
        ("memoryd.index.search.candidates", "Filters"),
        ("memoryd.index.keyword.bm25", "Term"),
        ("memoryd.index.vectors.window_sims", "Windows"),
        ("memoryd.index.query_vectors", "PreparedQuery"),
        ("memoryd.index.embedder", "Failure"),
        ("memoryd.rpc.memory_methods", "Search"),
    ],
)
def test_the_engine_s_named_tuples_are_made_here(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(module), name)
    assert cls.__annotations__ and all(isinstance(a, str) for a in cls.__annotations__.values())
    assert tuple(cls.__annotations__) == cls._fields
    assert "__orig_bases__" not in vars(cls)  # typing.NamedTuple would have set it


def test_line_meta_and_summary_compare_hash_and_show_as_the_dataclasses_they_were() -> None:
    import dataclasses

    from memoryd.index.line_meta import LineMeta, Summary

    for cls, values in (
        (LineMeta, [(), (3, ("a", "b"), "p", "k", "agent", "s1", "claude")]),
        (Summary, [(None, (), None, None, "owner", None), (2, ("t",), "p", "k", "agent", "s")]),
    ):
        twin = dataclasses.make_dataclass(
            cls.__name__,
            [
                (f, typing.Any, dataclasses.field(default=cls._field_defaults[f]))
                if f in cls._field_defaults
                else (f, typing.Any)
                for f in cls._fields
            ],
            frozen=True,
            slots=True,
        )
        made = [cls(*v) for v in values]
        twins = [twin(*v) for v in values]
        for a, ta in zip(made, twins, strict=True):
            assert repr(a) == repr(ta) and hash(a) == hash(ta)
            for b, tb in zip(made, twins, strict=True):
                assert (a == b) is (ta == tb) and (a != b) is (ta != tb)
        with pytest.raises(AttributeError):
            made[0].origin = "x"  # type: ignore[misc]


def _new_error(cls: type, *args: object, **kwargs: object) -> str:
    with pytest.raises(TypeError) as raised:
        cls(*args, **kwargs)
    return str(raised.value)


@pytest.mark.parametrize("n", range(1, len(named_tuple._NEW) + 2))
def test_new_from_a_template_is_the_one_namedtuple_evaluates(n: int) -> None:
    # one more field than there are templates: namedtuple's own eval
    names = [f"f{i}" for i in range(n)]
    defaults = list(range(n // 2))
    ours = named_tuple._namedtuple("T", names, defaults=defaults, module=__name__)
    theirs = collections.namedtuple("T", names, defaults=defaults, module=__name__)
    templated = ours.__new__.__code__.co_filename == named_tuple.__file__
    assert templated is (n <= len(named_tuple._NEW))
    assert inspect.signature(ours) == inspect.signature(theirs)
    for attr in ("__name__", "__qualname__", "__doc__", "__defaults__"):
        assert getattr(ours.__new__, attr) == getattr(theirs.__new__, attr), attr
    values = list(range(100, 100 + n))
    assert tuple(ours(*values)) == tuple(theirs(*values)) == tuple(values)
    assert repr(ours(*values)) == repr(theirs(*values))
    assert tuple(ours(**dict(zip(names, values, strict=True)))) == tuple(values)
    if n > len(defaults):
        assert _new_error(ours) == _new_error(theirs)
    assert _new_error(ours, *values, 0) == _new_error(theirs, *values, 0)
    assert _new_error(ours, nope=1) == _new_error(theirs, nope=1)


def test_any_other_source_is_evaluated_as_namedtuple_would() -> None:
    assert named_tuple._eval("1 + 1", {}) == 2
    odd = named_tuple._namedtuple("Odd", ["a", "def", "a"], rename=True)
    assert odd._fields == ("a", "_1", "_2") and tuple(odd(1, 2, 3)) == (1, 2, 3)


def test_the_standard_library_gets_it_only_meanwhile() -> None:
    original = collections.namedtuple
    with named_tuple.for_the_standard_library():
        assert collections.namedtuple is named_tuple._namedtuple
        made = collections.namedtuple("Pair", "a b", defaults=[2])
    assert collections.namedtuple is original
    assert made.__new__.__code__.co_filename == named_tuple.__file__
    assert tuple(made(1)) == (1, 2) and repr(made(1, 3)) == "Pair(a=1, b=3)"
    with pytest.raises(RuntimeError), named_tuple.for_the_standard_library():
        raise RuntimeError
    assert collections.namedtuple is original
