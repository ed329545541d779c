"""records.Record: the config classes compare, hash and show as the methods
``dataclasses`` would generate for them (a frozen dataclass with eq and repr)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

import pytest

from memoryd import records
from memoryd.records import Record
from memoryd.runtime import config as config_module
from memoryd.runtime.config import JOB_SECTIONS, SECTIONS, Config, WorkspaceConfig, load_config


@dataclass(frozen=True, eq=False, repr=False)
class Point(Record):
    x: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class GeneratedPoint:  # the same fields, the methods dataclasses generates
    x: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)


def _generated(obj: Any) -> Any:
    """The twin of ``obj`` whose class has dataclasses' own eq, hash and repr."""
    twin = dataclasses.make_dataclass(
        type(obj).__qualname__,
        [(f.name, Any) for f in dataclasses.fields(obj)],
        frozen=True,
    )
    return twin(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})


@pytest.mark.parametrize(
    "a, b", [((1, ("a",)), (1, ("a",))), ((1, ()), (2, ())), ((1, ("a",)), (1, ("b",)))]
)
def test_equal_hashed_and_shown_as_a_generated_dataclass(
    a: tuple[int, tuple[str, ...]], b: tuple[int, tuple[str, ...]]
) -> None:
    p, q = Point(*a), Point(*b)
    gp, gq = GeneratedPoint(*a), GeneratedPoint(*b)
    assert (p == q) is (gp == gq)
    assert (p != q) is (gp != gq)
    assert hash(p) == hash(gp)
    assert repr(p) == repr(gp).replace("GeneratedPoint", "Point")


def test_another_class_is_never_equal() -> None:
    @dataclass(frozen=True, eq=False, repr=False)
    class Other(Record):
        x: int = 0
        tags: tuple[str, ...] = ()

    assert Point() != Other()
    assert Point().__eq__(Other()) is NotImplemented
    with pytest.raises(dataclasses.FrozenInstanceError):
        Point().x = 1  # type: ignore[misc]


def test_every_config_section_compares_hashes_and_shows_as_before(tmp_path: Any) -> None:
    toml = tmp_path / "config.toml"
    toml.write_text(
        '[search]\nmax_results = 9\n[[workspaces]]\npath = "/w"\nname = "w"\n'
        "[jobs.retention]\nenabled = false\n"
    )
    loaded = load_config(toml, {})
    for config in (Config(), loaded):
        sections = [getattr(config, f.name) for f in dataclasses.fields(config)]
        for section in [
            config,
            *sections,
            *config.workspaces,
            *(getattr(config.jobs, f.name) for f in dataclasses.fields(config.jobs)),
        ]:
            if not dataclasses.is_dataclass(section):
                continue
            twin = _generated(section)
            assert repr(section) == repr(twin)
            assert hash(section) == hash(twin)
            assert section == dataclasses.replace(section)
    assert loaded != Config()
    assert loaded.search != Config().search and loaded.index == Config().index
    assert loaded.workspaces == (WorkspaceConfig(path="/w", name="w"),)
    assert {*SECTIONS.values(), *JOB_SECTIONS.values()} <= {cls for cls in Record.__subclasses__()}


def _every_record() -> set[type[Record]]:
    # The daemon's modules: their records subclass Record once imported.
    import memoryd.app
    import memoryd.embeddings.factory
    import memoryd.index.workspace  # the engine's (a start imports it before its first answer)
    import memoryd.lifecycle.journal
    import memoryd.runtime.usage
    import memoryd.workspace.search_service  # noqa: F401

    found: set[type[Record]] = set()
    todo = list(Record.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.add(cls)
            todo += cls.__subclasses__()
    return found


def test_every_record_of_the_daemon_is_one_whose_shared_methods_match_the_generated() -> None:
    # Record reads the instance's __dict__: right for a frozen dataclass whose fields are all
    # set by __init__, in order, and nothing else is ever stored on it.
    found = {cls for cls in _every_record() if cls.__module__.startswith("memoryd.")}
    assert len(found) > 30
    for cls in found:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        made_by_us = params.init is False and cls.__setattr__ is records._frozen_setattr
        assert params.frozen or made_by_us, cls
        assert not params.eq and not params.repr, cls
        assert all(f.init for f in dataclasses.fields(cls)), cls
        assert "__slots__" not in cls.__dict__, cls
        assert not any(isinstance(v, functools.cached_property) for v in vars(cls).values()), cls


def _config_classes() -> list[type[Record]]:
    return [
        cls
        for cls in vars(config_module).values()
        if isinstance(cls, type)
        and issubclass(cls, Record)
        and cls.__module__ == config_module.__name__
    ]


@pytest.mark.parametrize("cls", _config_classes(), ids=lambda c: c.__name__)
def test_a_config_class_is_built_and_frozen_as_its_dataclass_twin(cls: type[Record]) -> None:
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    twin = dataclasses.make_dataclass(
        cls.__qualname__, [(f.name, Any, f) for f in fields], frozen=True
    )
    made, expected = cls(), twin()
    assert repr(made) == repr(expected) and hash(made) == hash(expected)
    assert list(vars(made)) == [f.name for f in fields]  # __dict__ in field order
    first = fields[0].name
    value = getattr(made, first)
    by_position, by_name = cls(value), cls(**{first: value})  # type: ignore[call-arg]
    assert by_position == made == by_name
    assert dataclasses.replace(made) == made  # type: ignore[type-var]
    assert made.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    for bad_call, args, kwargs in (
        ("too many", [None] * (len(fields) + 1), {}),
        ("unexpected", [], {"no_such_key": 1}),
        ("twice", [value], {first: value}),
    ):
        with pytest.raises(TypeError) as ours:
            cls(*args, **kwargs)
        with pytest.raises(TypeError) as theirs:
            twin(*args, **kwargs)
        assert str(ours.value) == str(theirs.value).replace("__create_fn__.<locals>.", ""), bad_call
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, first, value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(made, first)
    assert cls.__dataclass_fields__ == twin.__dataclass_fields__  # type: ignore[attr-defined]


def test_a_record_without_a_default_names_its_missing_field() -> None:
    @records.frozen_record(frozen=True, eq=False, repr=False)
    class Pair(Record):
        a: int
        b: int = 2

    assert (
        repr(Pair(1))
        == "test_a_record_without_a_default_names_its_missing_field.<locals>.Pair(a=1, b=2)"
    )
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        Pair()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="frozen=True, eq=False, repr=False"):
        records.frozen_record(frozen=True)


def test_missing_fields_are_named_as_python_names_them() -> None:
    @records.frozen_record(frozen=True, eq=False, repr=False)
    class Three(Record):
        a: int
        b: int
        c: int

    @dataclass(frozen=True)
    class Twin:
        a: int
        b: int
        c: int

    for args in ((), (1,), (1, 2)):
        with pytest.raises(TypeError) as ours:
            Three(*args)  # type: ignore[call-arg]
        with pytest.raises(TypeError) as theirs:
            Twin(*args)  # type: ignore[call-arg]
        assert str(ours.value).split("()")[1] == str(theirs.value).split("()")[1]


# A dataclass without a docstring gets one made at class creation from
# ``inspect.signature(cls)`` (~0.35 M instructions each, ~1 M for a frozen_record; ~31 M of a
# daemon's start when 89 of its classes had none): every dataclass a daemon's start and
# first answer make has its own (frozen_record writes one), checked in a fresh interpreter
# that imports what they import.
START = (
    "memoryd.cli",
    "memoryd.app",
    "memoryd.index.workspace",
    "memoryd.rpc.status",
    "memoryd.rpc.recall_methods",
    "memoryd.rpc.workspace_methods",
    "memoryd.files.append",
    "memoryd.lifecycle.journal",
    "memoryd.jobs.session_trust",
)
DOCLESS = """
import inspect, sys
for name in sys.argv[1:]:
    __import__(name)
for name, module in sorted(sys.modules.items()):
    if not name.startswith(("memoryd.", "memoryd_client.")) or module is None:
        continue
    for cls in vars(module).values():
        if (
            isinstance(cls, type)
            and cls.__module__ == name
            and "__dataclass_fields__" in cls.__dict__
            and cls.__doc__
            in (  # what dataclasses makes, or made for a frozen_record (no __init__ then)
                cls.__name__ + str(inspect.signature(cls)).replace(" -> None", ""),
                cls.__name__ + "()",
            )
        ):
            print(f"{name}.{cls.__qualname__}")
"""


def test_every_dataclass_of_a_start_has_its_own_docstring() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", DOCLESS, *START], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == []


def test_records_that_were_full_dataclasses_compare_hash_and_show_as_before() -> None:
    from memoryd.secrets import Redacted
    from memoryd.sqlite import VecSupport

    for made in (Redacted("a [REDACTED:x]", ("x",)), VecSupport(False, "", "missing")):
        twin = _generated(made)
        assert repr(made) == repr(twin) and hash(made) == hash(twin)
        assert made == dataclasses.replace(made) and made != twin


@dataclass(eq=False, repr=False)
class Mutable(records.Fields):
    a: int
    b: list[Any] = field(default_factory=list)
    hidden: int = field(default=0, repr=False)
    ignored: int = field(default=0, compare=False)


@dataclass
class GeneratedMutable:  # the same fields, the methods dataclasses generates
    a: int
    b: list[Any] = field(default_factory=list)
    hidden: int = field(default=0, repr=False)
    ignored: int = field(default=0, compare=False)


def test_fields_compare_and_show_as_a_generated_mutable_dataclass() -> None:
    cases = [((1, [2]), (1, [2])), ((1, [2], 3), (1, [2], 4)), ((1, [], 0, 5), (1, [], 0, 6))]
    for a, b in [*cases, ((1,), (2,)), ((1, [1]), (1, [2]))]:
        mine, twin = (Mutable(*a), Mutable(*b)), (GeneratedMutable(*a), GeneratedMutable(*b))
        assert (mine[0] == mine[1]) is (twin[0] == twin[1])
        assert (mine[0] != mine[1]) is (twin[0] != twin[1])
        assert repr(mine[0]) == repr(twin[0]).replace("GeneratedMutable", "Mutable")
    loop, twin_loop = Mutable(1), GeneratedMutable(1)
    loop.b.append(loop)
    twin_loop.b.append(twin_loop)
    assert repr(loop) == repr(twin_loop).replace("GeneratedMutable", "Mutable")
    assert Mutable.__hash__ is None and GeneratedMutable.__hash__ is None
    assert Mutable(1).__eq__(GeneratedMutable(1)) is NotImplemented


def test_the_daemon_s_fields_classes_leave_eq_and_repr_to_fields() -> None:
    import memoryd.app  # noqa: F401

    found = [c for c in records.Fields.__subclasses__() if c.__module__.startswith("memoryd.")]
    assert len(found) >= 4
    for cls in found:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert not params.eq and not params.repr and not params.frozen, cls
        assert cls.__eq__ is records.Fields.__eq__ and cls.__hash__ is None, cls


def test_sync_report_compares_and_shows_as_the_dataclass_it_was() -> None:
    from memoryd.index.types import SyncReport

    twin_cls = dataclasses.make_dataclass(
        "SyncReport",
        [
            (f.name, Any, field(default_factory=dict) if f.name == "skipped" else f.default)
            for f in dataclasses.fields(SyncReport)
        ],
    )
    a, b = SyncReport(files_scanned=3, skipped={"x": "y"}), SyncReport(files_scanned=3)
    ta, tb = twin_cls(files_scanned=3, skipped={"x": "y"}), twin_cls(files_scanned=3)
    assert repr(a) == repr(ta) and repr(b) == repr(tb)
    assert (a == b) is (ta == tb) is False
    b.skipped["x"] = "y"
    assert (a == b) is (ta == twin_cls(files_scanned=3, skipped={"x": "y"})) is True
    assert SyncReport.__hash__ is None
