"""Issue 37 item 4: a search's options are one table (memoryd_client/search_options.py) that
the typed clients, the wire params, memctl's parser and its lean ``search --json`` path read:
a row added there reaches the daemon from each of them, with no other line written."""

from __future__ import annotations

import ast
import asyncio
import datetime
import io
import random
from pathlib import Path
from typing import Any

import pytest

from fakes.memoryd_server import FakeMemoryd
from memoryd_client import AsyncMemoryClient, MemoryClient, search_options
from memoryd_client.cli import main as memctl
from memoryd_client.cli._search_json import search_json
from memoryd_client.search_options import CHOICE, COUNT, DAY, FLAG, SCORE, TEXT, Option

# A row's kind (and repeat) gives its field's type in SearchOptions, as written there.
TYPE_OF_KIND = {
    COUNT: "int | None",
    SCORE: "float | None",
    TEXT: "str | None",
    CHOICE: "str | None",
    DAY: "DateLike | None",
    FLAG: "bool",
}
REPEATED = "str | Iterable[str] | None"


def _typed_fields() -> list[tuple[str, str]]:
    """SearchOptions' fields as written (it exists for the type checker only)."""
    tree = ast.parse(Path(search_options.__file__).read_text(encoding="utf-8"))
    (typed,) = (
        n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "SearchOptions"
    )
    return [
        (f.target.id, ast.unparse(f.annotation))
        for f in typed.body
        if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)
    ]


def test_the_typed_options_are_the_tables_rows_in_order_each_typed_as_its_kind() -> None:
    expected = [
        (o.name, REPEATED if o.repeat else TYPE_OF_KIND[o.kind]) for o in search_options.OPTIONS
    ]
    assert _typed_fields() == expected


def test_both_clients_type_a_searchs_options_by_the_table() -> None:
    # mypy checks a caller's keywords against SearchOptions: a misspelt option or a value
    # of the wrong type fails the caller's type check, as an explicit parameter would.
    for search in (MemoryClient.search, AsyncMemoryClient.search):
        assert search.__annotations__["options"] == "Unpack[SearchOptions]"


def test_every_row_is_a_param_the_daemons_handlers_read() -> None:
    # The daemon side of a row: the search handler reads the param by the row's name.
    rpc = Path(__file__).parents[2] / "daemon" / "memoryd" / "rpc"
    source = "".join(f.read_text(encoding="utf-8") for f in sorted(rpc.glob("*.py")))
    missing = [o.name for o in search_options.OPTIONS if f'("{o.name}"' not in source]
    assert not missing, missing


# New rows of each kind, what memctl is given, and what the wire must then carry.
NEW_ROWS = [
    (Option("language", "--language", metavar="CODE", help="x"), ["--language", "de"], "de"),
    (Option("before", "--before", kind=DAY, help="x"), ["--before", "2025-01-02"], "2025-01-02"),
    (Option("exact", "--exact", kind=FLAG, help="x"), ["--exact"], True),
    (Option("tag", "--tag", repeat=True, help="x"), ["--tag", "a", "--tag=b"], ["a", "b"]),
    (Option("top", "--top", kind=COUNT, help="x"), ["--top", "4"], 4),
    (Option("rank", "--rank", choices="FUSIONS", help="x"), ["--rank", "rrf"], "rrf"),
]


@pytest.mark.parametrize(("row", "flags", "wire"), NEW_ROWS, ids=lambda v: getattr(v, "name", ""))
def test_a_new_row_reaches_the_wire_from_both_clients_the_parser_and_the_lean_path(
    fake_memoryd: FakeMemoryd,
    monkeypatch: pytest.MonkeyPatch,
    row: Option,
    flags: list[str],
    wire: Any,
) -> None:
    monkeypatch.setattr(search_options, "OPTIONS", (*search_options.OPTIONS, row))
    value: Any = wire
    sock = str(fake_memoryd.path)
    with MemoryClient(sock) as client:
        client.search("billing", workspace="ws", **{row.name: value})

    async def from_async() -> None:
        async with AsyncMemoryClient(sock) as client:
            await client.search("billing", workspace="ws", **{row.name: value})

    asyncio.run(from_async())
    argv = ["search", "billing", "-w", "ws", *flags, "--socket", sock]
    assert memctl(argv, stdout=io.StringIO(), stderr=io.StringIO()) == 0
    assert search_json([*argv, "--json"], io.StringIO(), io.StringIO()) == 0
    sent = [r.params for r in fake_memoryd.calls("search")]
    assert sent == [{"query": "billing", "workspace": "ws", row.name: wire}] * 4


def test_an_option_left_at_its_default_is_not_sent_and_an_unknown_one_is_a_type_error(
    fake_memoryd: FakeMemoryd,
) -> None:
    with MemoryClient(str(fake_memoryd.path)) as client:
        client.search("billing", max_results=None, fleet=False, include_superseded=False)
        with pytest.raises(TypeError, match="'max_result'"):
            client.search("billing", max_result=3)  # type: ignore[call-arg]
    assert [r.params for r in fake_memoryd.calls("search")] == [{"query": "billing"}]


def _written_as_its_kind_says(option: Option, value: Any) -> Any:
    """The rule search_params follows, row by row (None: not sent)."""
    if value is None:
        return None
    if option.kind == FLAG:
        return True if value else None
    if option.repeat:
        return [value] if isinstance(value, str) else list(value)
    if option.kind == DAY:
        return value if isinstance(value, str) else value.isoformat()
    return value


_VALUES: dict[str, Any] = {
    COUNT: [None, 1, 10, 0],
    SCORE: [None, 0, 0.5, 1.0],
    TEXT: [None, "", "memory/"],
    CHOICE: [None, "keyword", "rrf"],
    DAY: [None, "2024-03-01", datetime.date(2023, 10, 13)],
    FLAG: [None, False, True, 0, 1, "yes"],
}


@pytest.mark.parametrize("seed", range(40))
def test_search_params_write_each_option_as_its_row_says(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any options in any order (the table made again halfway: a row added, then the table
    as it was), each written as its row's kind says, None and an off flag left out."""
    from memoryd_client._params import search_params

    rng = random.Random(seed)
    rows = list(search_options.OPTIONS)
    if seed % 2:
        extra = Option("rank", "--rank", kind=DAY, help="x")
        monkeypatch.setattr(search_options, "OPTIONS", (*search_options.OPTIONS, extra))
        rows.append(extra)
    for _ in range(30):
        picked = rng.sample(rows, rng.randint(0, len(rows)))
        options: dict[str, Any] = {}
        for option in picked:
            pool = ["a", ("x", "y"), None] if option.repeat else _VALUES[option.kind]
            options[option.name] = rng.choice(pool)
        expected: dict[str, Any] = {"query": "q", "workspace": "ws"}
        for option in picked:
            wire = _written_as_its_kind_says(option, options[option.name])
            if wire is not None:
                expected[option.name] = wire
        got = search_params("q", workspace="ws", **options)
        assert list(got.items()) == list(expected.items())
    monkeypatch.undo()
    with pytest.raises(TypeError, match="'rank'"):
        search_params("q", rank="2024-01-01")  # type: ignore[call-arg]
