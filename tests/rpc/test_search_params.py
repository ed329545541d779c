"""A search's params read in one pass (``plain_search``: the params most searches send,
each a value its getter takes as it is) give the request the getters give
(``search_params``); anything else is left to the getters, whose errors name the param."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from memoryd.errors import InvalidParams
from memoryd.index.types import SearchRequest, search_request
from memoryd.rpc.memory_methods import Search, plain_search, search_params
from memoryd.rpc.params import Params

TODAY = "2026-11-29"
SOURCES = ("memory",)
_VALUES: list[Any] = [
    "x",
    "when did we ship?",
    "",
    "  ",
    "a\x00b",
    "keyword",
    "hybrid",
    "vector",
    "fuzzy",
    "w" * 2100,
    0,
    1,
    10,
    100,
    101,
    -1,
    0.0,
    0.5,
    1.0,
    1.5,
    float("nan"),
    True,
    False,
    None,
    ["memory"],
    {"k": 1},
]
_KEYS = ["query", "workspace", "max_results", "min_score", "mode", "hit_rows"]
_OTHER = ["sources", "fusion", "now", "project", "include_superseded", "max_result"]


def _read(read: Any, *args: Any) -> Any:
    try:
        found = read(*args)
    except InvalidParams as exc:
        return ("error", exc.message, exc.data)
    if found is None:
        return None
    return (found, repr(found), list(vars(found.request)))


def test_a_plain_search_is_read_in_one_pass_as_its_getters_read_it() -> None:
    raw = {"query": "when?", "workspace": "w", "mode": "keyword", "max_results": 10}
    raw |= {"min_score": 0, "hit_rows": True}
    fast = plain_search(raw, TODAY, SOURCES)
    assert fast is not None
    assert _read(lambda: fast) == _read(search_params, Params("search", raw), TODAY, SOURCES)
    assert fast == Search(
        "w", SearchRequest("when?", 10, 0.0, SOURCES, "keyword", today=TODAY), False, False, True
    )
    assert type(fast.request.min_score) is float


@pytest.mark.parametrize("seed", range(3))
def test_random_params_read_in_one_pass_are_what_the_getters_read(seed: int) -> None:
    rng = random.Random(seed)
    fast_reads = 0
    for _ in range(3000):
        raw = {"query": rng.choice(["x", "when?", *_VALUES])}
        for key in rng.sample(_KEYS, rng.randint(0, len(_KEYS))):
            raw[key] = rng.choice(_VALUES) if rng.random() < 0.3 else _good(key, rng)
        if rng.random() < 0.1:
            raw[rng.choice(_OTHER)] = rng.choice(_VALUES)
        fast = _read(plain_search, raw, TODAY, SOURCES)
        if fast is None:
            continue  # the getters read it
        fast_reads += 1
        assert fast == _read(search_params, Params("search", raw), TODAY, SOURCES), raw
    assert fast_reads > 500


def _good(key: str, rng: random.Random) -> Any:
    return {
        "query": "what happened",
        "workspace": "conv-26",
        "max_results": rng.randint(1, 100),
        "min_score": rng.choice([0, 1, 0.25, 0.0]),
        "mode": rng.choice(["keyword", "hybrid", "vector"]),
        "hit_rows": rng.choice([True, False]),
    }[key]


def test_a_search_request_made_in_one_step_is_the_one_its_constructor_makes() -> None:
    names = [f.name for f in dataclasses.fields(SearchRequest)]
    values = [
        "q",
        5,
        0.5,
        ("memory", "sessions"),
        "hybrid",
        "rrf",
        "memory/",
        "2024-01-01",
        "2024-02-01",
        ("p",),
        TODAY,
    ]
    made = search_request(*values)  # type: ignore[arg-type]
    want = SearchRequest(**dict(zip(names, values, strict=True)))
    assert made == want and hash(made) == hash(want) and repr(made) == repr(want)
    assert list(vars(made)) == names  # every field, in order
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.query = "other"  # type: ignore[misc]
    for bad in [
        {"query": " "},
        {"max_results": 0},
        {"since": "2024-3-1"},
        {"mode": "x"},
        {"since": "2024-03-02", "until": "2024-03-01"},
        {"sources": ()},
    ]:
        args = dict(zip(names, values, strict=True)) | bad
        with pytest.raises(InvalidParams) as want_error:
            SearchRequest(**args)
        with pytest.raises(InvalidParams) as got_error:
            search_request(*args.values())
        assert got_error.value.message == want_error.value.message
        assert got_error.value.data == want_error.value.data
