"""records.fields_record's ``__init__`` (field_inits.py's templates, else the shared one): the
signature, defaults, default factories, annotations, stored values, field order and error
messages of the ``__init__`` ``dataclasses`` generates for the same mutable class, for every
number of fields a template exists for, positional or keyword-only, slotted or not."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from memoryd import field_inits, records
from memoryd.records import Fields


def _spec(n: int, defaults: int, factories: int, kw_only: bool) -> list[tuple[str, str, Any]]:
    """``n`` fields: the last ``defaults`` with a default, of which the first ``factories``
    with a default factory instead."""
    spec = []
    for i in range(n):
        if i < n - defaults:
            made = dataclasses.field(kw_only=kw_only)
        elif i < n - defaults + factories:
            made = dataclasses.field(default_factory=lambda i=i: [i], kw_only=kw_only)
        else:
            made = dataclasses.field(default=i * 10, kw_only=kw_only)
        spec.append((f"f{i}", "int", made))
    return spec


def _pair(
    spec: list[tuple[str, str, Any]], kw_only: bool, slots: bool = False
) -> tuple[type[Any], type[Any]]:
    """A fields_record of ``spec`` and its dataclass twin."""
    namespace: dict[str, Any] = {"__annotations__": {f: t for f, t, _ in spec}, "__doc__": "R"}
    namespace.update((f, d) for f, _, d in spec)
    ours = records.fields_record(eq=False, repr=False, kw_only=kw_only, slots=slots)(
        type("R", (Fields,), namespace)
    )
    twin = dataclasses.make_dataclass("R", spec, slots=slots)
    return ours, twin


def _error(make: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(TypeError) as raised:
        make(*args, **kwargs)
    return str(raised.value).replace("__create_fn__.<locals>.", "")


def _state(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


def _same(ours: type[Any], twin: type[Any], n: int, defaults: int, kw_only: bool) -> None:
    assert inspect.signature(ours) == inspect.signature(twin)
    assert ours.__init__.__annotations__ == twin.__init__.__annotations__
    assert ours.__init__.__qualname__ == "R.__init__" and ours.__init__.__name__ == "__init__"
    values = {f"f{i}": 100 + i for i in range(n)}
    by_name = ours(**values)
    assert _state(by_name) == _state(twin(**values))
    needed = {k: v for k, v in values.items() if int(k[1:]) < n - defaults}
    made, made_twin = ours(**needed), twin(**needed)
    assert _state(made) == _state(made_twin)
    for f in dataclasses.fields(made):  # each instance its own factory's value
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(made, f.name) is not getattr(ours(**needed), f.name)
    if not kw_only:
        assert _state(ours(*values.values())) == _state(by_name)
        assert _error(ours, *values.values(), 0) == _error(twin, *values.values(), 0)
        assert _error(ours, 1, f0=1) == _error(twin, 1, f0=1)
    else:
        assert _error(ours, 1) == _error(twin, 1)
    assert _error(ours, nope=1, **values) == _error(twin, nope=1, **values)
    if defaults < n:
        assert _error(ours) == _error(twin)
    by_name.f0 = 7  # mutable, as the twin
    assert by_name.f0 == 7


@pytest.mark.parametrize("kw_only", [False, True])
@pytest.mark.parametrize("n", range(1, len(field_inits.PLAIN) + 1))
def test_a_plain_template_init_is_the_generated_one(n: int, kw_only: bool) -> None:
    for defaults in sorted({0, 1, n // 2, n}):
        ours, twin = _pair(_spec(n, defaults, 0, kw_only), kw_only)
        assert ours.__init__.__code__.co_filename == field_inits.__file__
        _same(ours, twin, n, defaults, kw_only)


@pytest.mark.parametrize("kw_only", [False, True])
@pytest.mark.parametrize("n", range(1, len(field_inits.WITH_FACTORIES) + 1))
def test_a_template_init_with_default_factories_is_the_generated_one(n: int, kw_only: bool) -> None:
    for defaults in sorted({1, n // 2 or 1, n}):
        for factories in sorted({1, defaults}):
            ours, twin = _pair(_spec(n, defaults, factories, kw_only), kw_only)
            assert ours.__init__.__code__.co_filename == field_inits.__file__
            _same(ours, twin, n, defaults, kw_only)


def test_a_slotted_class_gets_a_template_init_and_its_slots() -> None:
    ours, twin = _pair(_spec(5, 2, 1, False), False, slots=True)
    assert ours.__init__.__code__.co_filename == field_inits.__file__
    assert ours.__slots__ == twin.__slots__ == ("f0", "f1", "f2", "f3", "f4")
    _same(ours, twin, 5, 2, False)
    with pytest.raises(AttributeError):
        ours(1, 2, 3).other = 1


def test_more_fields_than_templates_get_the_shared_init_as_generated() -> None:
    n = len(field_inits.WITH_FACTORIES) + 2
    ours, twin = _pair(_spec(n, 4, 2, False), False)
    assert ours.__init__.__code__.co_filename == records.__file__
    values = {f"f{i}": i for i in range(n)}
    assert _state(ours(**values)) == _state(twin(**values))
    needed = dict(list(values.items())[: n - 4])
    assert _state(ours(**needed)) == _state(twin(**needed))
    assert _error(ours) == _error(twin)


def test_post_init_and_fields_without_a_parameter_as_generated() -> None:
    calls: list[str] = []

    @records.fields_record(eq=False, repr=False)
    class Ours(Fields):
        a: int
        b: list[int] = dataclasses.field(default_factory=list)
        later: dict[str, int] = dataclasses.field(init=False, default_factory=dict)
        flag: bool = dataclasses.field(init=False, default=False)

        def __post_init__(self) -> None:
            calls.append(f"{self.a} {self.later}")

    made = Ours(1)
    assert (made.a, made.b, made.later, made.flag) == (1, [], {}, False)
    assert calls == ["1 {}"] and made.later is not Ours(2).later
    assert "later" not in inspect.signature(Ours).parameters
    with pytest.raises(TypeError, match="no keyword-only __init__ fits"):

        @records.fields_record(eq=False, repr=False, kw_only=True)
        class Keyed(Fields):
            a: int
            later: int = dataclasses.field(init=False, default=0)


def test_refused_as_dataclass_refuses_or_where_the_shared_init_would_differ() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @records.fields_record(eq=False, repr=False)
        class Misordered(Fields):
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(TypeError, match="own __setattr__"):

        @records.fields_record(eq=False, repr=False)
        class Guarded(Fields):
            a: int

            def __setattr__(self, name: str, value: Any) -> None:
                object.__setattr__(self, name, value)

    with pytest.raises(TypeError, match="fields_record takes"):
        records.fields_record(eq=True, repr=False)


def test_the_daemon_s_fields_classes_are_fields_records() -> None:
    import memoryd.app
    import memoryd.index.workspace  # noqa: F401

    def every(cls: type) -> list[type]:
        return [c for s in cls.__subclasses__() for c in (s, *every(s))]

    made = [c for c in every(Fields) if c.__module__.startswith("memoryd.")]
    assert len(made) >= 17
    shared = set()
    for cls in made:
        where = cls.__init__.__code__.co_filename
        assert where in (field_inits.__file__, records.__file__), cls
        if where == records.__file__:
            shared.add(cls.__qualname__)
    # made once a workspace, a watch batch or a copy's growth: the shared __init__ will do
    assert shared <= {"Workspace", "Syncer", "_Batch", "Docs"}


def test_refused_where_neither_init_would_be_the_generated_one() -> None:
    """A keyword-only field among positional ones (the shared __init__ would take it by
    position, in field order: ``Mixed(1)`` setting ``a``, the generated one ``b``), an
    InitVar (no parameter for it) or an __init__ of the class's own (the generated one
    leaves it be): refused, for both kinds of record, not made to differ."""
    for make in (
        records.fields_record(eq=False, repr=False),
        records.frozen_record(frozen=True, eq=False, repr=False),
    ):
        base = Fields if make.__qualname__.startswith("fields_record") else records.Record
        with pytest.raises(TypeError, match="no keyword-only __init__ fits"):
            make(
                type(
                    "Mixed",
                    (base,),
                    {
                        "__annotations__": {"a": "int", "b": "int"},
                        "a": dataclasses.field(kw_only=True),
                        "b": 0,
                    },
                )
            )
        with pytest.raises(TypeError, match="no keyword-only __init__ fits"):
            make(
                type(
                    "Marked",
                    (base,),
                    {"__annotations__": {"a": "int", "_": dataclasses.KW_ONLY, "b": "int"}, "b": 0},
                )
            )
        with pytest.raises(TypeError, match="InitVar"):
            make(
                type(
                    "Passed",
                    (base,),
                    {"__annotations__": {"a": "int", "x": dataclasses.InitVar[int]}, "x": 0},
                )
            )

        with pytest.raises(TypeError, match="non-default argument 'b' follows default"):
            make(
                type(
                    "Misordered",
                    (base,),
                    {
                        "__annotations__": {"a": "int", "b": "int"},
                        "a": 0,
                        "__post_init__": lambda self: None,
                    },
                )
            )  # the shared __init__'s too

        def __init__(self: Any) -> None:
            object.__setattr__(self, "a", 1)

        with pytest.raises(TypeError, match="own __init__"):
            make(type("Own", (base,), {"__annotations__": {"a": "int"}, "__init__": __init__}))
