"""The methods agents' hooks call: ``recall`` (memory for a prompt) and ``flush`` (a
transcript's durable facts into the daily file, by the LLM, in the background).

Recall is a search (workspace/search_service.py) with its own selection on top, flush
hands a run to the flush queue and returns; observe and stats are what agents' observers
and hooks report.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidParams, MemorydError
from memoryd.files.annotations import normalize_project
from memoryd.files.provenance import ORIGINS, clean_session_id, least_trusted
from memoryd.index.search import recall as _recall
from memoryd.index.types import SearchRequest
from memoryd.jobs import agent_flush, session_trust
from memoryd.jobs.clock import Clock
from memoryd.jobs.flush_queue import FlushQueue
from memoryd.jobs.history import History
from memoryd.jobs.session_trust import SessionTrust
from memoryd.jobs.transcript_folders import check_transcript
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request
from memoryd.runtime import usage
from memoryd.runtime.config import Config
from memoryd.runtime.usage import Usage
from memoryd.workspace.registry import Registry, Workspace
from memoryd.workspace.search_service import SearchService
from memoryd_client.search_terms import SESSION_KINDS, SOURCE_MEMORY, SOURCES

if TYPE_CHECKING:
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.rpc.dispatch import Handler

MAX_SESSION_ID = 200
FLUSH_TRIGGERS = ("hook", "manual")  # an agent's hook (the default), or a person (memctl)


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


class AgentMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        searches: SearchService,
        flushes: FlushQueue,
        history: History,
        trust: SessionTrust,
        usage: Usage,
        clock: Clock,
        config: Callable[[], Config],
        env: Mapping[str, str],
    ) -> None:
        """``flushes``: flush's queue (its runs' ``history`` says what a transcript had
        flushed); ``trust``: what each agent session read; ``usage``: what memory costs
        each agent; ``env``: where the agents' transcript folders are."""
        self.registry = registry
        self.searches = searches
        self.flushes = flushes
        self.history = history
        self.trust = trust
        self.usage = usage
        self.clock = clock
        self.config = config
        self.env = env

    def table(self) -> dict[str, Handler]:
        return {
            "recall": self.recall,
            "flush": self.flush,
            "flush.agent": self.flush_agent,
            "observe": self.observe,
            "stats": self.stats,
            "stats.record": self.stats_record,
        }

    async def recall(self, p: Params, req: Request) -> dict[str, Any]:
        query = p.required_text("query")
        ref = p.path("workspace")
        budget = p.integer("budget_tokens", lo=50, hi=8000, default=_recall.DEFAULT_BUDGET_TOKENS)
        min_score = p.number("min_score", lo=0.0, hi=1.0, default=_recall.DEFAULT_MIN_SCORE)
        sources = p.choice_list("sources", SOURCES, default=self.config().search.sources)
        projects = p.text_list("project")
        now = p.date("now")
        include_superseded = p.flag("include_superseded")  # as search (docs/lifecycle.md)
        agent = self._agent(p, req)
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
        answer = await self.searches.answer(ref, sreq, include_superseded=include_superseded)
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

    def _agent(self, p: Params, req: Request) -> str:
        """Who is asking, for usage: the ``agent`` a caller names, else its hello's client."""
        named = p.text("agent")
        return named or (req.conn.client if req.conn is not None else "") or "unknown"

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
        agent = self._agent(p, req)
        p.done()
        if metric is None:
            raise InvalidParams("metric is required", {"param": "metric"})
        assert value is not None
        name = self.registry.resolve(ref).name if ref is not None else ""
        self.usage.add(self._today(), agent, name, metric, value)
        return {"recorded": True}

    async def flush(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        transcript = p.required_path("transcript")
        session_id = clean_session_id(p.required_text("session_id"))
        wait = p.flag("wait")
        trigger = p.choice("trigger", FLUSH_TRIGGERS, default="hook") or "hook"
        kind = p.choice("session_kind", SESSION_KINDS)  # cron, heartbeat, subagent: skipped
        agent = self._agent(p, req)
        p.done()
        ws, path = self._transcript(ref, transcript, session_id)
        req.log_fields.update(workspace=ws.name, session=session_id[:80])
        queued = self.flushes.submit(ws, path, session_id, trigger, kind, agent=agent)
        if not wait:
            return {"queued": True, "workspace": ws.name}
        record = await queued
        return {"queued": True, "workspace": ws.name, "run": record.to_dict(self.clock.tz)}

    async def flush_agent(self, p: Params, req: Request) -> dict[str, Any]:
        """Whether the agent's own model should save the session's facts now (a Stop hook
        without an LLM configured); when it should, the offset moves past those lines."""
        ref = p.path("workspace")
        transcript = p.required_path("transcript")
        session_id = clean_session_id(p.required_text("session_id"))
        p.done()
        ws, path = self._transcript(ref, transcript, session_id)
        req.log_fields.update(workspace=ws.name, session=session_id[:80])
        history = self.history
        now = self.clock.now().timestamp()
        try:
            found = await asyncio.to_thread(
                agent_flush.check, history, path, session_id, ws.root, now
            )
        except OSError as exc:
            raise InvalidParams(
                f"cannot read the transcript {path}: {exc.strerror or exc}",
                {"param": "transcript"},
            ) from None
        if found.due:  # the save the agent now writes covers the whole stretch it read
            await asyncio.to_thread(self.trust.arm_save, session_id, found.origin)
        return {"workspace": ws.name, **found.to_wire()}

    async def observe(self, p: Params, req: Request) -> dict[str, Any]:
        """An observer says what an agent session did (jobs/session_trust.py): the user
        spoke, the session read something, or it is about to call a tool of ours."""
        given = p.text("session_id")
        given = clean_session_id(given) if given is not None else None
        event = p.choice("event", session_trust.EVENTS)
        origin = p.choice("origin", ORIGINS)
        tool = p.text("tool")
        command = p.text("command", allow_empty=True)
        path = p.text("path")
        cwd = p.path("cwd")
        what = p.text("what", allow_empty=True)
        call_id = p.text("call_id")
        kind = p.choice("session_kind", SESSION_KINDS)
        ref = p.path("workspace")
        transcript = p.path("transcript")
        p.done()
        if event is None:
            raise InvalidParams("event is required", {"param": "event"})
        trust = self.trust
        # An MCP server knows the tool call's id, the hook that announced it the session.
        bound = trust.session_of_call(call_id) if call_id and event != "call" else None
        session_id = bound or given
        if session_id is None:
            raise InvalidParams(
                "session_id is required (or the call_id of a call an observer announced)",
                {"param": "session_id"},
            )
        if len(session_id) > MAX_SESSION_ID or not session_id.isprintable():
            raise InvalidParams(
                f"session_id must be a printable string of at most {MAX_SESSION_ID} characters",
                {"param": "session_id"},
            )
        req.log_fields.update(session=session_id[:80], observed=event)
        if event == "user_message":
            state = await asyncio.to_thread(trust.user_message, session_id, kind)
            return {"session_id": session_id, "event": event, **state.to_wire()}
        if event == "call":
            if not call_id:
                raise InvalidParams("a call event needs call_id", {"param": "call_id"})
            trust.bind_call(call_id[:MAX_SESSION_ID], session_id)
        roots = tuple(Path(r).resolve() for r in (cwd,) if r and os.path.isabs(r))
        ws = self._workspace_or_none(ref)
        if ws is not None:
            roots += (ws.root.resolve(),)
        found = session_trust.classify_read(tool, command, path, roots)
        lowest = (
            found if origin is None else origin if found is None else least_trusted(origin, found)
        )
        if lowest is not None:
            described = what or " ".join(x for x in (tool, command or path) if x) or None
            state = await asyncio.to_thread(trust.read, session_id, lowest, described, kind)
        else:  # nothing from outside: the session is known, as it was
            state = await asyncio.to_thread(trust.seen, session_id, kind)
        if transcript is not None:  # the hook's transcript: what the turn called
            state = await self._watch(ref, transcript, session_id)
        return {"session_id": session_id, "event": event, **state.to_wire()}

    async def _watch(
        self, ref: str | None, transcript: str, session_id: str
    ) -> session_trust.SessionState:
        _, watched = self._transcript(ref, transcript, session_id)
        try:
            return await asyncio.to_thread(self.trust.observe_transcript, session_id, watched)
        except OSError as exc:
            raise InvalidParams(
                f"cannot read the transcript {watched}: {exc.strerror or exc}",
                {"param": "transcript"},
            ) from None

    def _workspace_or_none(self, ref: str | None) -> Workspace | None:
        """The workspace named (errors as usual), or the default one when there is one."""
        if ref is not None:
            return self.registry.resolve(ref)
        try:
            return self.registry.resolve(None)
        except MemorydError:
            return None

    def _transcript(
        self, ref: str | None, transcript: str, session_id: str
    ) -> tuple[Workspace, Path]:
        """The workspace and the transcript a flush may read (refused: InvalidParams, or
        ForbiddenPath outside the agents' transcript folders)."""
        if len(session_id) > MAX_SESSION_ID:
            raise InvalidParams(
                f"session_id is longer than {MAX_SESSION_ID} characters", {"param": "session_id"}
            )
        if not os.path.isabs(transcript):
            raise InvalidParams("transcript must be an absolute path", {"param": "transcript"})
        path = Path(transcript)
        ws = self.registry.resolve(ref)
        check_transcript(path, ws.root, self.config().agents, self.env)
        if not path.is_file():
            raise InvalidParams(f"transcript {transcript} is not a file", {"param": "transcript"})
        return ws, path
