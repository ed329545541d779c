"""How a typed result is read from its wire map: each dataclass field by its type, or by
its metadata (``_absent``: the value when the daemon leaves the key out, and the key's
wire name; ``_read``: a reader of its own), so a field is declared once (types.py).

Forward compatible: keys this client does not know are ignored (and kept in ``raw``); a
missing optional key takes its default. A missing required key or a value of the wrong type
is a :class:`BadResponse` that names the result, the key and the value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, fields
from typing import (
    Any,
    ClassVar,
    NamedTuple,
    Self,
    TypeVar,
    get_args,
    get_origin,
    get_type_hints,
)

from memoryd_client.errors import BadResponse


class _Fields:
    """Typed access to one wire map; ``what`` names it in error messages."""

    def __init__(self, data: Any, what: str) -> None:
        if not isinstance(data, dict):
            raise BadResponse(f"malformed {what} from the daemon: expected a map, got {data!r}")
        self.data: dict[str, Any] = data
        self.what = what

    def _bad(self, key: str, expected: str) -> BadResponse:
        return BadResponse(
            f"malformed {self.what} from the daemon: {key!r} should be {expected}, "
            f"got {self.data.get(key)!r}"
        )

    def get_str(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def get_opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def get_int(self, key: str, default: int | None = None) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer")
        return value

    def get_opt_int(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.get_int(key)

    def get_float(self, key: str, default: float | None = None) -> float:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, "a number")
        return float(value)

    def get_opt_float(self, key: str) -> float | None:
        return None if self.data.get(key) is None else self.get_float(key)

    def get_bool(self, key: str, default: bool = False) -> bool:
        return bool(self.data.get(key, default))

    def get_list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._bad(key, "a list")
        return value

    def get_dict(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self._bad(key, "a map")
        return value

    def get_strs(self, key: str) -> list[str]:
        """A list of strings; a single string is accepted as a list of one."""
        value = self.data.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list):
            raise self._bad(key, "a list of strings")
        return [str(v) for v in value]


_MISSING: Any = object()
Reader = Callable[[_Fields, str], Any]  # (the map, the key) -> the field's value


def _absent(value: Any, *, key: str | None = None) -> dict[str, Any]:
    """A field's metadata: its value when the daemon leaves the key out (``value``), and
    its key on the wire when that is not its name."""
    return {"absent": value, "key": key}


def _read(reader: Reader) -> dict[str, Any]:
    """A field's metadata: read by ``reader`` instead of by its type."""
    return {"read": reader}


def _by_type(hint: Any, absent: Any) -> Reader:
    """How a field of this type is read; ``absent``: its value when the key is missing
    (_MISSING: the key is required)."""
    default = None if absent is _MISSING else absent
    args = get_args(hint)
    if hint is str:
        return lambda f, k: f.get_str(k, default)
    if hint is int:
        return lambda f, k: f.get_int(k, default)
    if hint is float:
        return lambda f, k: f.get_float(k, default)
    if hint is bool:
        return lambda f, k: f.get_bool(k, bool(default))
    if args and type(None) in args and len(args) == 2:  # X | None
        inner = args[0] if args[1] is type(None) else args[1]
        if inner is str:
            return _Fields.get_opt_str
        if inner is int:
            return _Fields.get_opt_int
        if inner is float:
            return _Fields.get_opt_float
        if isinstance(inner, type) and issubclass(inner, _Wire):
            return lambda f, k: None if f.data.get(k) is None else inner.from_wire(f.data[k])
    origin = get_origin(hint)
    if origin is list and args == (str,):
        return _Fields.get_strs
    if origin is list and isinstance(args[0], type) and issubclass(args[0], _Wire):
        item: type[_Wire] = args[0]
        return lambda f, k: [item.from_wire(v) for v in f.get_list(k)]
    if origin is dict:
        return _Fields.get_dict
    if isinstance(hint, type) and issubclass(hint, _Wire):  # a nested result, {} if absent
        nested = hint
        return lambda f, k: nested.from_wire({} if f.data.get(k) is None else f.data[k])
    raise TypeError(f"no wire reader for {hint!r}")  # a field added with a new type


class _Wire:
    """A result read from its wire map field by field, each by its type (or its metadata:
    ``_absent``, ``_read``), so a field is declared once; ``raw`` keeps the map."""

    _what: ClassVar[str]
    _readers: ClassVar[_Plan | None] = None  # per class, at first use

    @classmethod
    def from_wire(cls, data: Any) -> Self:
        plan = cls.__dict__.get("_readers")
        if plan is None:
            plan = cls._readers = _plan_of(cls)
        if plan.shapes is not None and data.__class__ is dict:
            # A map of a shape read before (these keys, values of these types) whose every
            # value is one its field takes as it is: the map, on the defaults, is the object.
            fast = plan.shapes.get((*data, *map(type, data.values())), _MISSING)
            if fast is _MISSING:
                fast = _fast_of(cls, plan, (*data, *map(type, data.values())))
            if fast is not None:
                template, drop, fresh, raw, computed = fast
                values = template.copy()
                values.update(data)
                for key in drop:
                    del values[key]
                for name, make in fresh:
                    values[name] = make()
                for name, key, read in computed:  # as _read runs them: always
                    values[name] = read(_Fields(data, cls._what), key)
                if raw:
                    values["raw"] = data
                obj = cls.__new__(cls)
                obj.__dict__ = values
                return obj
        return cls._read(plan, data)

    @classmethod
    def _read(cls, plan: _Plan, data: Any) -> Self:
        """Read field by field (any map: values converted, defaults made, errors raised)."""
        if not isinstance(data, dict):
            _Fields(data, cls._what)  # raises: not a map
        f = None  # the readers' view of the map, made only if one runs
        values = plan.template.copy()  # every field, in order; each is set below
        for name, make in plan.fresh:
            values[name] = make()
        for name, key, read in plan.missing:
            if key not in data:
                f = f or _Fields(data, cls._what)
                values[name] = read(f, key)
        for name, key, read in plan.computed:
            f = f or _Fields(data, cls._what)
            values[name] = read(f, key)
        by_key = plan.by_key
        for key, value in data.items():  # only the keys there: a hit has ~11 of its 23
            spec = by_key.get(key)
            if spec is not None:
                name, exact, read = spec
                if value.__class__ in exact:  # what its reader would give back as it is
                    values[name] = value
                else:
                    f = f or _Fields(data, cls._what)
                    values[name] = read(f, key)
        return _made(cls, plan, data, values)


def _made(cls: type[_W], plan: _Plan, data: dict[str, Any], values: dict[str, Any]) -> _W:
    """The object of ``values`` (every field but ``raw``, in order)."""
    if plan.raw:
        values["raw"] = data
    if plan.init:
        return cls(**values)
    # What the dataclass's __init__ would do (set each field, in order), at a third of
    # its cost: a search's answer makes one object per hit.
    obj = cls.__new__(cls)
    obj.__dict__ = values
    return obj


_W = TypeVar("_W", bound=_Wire)


class _Plan(NamedTuple):
    """How a class is read.

    ``by_key``: wire key -> (field, the value types taken as they are, reader) for each
    field read from its own key; ``template``: every field in order with its default (or
    None until set); ``fresh``: the fields whose default is a new list or map each time;
    ``missing``: (field, key, reader) for the fields whose reader must run when their key
    is missing (required: it raises; ``_absent``: the value it names; a nested result);
    ``computed``: the fields with a reader of their own (``_read``), always run; ``init``:
    the class needs its ``__init__`` (frozen, or a ``__post_init__``); ``shapes``: the
    maps' shapes met so far (keys, then their values' types) -> how such a map is read at
    once, its fields with a reader of their own read after (None: field by field); None
    for a class whose maps are always read field by field (its ``__init__``, a required
    key no value is taken as it is for: a list of results); ``rows``: the same for rows
    (_wire_rows: none for a class with a reader of its own), by their fields and then
    their values' types."""

    by_key: dict[str, tuple[str, frozenset[type], Reader]]
    template: dict[str, Any]
    fresh: list[tuple[str, Callable[[], Any]]]
    missing: list[tuple[str, str, Reader]]
    computed: list[tuple[str, str, Reader]]
    raw: bool
    init: bool
    shapes: dict[tuple[Any, ...], _Fast | None] | None
    rows: dict[tuple[str, ...], Any]  # their fields -> the rows met (_wire_rows._RowShapes)


class _Fast(NamedTuple):
    """How a map of one shape is read at once: ``template`` (every field in order, its
    default or the value a missing key of this shape stands for) updated with the map,
    less the keys of ``drop`` (the map's keys this client does not know), each field of
    ``fresh`` a new list or map."""

    template: dict[str, Any]
    drop: tuple[str, ...]
    fresh: tuple[tuple[str, Callable[[], Any]], ...]
    raw: bool  # the map kept as ``raw``
    # the readers of their own, then the lists of strings made of a string or a list: run
    # after, as _read runs the first ones (always) and the others (never raising) would
    computed: tuple[tuple[str, str, Reader], ...]


MAX_SHAPES = 256  # per class: a map of a shape past these is read field by field


def _fast_of(cls: type[_Wire], plan: _Plan, shape: tuple[Any, ...]) -> _Fast | None:
    """How a map of ``shape`` is read at once, or None when a value needs its reader (a
    conversion, a nested result), a missing key stands for a value of its own (required:
    an error; a new list), or a key is a field's name but not its key. Remembered."""
    fast = _fast_shape(cls, plan, shape)
    assert plan.shapes is not None
    if len(plan.shapes) < MAX_SHAPES:
        plan.shapes[shape] = fast
    return fast


def _fast_shape(cls: type[_Wire], plan: _Plan, shape: tuple[Any, ...]) -> _Fast | None:
    n = len(shape) // 2
    keys, types = shape[:n], shape[n:]
    drop = []
    computed = {key: name for name, key, _read in plan.computed}
    listed: list[tuple[str, str, Reader]] = []  # a list of strings to make of the value
    for key, kind in zip(keys, types, strict=True):
        if key in computed:  # its reader reads it, whatever its type
            if computed[key] != key:
                drop.append(key)
            continue
        spec = plan.by_key.get(key)
        if spec is None:
            if key in plan.template:
                return None  # a field's name that is not its key on the wire ("raw")
            drop.append(key)
        elif spec[0] == key and spec[2] is _Fields.get_strs and kind in _LISTED:
            listed.append((key, key, spec[2]))  # never raises: no error comes first
        elif spec[0] != key or kind not in spec[1]:
            return None
    template = plan.template.copy()
    for name, key, read in plan.missing:
        if key not in keys:
            value = missing_constant(cls, key, read)
            if value is _MISSING:
                return None
            template[name] = value
    fresh = tuple((name, make) for name, make in plan.fresh if name not in keys)
    return _Fast(template, tuple(drop), fresh, plan.raw, (*plan.computed, *listed))


# A list of strings's reader (_Fields.get_strs) given one of these makes a new list and
# never raises: such a value (a search's ``degraded``, a string) leaves its map's shape
# read at once, the list made after, as for a reader of its own.
_LISTED = frozenset({str, list})


def missing_constant(cls: type[_Wire], key: str, read: Reader) -> Any:
    """The constant a field's missing key stands for (its reader run on an empty map), or
    _MISSING: the key is required, or its reader makes a value of its own (a result)."""
    try:
        value = read(_Fields({}, cls._what), key)
    except BadResponse:
        return _MISSING
    return value if type(value) in _CONSTANT else _MISSING


_CONSTANT = frozenset({str, int, float, bool, type(None)})


_SIMPLE = (str, int, float, bool)
_NONE = type(None)


def _optional_of(hint: Any) -> Any:
    """X of ``X | None`` (None for any other hint)."""
    args = get_args(hint)
    if len(args) == 2 and _NONE in args:
        return args[0] if args[1] is _NONE else args[1]
    return None


def _as_is(hint: Any) -> frozenset[type]:
    """The value types a field's reader by type returns unchanged (float takes an int too,
    but as a float: that one goes through the reader)."""
    if hint in _SIMPLE:
        return frozenset({hint})
    inner = _optional_of(hint)
    if inner in (str, int, float):
        return frozenset({inner, _NONE})
    if get_origin(hint) is dict:
        return frozenset({dict})
    return frozenset()


def _defaults_alike(hint: Any, fl: Field[Any]) -> bool:
    """Whether a missing key's reader gives what the field's own default is."""
    if "read" in fl.metadata or "absent" in fl.metadata:
        return False
    if fl.default is MISSING and fl.default_factory is MISSING:
        return False
    inner = _optional_of(hint)
    if hint in _SIMPLE or inner in _SIMPLE:
        return True
    if fl.default is None and isinstance(inner, type) and issubclass(inner, _Wire):
        return True  # a nested result, None when missing
    if get_origin(hint) is list:  # strings or nested results: [] when missing
        return fl.default_factory is list
    return get_origin(hint) is dict


def _plan_of(cls: type[_Wire]) -> _Plan:
    hints = get_type_hints(cls)
    by_key: dict[str, tuple[str, frozenset[type], Reader]] = {}
    template: dict[str, Any] = {}
    fresh: list[tuple[str, Callable[[], Any]]] = []
    missing, computed = [], []
    never_as_is = False
    for fl in fields(cls):  # type: ignore[arg-type]
        template[fl.name] = None
        if fl.name == "raw":
            continue
        meta = fl.metadata
        key = meta.get("key") or fl.name
        if "read" in meta:
            computed.append((fl.name, key, meta["read"]))
            continue
        if "absent" in meta:
            absent = meta["absent"]
        elif fl.default is not MISSING:
            absent = fl.default
        elif fl.default_factory is not MISSING:
            absent = fl.default_factory()
        else:
            absent = _MISSING
        read = _by_type(hints[fl.name], absent)
        if key in by_key:
            raise TypeError(f"{cls.__name__}: two fields read the wire key {key!r}")
        by_key[key] = (fl.name, _as_is(hints[fl.name]), read)
        if absent is _MISSING and not by_key[key][1]:
            never_as_is = True  # required, and always read by its reader
        if not _defaults_alike(hints[fl.name], fl):
            missing.append((fl.name, key, read))
        elif fl.default_factory is not MISSING:
            fresh.append((fl.name, fl.default_factory))
        else:
            template[fl.name] = fl.default
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    init = params.frozen or hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__
    raw = "raw" in cls.__dataclass_fields__  # type: ignore[attr-defined]
    shaped = not init and not never_as_is
    shapes: dict[tuple[Any, ...], _Fast | None] | None = {} if shaped else None
    if shaped:
        _lay_out(cls, template)
    return _Plan(by_key, template, fresh, missing, computed, raw, init, shapes, {})


def _lay_out(cls: type[_Wire], template: dict[str, Any]) -> None:
    """Set every field, in field order, on a first object of the class (then dropped).

    CPython (3.11+) keeps an object's attributes inline in the layout its class's objects
    were first given, as long as that layout can still grow, and lets it grow less with
    each object made (``cls.__new__`` too). Objects read from maps are made so and get
    their map as ``__dict__``: a few of them before the first object whose fields are set
    one by one (a row reader's, ``__init__``'s) would leave it a layout too small for them,
    and every later such object its attributes in a dict, its stores unspecialised (a
    10-hit answer's reading 1.7x slower for the rest of the process)."""
    first = cls.__new__(cls)
    for name in template:
        object.__setattr__(first, name, None)


__all__ = ["Reader", "_Fields", "_Wire", "_absent", "_read"]
