"""The hits' wire maps made by the compiled part (index/_compiled_answer.c: hit_dicts)
against SearchHit.to_dict: the same keys in the same order, the same values, every score
rounded to the double round(x, 6) gives (float.hex), on values where a shortcut could go
wrong: ties of the sixth decimal and their neighbours, signed zeros, the tiny, the huge,
the non-finite. An install without a compiler has only the Python version: these tests are
skipped there. At the end: hit_rows (the maps as rows) against protocol.hit_rows."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from memoryd.index import types
from memoryd.index.types import HitMeta, SearchHit, SearchResponse
from memoryd_client import protocol

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")


def _values(rng: random.Random) -> list[float]:
    out = [0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 1e-7, -4.9999999e-7, 5e-7, math.inf]
    out += [-math.inf, math.nan, 1e300, -1e300, 999.9999995, 1e3 - 5e-7, 2.5e-6, 1.0000005]
    for _ in range(20_000):
        out.append(rng.uniform(-1.0, 1.0) * 10 ** rng.randint(-12, 12))
        out.append(rng.random())
        m = rng.randint(1, 40)  # k / 2**m: exact binary fractions, ties of some decimal
        out.append(rng.randint(-(1 << 20), 1 << 20) / 2**m)
        k = rng.randint(-(10**9), 10**9)  # x.5e-6 exactly as decimal, and its neighbours
        tie = (k + 0.5) / 1e6
        out += [tie, math.nextafter(tie, math.inf), math.nextafter(tie, -math.inf)]
    return out


def _hexed(d: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(k, v.hex() if isinstance(v, float) else v) for k, v in d.items()]


def test_every_score_is_rounded_as_round_rounds_it() -> None:
    values = _values(random.Random(38))
    hits = [
        SearchHit("m.md", 1, 2, x, "s", 1, 2, "memory", "", values[i - 1], values[i - 2], "")
        for i, x in enumerate(values)
    ]
    got = compiled.hit_dicts(hits, SearchHit)
    assert got is not None
    for hit, d in zip(hits, got, strict=True):
        assert _hexed(d) == _hexed(hit.to_dict()), hit


def test_the_maps_have_the_keys_to_dict_gives_in_its_order() -> None:
    meta = HitMeta("agent", "s1", 7, ("a",), "p", "k", ((3, "agent", "s1"), (4, "owner", None)))
    hits = [
        SearchHit("a.md", 1, 9, 0.5, "text", 2, 3, "memory", "Head", 0.25, None, "episodic", meta),
        SearchHit("b.md", 4, 4, 1, "", 4, 4, "sessions", "", None, 0.75, "", None),  # an int score
        SearchHit("c.md", 1, 1, 0.123456789, "x", 1, 1, "memory", None, -0.0, 1e-9, None, None),
    ]
    got = compiled.hit_dicts(hits, SearchHit)
    assert got is not None
    assert [_hexed(d) for d in got] == [_hexed(h.to_dict()) for h in hits]
    assert type(got[1]["score"]) is int


def test_anything_but_a_list_of_search_hits_is_left_to_python() -> None:
    hit = SearchHit("a.md", 1, 1, 0.5, "x", 1, 1, "memory")
    assert compiled.hit_dicts((hit,), SearchHit) is None
    assert compiled.hit_dicts([hit, tuple(hit)], SearchHit) is None
    assert compiled.hit_dicts([], SearchHit) == []


def test_a_score_round_refuses_is_refused_as_round_refuses_it() -> None:
    hit = SearchHit("a.md", 1, 1, "0.5", "x", 1, 1, "memory")  # type: ignore[arg-type]
    with pytest.raises(TypeError) as python:
        hit.to_dict()
    with pytest.raises(TypeError) as c:
        compiled.hit_dicts([hit], SearchHit)
    assert str(c.value) == str(python.value)


class _Emptying:
    """A meta whose to_dict empties the list of hits being mapped (Python run mid-call)."""

    def __init__(self, hits: list[SearchHit]) -> None:
        self.hits = hits

    def to_dict(self) -> dict[str, Any]:
        self.hits.clear()
        return {"origin": "owner"}


def test_a_list_changed_while_its_maps_are_made_is_read_as_it_was() -> None:
    hits: list[SearchHit] = []
    meta: Any = _Emptying(hits)
    hits += [SearchHit(f"{i}.md", i, i, 0.5, "x", i, i, "memory", meta=meta) for i in range(3)]
    got = compiled.hit_dicts(hits, SearchHit)  # the hits' references were borrowed: a crash
    assert [d["path"] for d in got] == ["0.md", "1.md", "2.md"]
    assert all(d["origin"] == "owner" for d in got)


def test_an_answer_is_the_same_with_and_without_the_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(26)
    hits = [
        SearchHit(f"{i}.md", i, i + 3, rng.random(), "t", i, i, "memory", "", rng.random(), None)
        for i in range(10)
    ]
    resp = SearchResponse(hits, "none", "", "keyword", 0.1234567, 3)
    with_module = resp.to_dict()
    monkeypatch.setattr(types, "compiled", None)
    without = resp.to_dict()
    assert [_hexed(h) for h in with_module["results"]] == [_hexed(h) for h in without["results"]]
    assert list(with_module) == list(without)


def test_hit_rows_are_the_rows_protocol_makes() -> None:
    rng = random.Random(3)
    keys = ["path", "start_line", "score", "snippet", "heading", "tier", "origin", "x"]
    values: list[Any] = [None, 0, 1, -1.5, "s", "", [1], {"a": 1}, True]
    same_keys = 0
    for _ in range(20_000):
        hits = [
            {k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 6))}
            for _ in range(rng.randint(0, 5))
        ]
        if hits and rng.random() < 0.5:  # every map with the first's keys, in its order
            hits = [{k: rng.choice(values) for k in hits[0]} for _ in hits]
            same_keys += 1
        want = protocol.hit_rows(hits)
        got = compiled.hit_rows(hits)
        assert got == want and [list(map(type, r)) for r in got["rows"]] == [
            list(map(type, r)) for r in want["rows"]
        ], hits
    assert same_keys > 5_000


def test_hit_rows_of_anything_but_maps_with_str_keys_are_left_to_python() -> None:
    class Key(str):
        pass

    for hits in ([{1: 2}], ({"a": 1},), [{"a": 1}, 3], [{Key("a"): 1}], "ab", None):
        assert compiled.hit_rows(hits) is None
    assert compiled.hit_rows([{"a": 1}, {"b": 2}]) == {
        "fields": ["a", "b"],
        "rows": [[1, None], [None, 2]],
    }
    same = [{"a": 1, "b": 2}, {"b": 3, "a": 4}]  # the same keys in another order
    assert compiled.hit_rows(same) == protocol.hit_rows(same)


def _hexed_rows(block: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    rows = [[v.hex() if isinstance(v, float) else (type(v), v) for v in r] for r in block["rows"]]
    return block["fields"], rows


def test_rows_made_from_the_hits_are_the_rows_of_their_maps() -> None:
    rng = random.Random(7)
    values = _values(rng)
    made = 0
    for _ in range(20_000):
        hits = [
            SearchHit(
                rng.choice(["a.md", "memory/2024-01-02.md"]),
                rng.randint(1, 50),
                rng.randint(1, 50),
                rng.choice(values),
                rng.choice(["", "a line", "two\nlines"]),
                rng.randint(1, 50),
                rng.randint(1, 50),
                rng.choice(["memory", "sessions"]),
                rng.choice(["", "Heading", None]),
                rng.choice([None, rng.choice(values)]),
                rng.choice([None, rng.choice(values)]),
                rng.choice(["", "curated", "episodic", None]),
                HitMeta("agent") if rng.random() < 0.05 else None,
            )
            for _ in range(rng.randint(0, 6))
        ]
        got = compiled.hit_rows_of(hits, SearchHit)
        if any(hit.meta is not None for hit in hits):
            assert got is None  # its maps, then their rows
            continue
        made += 1
        want = protocol.hit_rows([hit.to_dict() for hit in hits])
        assert got is not None and _hexed_rows(got) == _hexed_rows(want), hits
        assert types.hit_rows(hits) == got
    assert made > 10_000


def test_rows_of_anything_but_search_hits_are_left_to_python() -> None:
    hit = SearchHit("a.md", 1, 2, 0.5, "s", 1, 2, "memory")
    for hits in ([hit, ("a.md",)], (hit,), [hit._replace(meta=HitMeta("agent"))], "ab", None):
        assert compiled.hit_rows_of(hits, SearchHit) is None
    bad = hit._replace(score="0.5")  # round refuses it, as to_dict does
    with pytest.raises(TypeError):
        bad.to_dict()
    with pytest.raises(TypeError):
        compiled.hit_rows_of([hit, bad], SearchHit)
