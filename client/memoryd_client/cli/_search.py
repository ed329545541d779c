"""``memctl search``: where the query comes from, and a search across workspaces (one
search per workspace from here, merged by score: ``_search_json.merge_searches``)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from memoryd_client import protocol
from memoryd_client import search_options as _options
from memoryd_client.cli._base import UsageError
from memoryd_client.cli._search_json import merge_searches
from memoryd_client.client import MemoryClient
from memoryd_client.types import SearchResult


def read_query(args: argparse.Namespace, stdin: TextIO) -> str:
    """The query: words, ``--query TEXT``, or ``-`` for stdin; empty is a usage error."""
    words: list[str] = args.query or []
    if args.query_option is not None and words:
        raise UsageError("give the query once: as words, with --query, or - to read stdin")
    if args.query_option is not None:
        text = str(args.query_option)
    elif words == ["-"]:
        text = stdin.read()
    else:
        text = " ".join(words)
    if not text.strip():
        raise UsageError(
            "empty query: give words to search for (as arguments, with --query, "
            "or - to read them from stdin)"
        )
    return text


def search_options(args: argparse.Namespace) -> dict[str, Any]:
    """What the parser read of a search's options (``_parser.add_search_options``), as the
    clients' ``search`` keywords."""
    return {option.name: getattr(args, option.name) for option in _options.OPTIONS}


def search_many(client: MemoryClient, names: list[str], query: str, **options: Any) -> SearchResult:
    """The best hits of every named workspace, each hit carrying its workspace (merged as
    ``memctl search --json``'s lean path merges them)."""
    merged = merge_searches(
        names,
        lambda name: protocol.with_hit_maps(client.search(query, workspace=name, **options).raw),
        options.get("max_results"),
    )
    return SearchResult.from_wire(merged)
