"""What agents' hooks ask before a prompt and what memory costs them: ``recall`` (memory
for a prompt: a search, workspace/search_service.py, with its own selection on top),
``stats`` and ``stats.record`` (runtime/usage.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidParams
from memoryd.files.annotations import normalize_project
from memoryd.index.search import recall as _recall
from memoryd.index.types import SearchRequest
from memoryd.jobs.clock import Clock
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.runtime import usage
from memoryd.runtime.config import Config
from memoryd.runtime.usage import Usage
from memoryd.workspace.registry import Registry
from memoryd.workspace.search_service import SearchService
from memoryd_client.search_terms import SOURCE_MEMORY, SOURCES

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.rpc.dispatch import Handler


def agent_of(p: Params, req: Request) -> str:
    """Who is asking, for usage: the ``agent`` a caller names, else its hello's client."""
    named = p.text("agent")
    return named or (req.conn.client if req.conn is not None else "") or "unknown"


def triggered(index: WorkspaceIndex, prompt: str, projects: tuple[str, ...]) -> list[_recall.Item]:
    """The trigger lane's items for ``prompt`` (index/triggers.py): the prompt's vector is
    the one its search embedded (cached); phrases are embedded once, when vectors are on."""
    embedder = index.queries.embedder
    qvec = embedder.cached_query(prompt) if embedder is not None else None
    found = index.triggers.match(
        prompt,
        frozenset(normalize_project(p) for p in projects),
        qvec,
        embedder.query_vector if embedder is not None and qvec is not None else None,
    )
    return [
        _recall.Item(t.path, t.line, t.line, t.score, t.text, SOURCE_MEMORY, t.phrase)
        for t in found
    ]


class RecallMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        searches: SearchService,
        usage: Usage,
        clock: Clock,
        config: Callable[[], Config],
    ) -> None:
        """``usage``: what memory costs each agent (recall counts its blocks there)."""
        self.registry = registry
        self.searches = searches
        self.usage = usage
        self.clock = clock
        self.config = config

    def table(self) -> dict[str, Handler]:
        return {"recall": self.recall, "stats": self.stats, "stats.record": self.stats_record}

    async def recall(self, p: Params, req: Request) -> dict[str, Any]:
        query = p.required_text("query")
        ref = p.path("workspace")
        budget = p.integer("budget_tokens", lo=50, hi=8000, default=_recall.DEFAULT_BUDGET_TOKENS)
        min_score = p.number("min_score", lo=0.0, hi=1.0, default=_recall.DEFAULT_MIN_SCORE)
        sources = p.choice_list("sources", SOURCES, default=self.config().search.sources)
        projects = p.text_list("project")
        now = p.date("now")
        include_superseded = p.flag("include_superseded")  # as search (docs/lifecycle.md)
        agent = agent_of(p, req)
        p.done()
        assert budget is not None and min_score is not None
        started = time.monotonic()
        prompt = query[: _recall.MAX_QUERY_CHARS]
        sreq = SearchRequest(
            query=prompt,
            max_results=_recall.candidates(budget),
            min_score=min_score,
            sources=sources,
            projects=projects,
            today=(now or self.clock.now().date()).isoformat(),
        )
        answer = await self.searches.answer(
            ref, sreq, include_superseded=include_superseded, quick=True
        )
        req.log_fields["workspace"] = answer.workspace
        found = answer.result
        first: list[_recall.Item] = []
        index = answer.index
        if index is not None:  # a local workspace: its trigger lines
            if index.triggers.settled(with_vectors=index.queries.embedder is not None):
                # Nothing to read or embed (most workspaces have no trigger lines): on the
                # loop; a thread's hop there and back was a fifth of a recall.
                first = triggered(index, prompt, projects)
            else:
                first = await asyncio.to_thread(triggered, index, prompt, projects)
        out = _recall.select(found["results"], budget, first)
        out["took_ms"] = round((time.monotonic() - started) * 1000, 3)
        self.usage.recalled(self._today(), agent, answer.workspace, out)  # a deque append
        if found.get("degraded"):
            out["degraded"] = found["degraded"]
        return out

    def _today(self) -> str:
        return self.clock.now().date().isoformat()

    async def stats(self, p: Params, req: Request) -> dict[str, Any]:
        """What memory cost each agent per day, for the last ``days`` (docs/protocol.md)."""
        days = p.integer("days", lo=1, hi=366, default=30)
        ref = p.path("workspace")
        p.done()
        assert days is not None
        name = self.registry.resolve(ref).name if ref is not None else None
        since = (self.clock.now().date() - dt.timedelta(days=days - 1)).isoformat()
        rows = await asyncio.to_thread(self.usage.report, since, name)
        return {"days": days, "since": since, "rows": rows}

    async def stats_record(self, p: Params, req: Request) -> dict[str, Any]:
        """A count only the client knows (a hook's digest), added to today's row."""
        metric = p.choice("metric", usage.CLIENT_METRICS)
        value = p.integer("value", lo=0, hi=10_000_000, default=1)
        ref = p.path("workspace")
        agent = agent_of(p, req)
        p.done()
        if metric is None:
            raise InvalidParams("metric is required", {"param": "metric"})
        assert value is not None
        name = self.registry.resolve(ref).name if ref is not None else ""
        self.usage.add(self._today(), agent, name, metric, value)
        return {"recorded": True}
