"""A search's hits as rows (docs/protocol.md, ``hit_rows``): the typed clients ask a daemon
whose hello lists the feature for them, and read them into the same objects as maps; any
other daemon (and any other speaker) gets maps. Rows keep the maps' forward compatibility:
unknown fields are left out, missing or nil ones take their defaults, a wrong value is the
BadResponse its map would give."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import pickle
import random
from typing import Any

import pytest

from fakes.memoryd_server import FakeMemoryd, FakeRequest
from memoryd_client import AsyncMemoryClient, MemoryClient, _wire, _wire_rows, protocol
from memoryd_client.errors import BadResponse
from memoryd_client.types import SearchHit, SearchResult

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def _rows_read_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no row reader written (they are written per list of fields,
    the second time it comes, up to a bound other tests would fill)."""
    monkeypatch.setattr(SearchHit, "_readers", _wire._plan_of(SearchHit))
    monkeypatch.setattr(_wire_rows, "MAX_ROW_FIELDS", 100_000)


HITS: list[dict[str, Any]] = [
    {
        "path": "memory/2025-01-02.md",
        "start_line": 3,
        "end_line": 9,
        "score": 0.8125,
        "snippet": "- line one\nline two",
        "snippet_start_line": 3,
        "snippet_end_line": 4,
        "source": "memory",
        "heading": "2025-01-02",
        "text_score": 0.8125,
        "tier": "episodic",
    },
    {
        "path": "MEMORY.md",
        "start_line": 1,
        "end_line": 2,
        "score": 0.5,
        "snippet": "a rule",
        "source": "memory",
        "tier": "curated",
        "origin": "agent",
        "triggers": ["deploy"],
        "superseded_by": ["MEMORY.md#L9"],
    },
]


def _vars(result: SearchResult) -> list[list[tuple[str, Any, type]]]:
    return [[(k, v, type(v)) for k, v in vars(hit).items()] for hit in result.results]


def _answer(hits: list[dict[str, Any]], rows: bool) -> dict[str, Any]:
    results: Any = protocol.hit_rows(hits) if rows else hits
    return {"results": results, "mode_used": "keyword", "took_ms": 0.3}


def _serve_rows(fake: FakeMemoryd, features: list[str] | None) -> None:
    hello = {"server": "memoryd", "version": "9", "protocol": 1, "pid": 1}
    if features is not None:
        hello["features"] = features

    @fake.handle("hello")
    async def _hello(req: FakeRequest) -> dict[str, Any]:
        return hello

    @fake.handle("search")
    async def _search(req: FakeRequest) -> dict[str, Any]:
        return _answer(HITS, bool(req.params.get("hit_rows")))


def test_hit_rows_are_the_maps_once_the_keys_and_nil_for_a_key_a_hit_has_not() -> None:
    rows = protocol.hit_rows(HITS)
    assert rows["fields"] == [*HITS[0], "origin", "triggers", "superseded_by"]
    assert rows["rows"][1][:4] == ["MEMORY.md", 1, 2, 0.5]
    assert rows["rows"][1][rows["fields"].index("heading")] is None
    assert protocol.hit_maps(rows) == HITS
    assert protocol.hit_rows([]) == {"fields": [], "rows": []}
    answer = _answer(HITS, rows=True)
    assert protocol.with_hit_maps(answer) == _answer(HITS, rows=False)
    plain = _answer(HITS, rows=False)
    assert protocol.with_hit_maps(plain) is plain


@pytest.mark.parametrize("features", [["hit_rows"], ["hit_rows", "later"], [], None])
def test_the_client_asks_for_rows_only_of_a_daemon_that_lists_them(
    fake_memoryd: FakeMemoryd, features: list[str] | None
) -> None:
    _serve_rows(fake_memoryd, features)
    with MemoryClient(fake_memoryd.path) as client:
        first, second = client.search("rule"), client.search("rule", max_results=2)
        plain = client.call("search", {"query": "rule"})
    asks = "hit_rows" in (features or [])
    sent = [r.params for r in fake_memoryd.calls("search")]
    assert sent[:2] == [
        {"query": "rule", **({"hit_rows": True} if asks else {})},
        {"query": "rule", "max_results": 2, **({"hit_rows": True} if asks else {})},
    ]
    assert sent[2] == {"query": "rule"} and plain["results"] == HITS  # call(): the map
    assert _vars(first) == _vars(second) == _vars(SearchResult.from_wire(_answer(HITS, False)))
    assert isinstance(first.raw["results"], dict if asks else list)
    assert protocol.with_hit_maps(first.raw)["results"] == HITS


def test_the_async_client_asks_for_rows_too(fake_memoryd: FakeMemoryd) -> None:
    _serve_rows(fake_memoryd, ["hit_rows"])

    async def run() -> SearchResult:
        async with AsyncMemoryClient(fake_memoryd.path) as client:
            return await client.search("rule")

    result = asyncio.run(run())
    assert fake_memoryd.calls("search")[0].params == {"query": "rule", "hit_rows": True}
    assert _vars(result) == _vars(SearchResult.from_wire(_answer(HITS, False)))


def _rows_read(fields: list[Any], rows: list[Any]) -> list[SearchHit]:
    return SearchResult.from_wire({"results": {"fields": fields, "rows": rows}}).results


def test_rows_with_unknown_missing_or_nil_fields_read_as_their_maps() -> None:
    fields = ["score", "end_line", "start_line", "path", "future", "heading", "snippet"]
    rows = [
        [0.5, 2, 1, "a.md", {"new": 1}, None, None],  # nil snippet: absent, ""
        [1, 4, 3, "b.md", None, "h", "s"],  # an integer score: read as the float
    ]
    for _ in range(2):  # read once to find each shape, once with it
        first, second = _rows_read(fields, rows)
        assert first == SearchHit(path="a.md", start_line=1, end_line=2, score=0.5, snippet="")
        assert not hasattr(first, "future") and first.source == "memory"
        assert second.heading == "h" and second.score == 1.0 and type(second.score) is float
        first.triggers.append("x")
        assert second.triggers == [] and first.line_origins is not second.line_origins


def test_a_hit_read_from_a_row_is_the_object_its_constructor_makes() -> None:
    fields = ["path", "start_line", "end_line", "score", "snippet", "source", "heading"]
    fields += ["text_score", "vector_score", "tier"]
    rows = [
        ["a.md", 1, 9, 0.75, "s", "memory", "h", 0.5, None, "episodic"],
        ["b.md", 2, 3, 0.5, "t", None, None, None, 0.25, None],  # nils: their defaults
    ]
    made = [
        SearchHit("a.md", 1, 9, 0.75, "s", heading="h", text_score=0.5, tier="episodic"),
        SearchHit("b.md", 2, 3, 0.5, "t", vector_score=0.25),
    ]
    for _ in range(3):  # read as maps, then by the reader written, then by it again
        read = _rows_read(fields, [list(row) for row in rows])
        assert read == made and list(map(repr, read)) == list(map(repr, made))
        assert [list(vars(hit).items()) for hit in read] == [list(vars(h).items()) for h in made]
        assert list(map(dataclasses.asdict, read)) == list(map(dataclasses.asdict, made))
        assert pickle.loads(pickle.dumps(read)) == made and copy.deepcopy(read) == made
        assert dataclasses.replace(read[0], score=0.5) == dataclasses.replace(made[0], score=0.5)
        read[0].triggers.append("x")
        read[0].line_origins.append("y")  # type: ignore[arg-type]
        assert read[1].triggers == [] and read[1].line_origins == [] and read[0].supersedes == []
        assert made[0].triggers == []


def test_a_reader_is_written_for_fields_met_twice_and_no_more_lists_than_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = SearchHit._readers
    assert plan is not None
    monkeypatch.setattr(_wire_rows, "MAX_ROW_FIELDS", 2)
    written: list[tuple[str, ...]] = []
    write = _wire_rows._write_reader

    def counted(cls: Any, plan: Any, names: tuple[str, ...]) -> Any:
        written.append(names)
        return write(cls, plan, names)

    monkeypatch.setattr(_wire_rows, "_write_reader", counted)
    fields = ["path", "start_line", "end_line", "score", "snippet"]
    row = ["a.md", 1, 2, 0.5, "s"]
    for extra in ([], [], ["heading"], ["tier"], ["origin"], ["tier"], ["heading"]):
        names, values = [*fields, *extra], [*row, *(["x"] * len(extra))]
        read = _rows_read(names, [values])
        as_map = SearchResult.from_wire({"results": [dict(zip(names, values, strict=True))]})
        assert _vars(SearchResult(results=read)) == _vars(as_map)
    # a reader is written the second time a list of fields comes, none past two lists
    assert written == [tuple(fields), (*fields, "heading")] == list(plan.rows)


def test_the_last_list_of_fields_is_read_by_its_own_reader_whatever_came_between() -> None:
    """Rows are read by the reader of the fields before when their list is the same (the
    list kept as it was, not the answer's, which its caller may change), else by the
    plan's; a plan made again starts from nothing."""
    fields = ["path", "start_line", "end_line", "score", "snippet"]
    row = ["a.md", 1, 2, 0.5, "s"]
    swapped = ["snippet", *fields[1:4], "path"]  # values of the same types, other fields
    lists = [fields, [*fields, "heading"], swapped, [*fields, "tier"]]
    rng = random.Random(7)
    for n in range(60):
        names = rng.choice(lists) if n > 8 else lists[n % 4]
        values = [dict(zip(fields, row, strict=True)).get(k, "x") for k in names]
        sent = list(names)
        read = _rows_read(sent, [values, values])
        sent[0], sent[-1] = sent[-1], sent[0]  # the answer's own list changed after it was read
        as_map = SearchResult.from_wire({"results": [dict(zip(names, values, strict=True))] * 2})
        assert _vars(SearchResult(results=read)) == _vars(as_map)
    plan = SearchHit._readers
    assert plan is not None and len(plan.rows) == 4 and all(map(callable, plan.rows.values()))
    SearchHit._readers = _wire._plan_of(SearchHit)  # put back by the autouse fixture
    _rows_read(list(fields), [row])
    assert SearchHit._readers.rows == {tuple(fields): _wire_rows._ONCE}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (["a.md", "1", 2, 0.5], "'start_line' should be an integer, got '1'"),
        (["a.md", True, 2, 0.5], "'start_line' should be an integer, got True"),
        (["a.md", 1, None, 0.5], "'end_line' should be an integer, got None"),
        ([None, 1, 2, 0.5], "'path' should be a string, got None"),
        (["a.md", 1, 2], "'results' should hold rows of 4 values"),
        ("a.md", "'results' should hold rows of 4 values"),
    ],
)
def test_a_wrong_row_is_the_bad_response_its_map_would_give(row: Any, message: str) -> None:
    fields = ["path", "start_line", "end_line", "score"]
    _rows_read(fields, [["a.md", 1, 2, 0.5]])  # a good shape met first
    with pytest.raises(BadResponse, match=message):
        _rows_read(fields, [["a.md", 1, 2, 0.5], row])


@pytest.mark.parametrize(
    "block",
    [
        {"rows": []},
        {"fields": ["path"], "rows": "x"},
        {"fields": [1], "rows": []},
        {"fields": ["path", "path"], "rows": []},
    ],
)
def test_rows_without_their_fields_are_a_bad_response(block: dict[str, Any]) -> None:
    with pytest.raises(BadResponse, match="'results' should be a list, or rows with their"):
        SearchResult.from_wire({"results": block})


_VALUES: list[Any] = ["a.md", "", 0, 3, True, 0.5, 1.0, None, ["x"], [1], {"k": 1}, "x"]


@pytest.mark.parametrize("seed", range(3))
def test_random_hits_read_from_rows_are_the_objects_read_from_their_maps(seed: int) -> None:
    rng = random.Random(seed)
    keys = [*SearchHit.__dataclass_fields__, "superseded_by", "brand_new"]
    keys.remove("_what")
    for _ in range(300):
        hits = []
        for _ in range(rng.randint(1, 4)):
            hit: dict[str, Any] = {"path": "a.md", "start_line": 1, "end_line": 2, "score": 0.5}
            for key in rng.sample(keys, rng.randint(0, 6)):
                hit[key] = rng.choice(_VALUES)
            for key in rng.sample(sorted(hit), rng.randint(0, 1)):
                del hit[key]
            hits.append({k: v for k, v in hit.items() if v is not None})
        try:
            want: Any = _vars(SearchResult.from_wire(_answer(hits, rows=False)))
        except BadResponse as exc:
            want = str(exc)
        for _ in range(2):
            try:
                got: Any = _vars(SearchResult.from_wire(_answer(hits, rows=True)))
            except BadResponse as exc:
                got = str(exc)
            assert got == want, hits
