"""Strict request-parameter validation: every problem is ``invalid_params`` naming the param.

A handler reads each parameter it accepts through one typed getter, then calls ``done()``,
which refuses any parameter it did not read (a misspelt ``max_result`` must not silently
fall back to the default). ``None`` (msgpack nil) counts as "not given". A value nested
deeper than ``MAX_DEPTH`` is refused before anything looks at it (a thousand levels made
repr() raise RecursionError), and values are quoted in messages with a bounded repr.
"""

from __future__ import annotations

import datetime as dt
import re
import reprlib
from collections.abc import Sequence
from typing import Any

from memoryd.errors import InvalidParams

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_DEPTH = 32  # no method takes more than a list of strings; 32 leaves room for later ones
_REPR = reprlib.Repr()  # keyword arguments only from 3.12
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 3, 60, 60, 4, 4


def shown(value: Any) -> str:
    """``value`` quoted for a message: bounded in length and depth."""
    return _REPR.repr(value)


def nesting_depth(value: Any, limit: int) -> int:
    """How deep lists and maps nest in ``value`` (a scalar is 0), counted up to ``limit + 1``
    without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, list | tuple | dict):
            depth += 1
            deepest = max(deepest, depth)
            if depth > limit:
                break
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children)
    return deepest


_FLAT = frozenset({str, int, float, bool, bytes, type(None)})


def _kind(value: Any) -> str:
    return "nil" if value is None else type(value).__name__


class Params:
    def __init__(self, method: str, raw: dict[str, Any]) -> None:
        self.method = method
        self._raw = raw
        self._read: list[str] = []
        for name, value in raw.items():
            if type(value) in _FLAT:  # most params: nothing to walk
                continue
            if nesting_depth(value, MAX_DEPTH) > MAX_DEPTH:
                raise InvalidParams(
                    f"{shown(name)} is nested more than {MAX_DEPTH} levels deep",
                    {"param": str(name)[:80]},
                )

    @property
    def raw(self) -> dict[str, Any]:
        """The params as sent (a map whose values nest at most MAX_DEPTH deep)."""
        return self._raw

    def _take(self, name: str, required: bool) -> Any:
        self._read.append(name)
        value = self._raw.get(name)
        if value is None and required:
            raise InvalidParams(f"{name} is required", {"param": name})
        return value

    @staticmethod
    def _bad(name: str, must: str, value: Any) -> InvalidParams:
        return InvalidParams(
            f"{name} must be {must}, got {_kind(value)} {shown(value)}", {"param": name}
        )

    def text(
        self,
        name: str,
        *,
        required: bool = False,
        default: str | None = None,
        allow_empty: bool = False,
    ) -> str | None:
        value = self._take(name, required)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self._bad(name, "a string", value)
        if not allow_empty and not value.strip():
            raise InvalidParams(f"{name} must not be empty", {"param": name})
        return value

    def required_text(self, name: str) -> str:
        value = self.text(name, required=True)
        assert value is not None
        return value

    def path(self, name: str, *, required: bool = False) -> str | None:
        """A path or workspace reference: a non-empty string without NUL bytes."""
        value = self.text(name, required=required)
        if value is not None and "\x00" in value:
            raise InvalidParams(f"{name} must not contain NUL bytes", {"param": name})
        return value

    def required_path(self, name: str) -> str:
        value = self.path(name, required=True)
        assert value is not None
        return value

    def integer(
        self, name: str, *, lo: int, hi: int | None = None, default: int | None = None
    ) -> int | None:
        value = self._take(name, False)
        if value is None:
            return default
        if value.__class__ is int and value >= lo and (hi is None or value <= hi):
            return value  # the usual case, before any message is made
        span = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(name, f"an integer {span}", value)
        if value < lo or (hi is not None and value > hi):
            raise InvalidParams(f"{name} must be {span}, got {value}", {"param": name})
        return value

    def number(
        self, name: str, *, lo: float, hi: float, default: float | None = None
    ) -> float | None:
        value = self._take(name, False)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise self._bad(name, f"a number {lo}..{hi}", value)
        if not lo <= value <= hi:
            raise InvalidParams(f"{name} must be {lo}..{hi}, got {value}", {"param": name})
        return float(value)

    def flag(self, name: str, *, default: bool = False) -> bool:
        value = self._take(name, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._bad(name, "true or false", value)
        return value

    def choice(
        self, name: str, choices: Sequence[str], *, default: str | None = None
    ) -> str | None:
        value = self._take(name, False)
        if value is None:
            return default
        if not isinstance(value, str) or value not in choices:
            raise self._bad(name, "one of " + "|".join(choices), value)
        return value

    def choice_list(
        self, name: str, choices: Sequence[str], *, default: tuple[str, ...]
    ) -> tuple[str, ...]:
        value = self._take(name, False)
        if value is None:
            return default
        must = "a non-empty list of " + "|".join(choices)
        if not isinstance(value, list | tuple) or not value:
            raise self._bad(name, must, value)
        for item in value:
            if not isinstance(item, str) or item not in choices:
                raise self._bad(name, must, value)
        return tuple(dict.fromkeys(value))

    def text_list(self, name: str, *, max_items: int = 16, max_chars: int = 400) -> tuple[str, ...]:
        """One string or a list of them (each non-empty, at most ``max_chars``)."""
        value = self._take(name, False)
        if value is None:
            return ()
        items = [value] if isinstance(value, str) else value
        must = f"a string or a list of at most {max_items} strings"
        if not isinstance(items, list | tuple) or len(items) > max_items:
            raise self._bad(name, must, value)
        for item in items:
            if not isinstance(item, str) or not item.strip() or len(item) > max_chars:
                raise self._bad(name, must + f" (non-empty, at most {max_chars} characters)", value)
            if "\x00" in item:
                raise InvalidParams(f"{name} must not contain NUL bytes", {"param": name})
        return tuple(dict.fromkeys(str(i) for i in items))

    def date(self, name: str) -> dt.date | None:
        value = self._take(name, False)
        if value is None:
            return None
        if not isinstance(value, str) or not _DATE.match(value):
            raise self._bad(name, "a date YYYY-MM-DD", value)
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            raise self._bad(name, "a valid date YYYY-MM-DD", value) from None

    def done(self) -> None:
        """Refuse parameters the method does not take."""
        if self._raw.keys() <= set(self._read):
            return
        unknown = sorted(set(self._raw) - set(self._read))
        if unknown:
            takes = ", ".join(self._read) if self._read else "no params"
            raise InvalidParams(
                f"unknown param {', '.join(unknown)} for {self.method} (it takes: {takes})",
                {"param": unknown[0], "unknown": unknown},
            )
