"""records.frozen_record's template ``__init__`` (record_inits.py): the signature,
defaults, annotations, stored values, field order and error messages of the ``__init__``
``dataclasses`` generates for the same frozen class, for every number of fields a template
exists for, positional or keyword-only."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from memoryd import record_inits, records
from memoryd.records import Record


def _pair(n: int, defaults: int, kw_only: bool) -> tuple[type[Any], type[Any]]:
    """A frozen_record with ``n`` fields (the last ``defaults`` with one) and its twin."""
    spec = [
        (f"f{i}", "int", dataclasses.field(default=i * 10, kw_only=kw_only))
        if i >= n - defaults
        else (f"f{i}", "int", dataclasses.field(kw_only=kw_only))
        for i in range(n)
    ]
    namespace: dict[str, Any] = {"__annotations__": {f: t for f, t, _ in spec}, "__doc__": "R"}
    namespace.update((f, d) for f, _, d in spec)
    ours = records.frozen_record(frozen=True, eq=False, repr=False, kw_only=kw_only)(
        type("R", (Record,), namespace)
    )
    twin = dataclasses.make_dataclass("R", spec, frozen=True)
    return ours, twin


def _error(make: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(TypeError) as raised:
        make(*args, **kwargs)
    return str(raised.value).replace("__create_fn__.<locals>.", "")


@pytest.mark.parametrize("kw_only", [False, True])
@pytest.mark.parametrize("n", range(1, len(record_inits.TEMPLATES) + 1))
def test_a_template_init_is_the_generated_one(n: int, kw_only: bool) -> None:
    for defaults in sorted({0, 1, n // 2, n}):
        ours, twin = _pair(n, defaults, kw_only)
        assert ours.__init__.__code__.co_filename == record_inits.__file__
        assert inspect.signature(ours) == inspect.signature(twin)
        assert ours.__init__.__annotations__ == twin.__init__.__annotations__
        assert ours.__init__.__qualname__ == "R.__init__" and ours.__init__.__name__ == "__init__"
        values = {f"f{i}": 100 + i for i in range(n)}
        by_name = ours(**values)
        assert list(vars(by_name).items()) == list(vars(twin(**values)).items())
        needed = {k: v for k, v in values.items() if int(k[1:]) < n - defaults}
        assert vars(ours(**needed)) == vars(twin(**needed))
        if not kw_only:
            assert vars(ours(*values.values())) == vars(by_name)
            assert _error(ours, *values.values(), 0) == _error(twin, *values.values(), 0)
            assert _error(ours, 1, f0=1) == _error(twin, 1, f0=1)
        else:
            assert _error(ours, 1) == _error(twin, 1)
        assert _error(ours, nope=1, **values) == _error(twin, nope=1, **values)
        if defaults < n:
            assert _error(ours) == _error(twin)
        with pytest.raises(dataclasses.FrozenInstanceError):
            by_name.f0 = 1


def test_a_class_no_template_fits_gets_the_shared_init_or_is_refused() -> None:
    @records.frozen_record(frozen=True, eq=False, repr=False)
    class Listed(Record):
        """A field with a default factory: the shared ``__init__``."""

        items: list[int] = dataclasses.field(default_factory=list)

    assert Listed().items == [] and Listed([1]).items == [1]
    assert Listed.__init__.__code__.co_filename == records.__file__

    with pytest.raises(TypeError, match="no keyword-only __init__ fits"):

        @records.frozen_record(frozen=True, eq=False, repr=False, kw_only=True)
        class Keyed(Record):
            """Keyword-only with a default factory: refused at class creation."""

            items: list[int] = dataclasses.field(default_factory=list)


def test_the_daemon_s_frozen_records_have_template_inits() -> None:
    import memoryd.app
    import memoryd.embeddings.factory
    import memoryd.runtime.usage  # noqa: F401

    made = [
        cls
        for cls in Record.__subclasses__()
        if cls.__module__.startswith("memoryd.")
        and cls.__setattr__ is records._frozen_setattr
        and not cls.__module__.startswith("memoryd.runtime.config")
    ]
    assert len(made) >= 20
    # __post_init__ (the daemon makes its own by search_request) and a default factory
    # (made once a range of a transcript is read): the shared __init__
    shared = {"SearchRequest", "TranscriptChunkInput"}
    for cls in made:
        where = record_inits.__file__ if cls.__qualname__ not in shared else records.__file__
        assert cls.__init__.__code__.co_filename == where, cls
