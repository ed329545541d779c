"""The methods that read and write memory itself: ``search``, ``get`` and ``append``.

A search's answer is built below (workspace/search_service.py); a handler here reads its
params, asks, and counts what memory costs each agent.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from memoryd.errors import InvalidParams
from memoryd.files.layout import Layout
from memoryd.files.provenance import (
    APPEND_VIAS,
    ORIGINS,
    SESSION_KINDS,
    check_provenance,
    ledger_for,
)
from memoryd.files.reader import read_lines
from memoryd.index.types import Fusion, Mode, SearchRequest, search_request
from memoryd.jobs.clock import Clock, today_iso
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.runtime.config import Config
from memoryd.runtime.usage import Usage
from memoryd.secrets import mask_text_of
from memoryd.workspace.registry import Registry
from memoryd.workspace.search_service import SearchService
from memoryd.workspace.watcher import Watcher
from memoryd_client import protocol
from memoryd_client.search_terms import (
    DEFAULT_MODE,
    FUSIONS,
    MAX_RESULTS,
    MIN_SCORE_RANGE,
    MODES,
    SOURCES,
)

try:  # _compiled_answer.c: the hits as rows; absent if not built
    from memoryd.index import _compiled as compiled
except ImportError:  # pragma: no cover - a build without a compiler
    compiled = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from typing import NamedTuple  # named_tuple.py says why

    from memoryd.files.append import Appender
    from memoryd.fleet.service import FleetService  # psycopg: imported only in fleet mode
    from memoryd.jobs.session_trust import SessionTrust
    from memoryd.rpc.dispatch import Handler
else:
    from memoryd.named_tuple import NamedTuple


class MemoryMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        searches: SearchService,
        appender: Callable[[], Appender],
        watcher: Watcher,
        trust: Callable[[], SessionTrust],
        clock: Clock,
        config: Callable[[], Config],
        usage: Usage | None = None,
        fleet: FleetService | None = None,
    ) -> None:
        """``watcher``: told of an append at once; ``trust``: what each agent session read
        (append's origin); ``usage``: what memory costs each agent; ``fleet``: another
        host's files (get "host:name"). The appender and the sessions' trust are made, and
        the modules only get and append use imported, when first used: a daemon started
        by a search answers it without them."""
        self.registry = registry
        self.searches = searches
        self.appender = appender
        self.watcher = watcher
        self.trust = trust
        self.clock = clock
        self.config = config
        self.usage = usage
        self.fleet = fleet

    def table(self) -> dict[str, Handler]:
        return {"search": self.search, "get": self.get, "append": self.append}

    async def search(self, p: Params, req: Request) -> dict[str, Any]:
        today = today_iso(self.clock)  # "yesterday"'s today; usage's day
        sources = self.config().search.sources
        asked = plain_search(p.raw, today, sources) or search_params(p, today, sources)
        ref, sreq, everywhere, include_superseded, rows = asked
        answer = await self.searches.answer(
            ref,
            sreq,
            everywhere=everywhere,
            include_superseded=include_superseded,
            quick=True,
            rows=rows,
        )
        req.log_fields["workspace"] = answer.workspace
        if self.usage is not None and answer.index is not None:  # a local workspace's
            self.usage.searched(today, answer.workspace, answer.ranges())
        if rows and answer.hits is None:  # maps (fleet, superseded lines, a hit's meta)
            return {**answer.result, "results": hit_rows(answer.result["results"])}
        return answer.result

    async def get(self, p: Params, req: Request) -> dict[str, Any]:
        path = p.required_path("path")
        ref = p.path("workspace")
        from_line = p.integer("from", lo=1)
        lines = p.integer("lines", lo=1)
        raw = p.flag("raw")
        # What may be put before a model as it is (the session-start digest): lines of
        # untrusted or system origin left out, annotation comments removed.
        injectable = p.flag("injectable")
        p.done()
        answer = await self._get(req, path, ref, from_line, lines)
        if injectable and not self.searches.remote(ref):
            from memoryd.files.injected import injectable_text

            ledger = ledger_for(self.registry.resolve(ref).root.resolve())
            answer["text"] = await asyncio.to_thread(
                injectable_text, answer["text"], ledger, str(answer["path"])
            )
        return answer if raw else mask_text_of(answer)

    async def _get(
        self, req: Request, path: str, ref: str | None, from_line: int | None, lines: int | None
    ) -> dict[str, Any]:
        if self.fleet is not None and (remote := self.fleet.split_ref(ref)):
            req.log_fields["workspace"] = ref
            return await self.fleet.get(*remote, path, from_line, lines)
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        config = self.config()
        cfg = config.index
        # The most a get can answer, reserved before the file is read: pipelined gets from
        # a peer that does not read wait here instead of each holding a file's text.
        await req.reserve(min(config.server.max_frame_bytes, cfg.max_file_bytes))
        layout = Layout(ws.root, cfg.sessions, cfg.extra_paths)
        result = await asyncio.to_thread(
            read_lines, layout, path, from_line, lines, cfg.max_file_bytes
        )
        return result.to_dict()

    async def append(self, p: Params, req: Request) -> dict[str, Any]:
        from memoryd.files.append import normalise_heading
        from memoryd.files.injected import injected_copy

        text = p.required_text("text")
        ref = p.path("workspace")
        date = p.date("date") or dt.date.today()
        heading = normalise_heading(p.text("heading", allow_empty=True))
        # The daemon decides provenance, never the text (docs/provenance.md): a caller that
        # says nothing is an agent.
        prov = check_provenance(
            p.choice("origin", ORIGINS),
            p.text("session_id"),
            p.choice("session_kind", SESSION_KINDS),
            default_origin="agent",
        )
        # How it came (an MCP tool call, an agent's flush of its session) and the agent's
        # tool-use id: the session's observed trust lowers the origin (session_trust.py).
        via = p.choice("via", APPEND_VIAS, default="append") or "append"
        call_id = p.text("call_id")
        p.done()
        ws = self.registry.resolve(ref)
        req.log_fields["workspace"] = ws.name
        config = self.config()
        hold = "untrusted" if via == "mcp" and config.mcp.append_origin == "untrusted" else None
        trust, appender = self.trust(), self.appender()
        prov, observed = await asyncio.to_thread(trust.for_write, prov, via, call_id, hold, ws.root)
        layout = Layout(ws.root, config.index.sessions, config.index.extra_paths)
        if await asyncio.to_thread(injected_copy, text, layout):
            raise InvalidParams(
                "text is only a copy of memory memoryd injected (recall or digest): "
                "it is in memory already, nothing appended",
                {"param": "text", "reason": "recalled"},
            )
        result = await asyncio.to_thread(
            appender.append,
            ws.root,
            text,
            date,
            heading,
            config.index.max_file_bytes,
            prov,
            via,
        )
        self.watcher.submit(ws.name, [result.abs_path])  # searchable without waiting for inotify
        if via == "flush" and prov.session_id and not result.duplicate:
            trust.flushed(prov.session_id)
        out = result.to_dict()
        out["origin"] = prov.origin
        if prov.session_id:
            out["session_observed"] = observed is not None
        return out


def search_params(p: Params, today: str, sources: tuple[str, ...]) -> Search:
    """Every param of ``search``, each read by its getter (any error names it);
    ``sources``: the config's default."""
    query = p.required_text("query")
    ref = p.path("workspace")
    sreq = search_request(  # SearchRequest(...) at a third of its cost
        query=query,
        max_results=p.integer("max_results", lo=1, hi=MAX_RESULTS),
        min_score=p.number("min_score", lo=MIN_SCORE_RANGE[0], hi=MIN_SCORE_RANGE[1]),
        sources=p.choice_list("sources", SOURCES, default=sources),
        mode=cast(Mode, p.choice("mode", MODES, default=DEFAULT_MODE)),
        fusion=cast("Fusion | None", p.choice("fusion", FUSIONS)),
        path_prefix=p.path("path_prefix"),
        since=_iso(p.date("since")),
        until=_iso(p.date("until")),
        projects=p.text_list("project"),
        today=_iso(p.date("now")) or today,
    )
    everywhere = p.flag("fleet")
    include_superseded = p.flag("include_superseded")
    rows = p.flag("hit_rows")  # the hits as rows (protocol.HIT_ROWS)
    p.done()
    return Search(ref, sreq, everywhere, include_superseded, rows)


class Search(NamedTuple):
    """A ``search`` request's params: the workspace, the request, and how to answer."""

    ref: str | None
    request: SearchRequest
    everywhere: bool  # fleet mode: every workspace the fleet publishes
    include_superseded: bool
    rows: bool  # the hits as rows (protocol.HIT_ROWS)


# The params most searches send, each read as its getter would take it as it is.
_PLAIN = frozenset({"query", "workspace", "max_results", "min_score", "mode", "hit_rows"})


def plain_search(raw: dict[str, Any], today: str, sources: tuple[str, ...]) -> Search | None:
    """The params of a search that sends only ``_PLAIN``'s, each a value its getter takes
    as it is (Params: text, path, integer, number, choice, flag), read in one pass; None
    for any other search: its params are read one by one, which names what is wrong."""
    if not raw.keys() <= _PLAIN:
        return None
    query = raw.get("query")
    ref = raw.get("workspace")
    most = raw.get("max_results")
    least = raw.get("min_score")
    score = float(least) if least.__class__ is float or least.__class__ is int else None
    mode: Any = raw.get("mode", DEFAULT_MODE)
    rows = raw.get("hit_rows", False)
    lo, hi = MIN_SCORE_RANGE
    if (
        query.__class__ is not str
        or not query.strip()
        or not (ref is None or (ref.__class__ is str and ref.strip() and "\x00" not in ref))
        or not (most is None or (most.__class__ is int and 1 <= most <= MAX_RESULTS))
        or not (least is None or (score is not None and lo <= score <= hi))
        or mode.__class__ is not str
        or mode not in MODES
        or rows.__class__ is not bool
    ):
        return None
    sreq = search_request(
        query,
        most,
        score,
        sources,
        mode,
        None,
        None,
        None,
        None,
        (),
        today,
    )
    return tuple.__new__(Search, (ref, sreq, False, False, rows))  # Search(...), no Python __new__


def hit_rows(hits: list[dict[str, Any]]) -> dict[str, Any]:
    """``protocol.hit_rows(hits)``, compiled (_compiled_answer.c) when it can be."""
    rows = compiled.hit_rows(hits) if compiled is not None else None
    return rows if rows is not None else protocol.hit_rows(hits)


def _iso(day: dt.date | None) -> str | None:
    return day.isoformat() if day is not None else None
