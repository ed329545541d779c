"""Reading results from their wire maps (client/memoryd_client/_wire.py): a map of a shape
met before whose every value its field takes as it is is read at once (``from_wire``'s
shapes); every other map field by field (``_read``). Both must make the same object, or
raise the same BadResponse, for any map."""

from __future__ import annotations

import random
from typing import Any

import pytest

from memoryd_client import _wire
from memoryd_client.errors import BadResponse
from memoryd_client.types import GetResult, Hello, SearchHit, SearchResult, Status, WorkspaceStatus

# Values of every kind a field may meet: its own type, another one, nil, a list, a map.
_VALUES: list[Any] = [
    "a.md",
    "",
    0,
    7,
    -1,
    True,
    False,
    0.5,
    1.0,
    None,
    ["x", "y"],
    "one",
    [{"line": 2, "origin": "untrusted"}],
    {"k": "v"},
    [1, 2],
    b"bytes",
]
_HIT_KEYS = [*SearchHit.__dataclass_fields__, "superseded_by", "brand_new", "raw"]


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        obj = read()
    except BadResponse as exc:
        return "error", str(exc)
    return "object", (type(obj), list(vars(obj).items()), [type(v) for v in vars(obj).values()])


def _random_hit(rng: random.Random) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "path": "memory/a.md",
        "start_line": 1,
        "end_line": 4,
        "score": 0.75,
        "snippet": "text",
    }
    for key in rng.sample(_HIT_KEYS, rng.randint(0, 8)):
        wire[key] = rng.choice(_VALUES)
    for key in rng.sample(sorted(wire), rng.randint(0, 2)):
        del wire[key]
    return wire


@pytest.mark.parametrize("seed", range(4))
def test_a_map_read_at_once_is_the_object_read_field_by_field(seed: int) -> None:
    rng = random.Random(seed)
    plan = _wire._plan_of(SearchHit)
    for _ in range(500):
        wire = _random_hit(rng)
        slow = _outcome(lambda w=wire: SearchHit._read(plan, dict(w)))
        # the first read of a shape finds how it is read, the second reads it so
        assert _outcome(lambda w=wire: SearchHit.from_wire(dict(w))) == slow, wire
        assert _outcome(lambda w=wire: SearchHit.from_wire(dict(w))) == slow, wire


def test_unknown_keys_are_left_out_of_the_object_and_kept_in_raw() -> None:
    wire = {"server": "memoryd", "version": "9", "protocol": 1, "pid": 3, "future": [1]}
    for _ in range(2):
        hello = Hello.from_wire(wire)
        assert "future" not in vars(hello) and hello.raw is wire
        assert hello == Hello(server="memoryd", version="9", protocol=1, pid=3)
    hit = {"path": "a.md", "start_line": 1, "end_line": 2, "score": 0.5, "superseded_by": ["b"]}
    for _ in range(2):
        read = SearchHit.from_wire(hit)
        assert not hasattr(read, "superseded_by") and read.snippet == ""


def test_a_shape_read_before_with_a_value_of_another_type_is_read_by_its_reader() -> None:
    wire = {"path": "a.md", "start_line": 1, "end_line": 2, "score": 0.5, "snippet": "s"}
    assert SearchHit.from_wire(wire).score == 0.5
    as_int = SearchHit.from_wire({**wire, "score": 1})
    assert as_int.score == 1.0 and type(as_int.score) is float
    with pytest.raises(BadResponse, match="'start_line' should be an integer, got '1'"):
        SearchHit.from_wire({**wire, "start_line": "1"})
    with pytest.raises(BadResponse, match="'start_line' should be an integer, got True"):
        SearchHit.from_wire({**wire, "start_line": True})
    with pytest.raises(BadResponse, match="'snippet' should be a string, got None"):
        SearchHit.from_wire({**wire, "snippet": None})
    with pytest.raises(BadResponse, match="'end_line' should be an integer, got None"):
        SearchHit.from_wire({k: v for k, v in wire.items() if k != "end_line"})


def test_objects_read_at_once_share_nothing_mutable() -> None:
    wire = {"path": "a.md", "start_line": 1, "end_line": 2, "score": 0.5, "snippet": "s"}
    first, second = SearchHit.from_wire(wire), SearchHit.from_wire(dict(wire))
    first.triggers.append("x")
    first.path = "b.md"
    assert second.triggers == [] and second.path == "a.md"
    assert vars(SearchHit.from_wire(wire)) == vars(second)
    assert first.supersedes is not second.supersedes
    assert first.line_origins is not second.line_origins


def test_a_field_whose_wire_key_differs_is_read_under_its_key() -> None:
    wire = {"path": "a.md", "from": 3, "lines": 2, "text": "x\ny", "total_lines": 9}
    for _ in range(2):
        got = GetResult.from_wire(wire)
        assert (got.from_line, got.lines, got.masked) == (3, 2, 0)
    # a key named like the field, not its key: unknown, the field keeps its wire default
    for _ in range(2):
        got = GetResult.from_wire({"path": "a.md", "from_line": 5, "text": ""})
        assert got.from_line == 1 and got.raw["from_line"] == 5


def test_a_search_result_reads_its_hits_and_keeps_its_map() -> None:
    hit = {"path": "a.md", "start_line": 1, "end_line": 2, "score": 0.5, "snippet": "s"}
    wire = {"results": [hit, {**hit, "tier": "episodic"}], "took_ms": 0.2, "next": 1}
    result = SearchResult.from_wire(wire)
    assert [h.tier for h in result.results] == [None, "episodic"]
    assert result.raw is wire and result.took_ms == 0.2
    with pytest.raises(BadResponse, match="'results' should be a list"):
        SearchResult.from_wire({"results": {"a": 1}})


def test_shapes_are_remembered_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_wire, "MAX_SHAPES", 3)
    plan = _wire._plan_of(SearchHit)
    monkeypatch.setattr(SearchHit, "_readers", plan)
    base = {"path": "a.md", "start_line": 1, "end_line": 2, "score": 0.5}
    for i in range(6):
        hit = SearchHit.from_wire({**base, f"extra{i}": i})
        assert hit.path == "a.md" and not hasattr(hit, f"extra{i}")
    assert plan.shapes is not None and len(plan.shapes) == 3


_RESULTS: list[Any] = [
    [],
    [{"path": "a.md", "start_line": 1, "end_line": 2, "score": 0.5, "snippet": "s"}],
    {"fields": ["path", "start_line", "end_line", "score"], "rows": [["a.md", 1, 2, 0.5]]},
    {"fields": ["path"], "rows": [[1]]},
    "results",
]


@pytest.mark.parametrize("cls", [SearchResult, WorkspaceStatus, Status])
def test_a_map_of_a_class_with_readers_of_its_own_reads_as_field_by_field(cls: Any) -> None:
    rng = random.Random(cls.__name__)
    plan = _wire._plan_of(cls)
    keys = [k for k in cls.__dataclass_fields__ if k not in ("_what", "_readers")]
    for _ in range(2_000):
        wire = {k: rng.choice(_VALUES) for k in rng.sample(keys, rng.randint(0, len(keys)))}
        if "results" in wire and rng.random() < 0.7:
            wire["results"] = rng.choice(_RESULTS)
        if rng.random() < 0.2:
            wire["future"] = rng.choice(_VALUES)
        slow = _outcome(lambda w=wire: cls._read(plan, dict(w)))
        for _ in range(2):  # the shape found, then read so
            assert _outcome(lambda w=wire: cls.from_wire(dict(w))) == slow, wire


def test_a_search_answer_whose_degraded_is_a_string_is_read_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A keyword daemon's ``degraded`` is one string: the list made of it after the map is
    read at once, as its reader makes it field by field (a new list each time)."""
    plan = _wire._plan_of(SearchResult)
    monkeypatch.setattr(SearchResult, "_readers", plan)
    wire = {"results": [], "mode_used": "keyword", "degraded": "vectors off", "took_ms": 0.1}
    slow = SearchResult._read(plan, dict(wire))
    shape = (*wire, *map(type, wire.values()))
    for _ in range(2):
        read = SearchResult.from_wire(dict(wire))
        assert vars(read) == vars(slow) and read.degraded == ["vectors off"]
    assert plan.shapes is not None and plan.shapes[shape] is not None  # read at once
    first, second = SearchResult.from_wire(dict(wire)), SearchResult.from_wire(dict(wire))
    first.degraded.append("x")
    assert second.degraded == ["vectors off"]
