"""Issue 37 item 4: a search's options are one table (memoryd_client/search_options.py) that
the typed clients, the wire params, memctl's parser and its lean ``search --json`` path read:
a row added there reaches the daemon from each of them, with no other line written."""

from __future__ import annotations

import ast
import asyncio
import io
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
