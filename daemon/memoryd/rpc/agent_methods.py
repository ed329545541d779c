"""What agents' hooks and observers report: ``flush`` (a transcript's durable facts into
the daily file, by the LLM, in the background: a run handed to the flush queue),
``flush.agent`` (whether the agent's own model should save now) and ``observe`` (what a
session read, which lowers the trust of what it writes: jobs/session_trust.py).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidParams, MemorydError
from memoryd.files.provenance import ORIGINS, clean_session_id, least_trusted
from memoryd.jobs import agent_flush, session_trust
from memoryd.jobs.clock import Clock
from memoryd.jobs.flush_queue import FlushQueue
from memoryd.jobs.history import History
from memoryd.jobs.session_trust import SessionTrust
from memoryd.jobs.transcript_folders import check_transcript
from memoryd.rpc.params import Params
from memoryd.rpc.recall_methods import agent_of
from memoryd.rpc.server import Request
from memoryd.runtime.config import Config
from memoryd.workspace.registry import Registry
from memoryd.workspace.served import Workspace
from memoryd_client.search_terms import SESSION_KINDS

if TYPE_CHECKING:
    from memoryd.rpc.dispatch import Handler

MAX_SESSION_ID = 200
FLUSH_TRIGGERS = ("hook", "manual")  # an agent's hook (the default), or a person (memctl)


class AgentMethods:
    def __init__(
        self,
        *,
        registry: Registry,
        flushes: FlushQueue,
        history: History,
        trust: SessionTrust,
        clock: Clock,
        config: Callable[[], Config],
        env: Mapping[str, str],
    ) -> None:
        """``flushes``: flush's queue (its runs' ``history`` says what a transcript had
        flushed); ``trust``: what each agent session read; ``env``: where the agents'
        transcript folders are."""
        self.registry = registry
        self.flushes = flushes
        self.history = history
        self.trust = trust
        self.clock = clock
        self.config = config
        self.env = env

    def table(self) -> dict[str, Handler]:
        return {"flush": self.flush, "flush.agent": self.flush_agent, "observe": self.observe}

    async def flush(self, p: Params, req: Request) -> dict[str, Any]:
        ref = p.path("workspace")
        transcript = p.required_path("transcript")
        session_id = clean_session_id(p.required_text("session_id"))
        wait = p.flag("wait")
        trigger = p.choice("trigger", FLUSH_TRIGGERS, default="hook") or "hook"
        kind = p.choice("session_kind", SESSION_KINDS)  # cron, heartbeat, subagent: skipped
        agent = agent_of(p, req)
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
