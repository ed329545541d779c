"""How results sent as rows (``protocol.hit_rows``: a search's hits, when the typed clients
ask for them) are read: each row into the object its map would make (_wire).

Under one list of fields, every row is read by one function written for that list (as
``dataclasses`` writes ``__init__``): it checks each value's type where it stands and sets
the object's fields in field order, so a row whose values its fields take as they are costs
no call per value, no tuple of types and no 23-argument ``__init__`` (a 10-hit answer was
~16k instructions a hit, now ~7k). Any other row (a nil where the field has no value for a
missing key, a value of another type, a row that is not a list of a value per field) is read
as its map, so its object or its BadResponse is the map's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from memoryd_client._wire import _MISSING, _Plan, _plan_of, _Wire, missing_constant
from memoryd_client.errors import BadResponse

_W = TypeVar("_W", bound=_Wire)
# (rows, their fields, the result's name, its key) -> the objects
RowsReader = Callable[[list[Any], list[str], str, str], list[Any]]

# Per class: the lists of fields a reader is written for (a daemon sends the keys its hits
# have in the order they first come: one list per combination met; past these, maps).
MAX_ROW_FIELDS = 64


def read_rows(cls: type[_W], block: dict[str, Any], what: str, key: str) -> list[_W]:
    """Results sent as rows: ``{"fields": [key, ...], "rows": [[value, ...], ...]}``, nil
    where a result has no such key; each row makes the object its map would (a malformed
    row: the BadResponse its map would give)."""
    names: Any = block.get("fields")
    rows: Any = block.get("rows")
    plan = cls.__dict__.get("_readers")
    if plan is None:
        plan = cls._readers = _plan_of(cls)
    read = _MISSING
    if names.__class__ is list and rows.__class__ is list:
        last = _last.get(cls)
        if last is not None and last[0] is plan and names == last[1]:
            # the fields of the answer before (a daemon sends the same list): each one
            # equal to a string of that list is a string, no type to look at
            read = last[2]
        elif set(map(type, names)) <= _STR:
            read = plan.rows.get(tuple(names), _MISSING)  # names met before: unique
            if read is not _MISSING and read is not _ONCE:
                _last[cls] = (plan, list(names), read)
    if read is _MISSING or read is _ONCE:
        if (
            names.__class__ is not list
            or rows.__class__ is not list
            or not all(name.__class__ is str for name in names)
            or len(set(names)) != len(names)
        ):
            raise BadResponse(
                f"malformed {what} from the daemon: {key!r} should be a list, or rows with "
                f"their fields, got {block!r}"
            )
        read = _reader(cls, plan, tuple(names))
    if read is None:
        return [_as_map(cls, names, what, key, row) for row in rows]
    out: list[_W] = read(rows, names, what, key)
    return out


_STR = frozenset({str})
_ONCE: Any = object()  # fields met once: no reader written yet
# Per class: (its plan, the fields, their reader or None) of the last rows read, compared
# before the plan's lookup (hashing a tuple of the answer's new field names costs twice
# comparing them with a list met before).
_last: dict[type, tuple[_Plan, list[str], Any]] = {}


def _as_map(cls: type[_W], names: list[str], what: str, key: str, row: Any) -> _W:
    """A row read as its map (its nils left out), or the BadResponse of a row that is not
    a list of a value per field."""
    if row.__class__ is not list or len(row) != len(names):
        raise BadResponse(
            f"malformed {what} from the daemon: {key!r} should hold rows of {len(names)} "
            f"values, got {row!r}"
        )
    return cls.from_wire({k: v for k, v in zip(names, row, strict=True) if v is not None})


def _reader(cls: type[_Wire], plan: _Plan, names: tuple[str, ...]) -> RowsReader | None:
    """The function that reads rows under these fields (None: each row is read as its
    map), written the second time these fields come: writing one costs ~0.3 ms, reading
    a 10-hit answer as maps ~0.02 ms, so a process that reads one answer (memctl) writes
    none. Past MAX_ROW_FIELDS lists, none is written."""
    if plan.rows.get(names) is not _ONCE:
        if len(plan.rows) < MAX_ROW_FIELDS:
            plan.rows[names] = _ONCE
        return None
    if plan.shapes is None or plan.raw or plan.computed:
        read = None  # a class whose maps are read field by field: its rows too
    else:
        read = _write_reader(cls, plan, names)
    plan.rows[names] = read
    return read


def _write_reader(cls: type[_Wire], plan: _Plan, names: tuple[str, ...]) -> RowsReader | None:
    """Write the reader: for each row a list of one value per field, each value taken as it
    is when its type is one its field takes so (_wire._as_is) or it is nil and the field has
    a constant or a new list or map for a missing key; the object then gets every field in
    field order, as ``__init__`` sets them. None when no row could be read so (a field
    without a column and without a value for a missing key: required, or a nested result)."""
    declared = fields(cls)  # type: ignore[arg-type]
    if not all(fl.init for fl in declared):
        return None  # __init__ sets a field we would have to leave out
    column = {name: i for i, name in enumerate(names)}
    key_of = {spec[0]: key for key, spec in plan.by_key.items()}
    env: dict[str, Any] = {"new": cls.__new__, "cls": cls, "as_map": _as_map}
    checks: list[str] = []
    sets: list[str] = []
    for n, fl in enumerate(declared):
        absent = _absent_value(cls, plan, fl.name, f"d{n}", env)
        key = key_of.get(fl.name, "")
        i = column.get(key)
        if not key or i is None:  # no row gives it
            if absent is None:
                return None
            sets.append(f"o.{fl.name} = {absent}")
            continue
        v = f"v{i}"
        taken = [kind for kind in plan.by_key[key][1] if kind is not type(None)]
        alike = []
        for j, kind in enumerate(taken):
            env[f"t{n}_{j}"] = kind
            alike.append(f"type({v}) is t{n}_{j}")
        if absent is not None:  # a nil is the key left out
            alike.insert(0, f"{v} is None")
        if not alike:
            return None  # neither a value nor a nil is read as it is
        checks.append(f"({' or '.join(alike)})")
        if absent is None or absent == "None":
            sets.append(f"o.{fl.name} = {v}")
        elif taken:
            sets.append(f"o.{fl.name} = {absent} if {v} is None else {v}")
        else:
            sets.append(f"o.{fl.name} = {absent}")
    width = len(names)
    unpack = ", ".join(f"v{i}" for i in range(width)) + ("," if width == 1 else "") + " = row"
    lines = "\n".join(f"                {line}" for line in ["o = new(cls)", *sets])
    body = _READER.format(
        width=width,
        unpack=unpack if width else "pass",
        checks=" and ".join(checks) or "True",
        sets=lines,
    )
    exec(body, env)  # only the class's field names are written in it; values are in env
    read: RowsReader = env["read"]
    return read


_READER = """
def read(rows, names, what, key):
    out = []
    for row in rows:
        if type(row) is list and len(row) == {width}:
            {unpack}
            if {checks}:
{sets}
                out.append(o)
                continue
        out.append(as_map(cls, names, what, key, row))
    return out
"""


def _absent_value(
    cls: type[_Wire], plan: _Plan, name: str, slot: str, env: dict[str, Any]
) -> str | None:
    """The expression of a field's value when its key is missing (its constant, in ``env``
    under ``slot``; a new list or map), or None (required, or a value of its own)."""
    for fresh, make in plan.fresh:
        if fresh == name:
            if make is list or make is dict:
                return "[]" if make is list else "{}"
            env[slot] = make
            return f"{slot}()"
    for field_name, key, read in plan.missing:
        if field_name == name:
            value = missing_constant(cls, key, read)
            if value is _MISSING:
                return None
            break
    else:
        value = plan.template[name]  # its default
    if value is None:
        return "None"
    env[slot] = value
    return slot


__all__ = ["read_rows"]
