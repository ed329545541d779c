"""Helpers for the jobs tests: run a real job through the real Runner against real files.

``JobHarness`` wires the pieces the daemon wires (state database, history, appender,
optionally a real WorkspaceIndex) around a workspace folder, with a fake clock and the
LLM pointed at the fake OpenAI server. Only the boundaries are fake.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from daemon_util import DaemonThread
from engine_util import write_file
from fakes.clock import FakeClock
from memoryd.files.append import Appender
from memoryd.files.locks import FileLocks
from memoryd.index.workspace import WorkspaceIndex
from memoryd.jobs.flush_queue import FLUSH
from memoryd.jobs.history import History, RunRecord
from memoryd.jobs.runner import Runner
from memoryd.runtime.config import Config, config_from_mapping
from memoryd.runtime.state import StateDB
from memoryd.workspace.served import Workspace
from memoryd_client import MemoryClient

TZ = ZoneInfo("Europe/Berlin")
NOW = dt.datetime(2025, 3, 12, 9, 30, tzinfo=TZ)


def llm_config(base_url: str, **extra: Any) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "model": "fake-chat",
        "api_key": "sk-test-secret-123",
        "max_retries": 0,
        "timeout": 5.0,
        **extra,
    }


def set_mtime(path: Path, when: dt.datetime | float) -> None:
    stamp = when.timestamp() if isinstance(when, dt.datetime) else when
    os.utime(path, (stamp, stamp))


def transcript(
    session_id: str,
    messages: list[tuple[str, str]],
    start: dt.datetime,
    extra: list[dict[str, Any]] | None = None,
) -> str:
    """A session JSONL: a session line, then one message line a minute."""
    lines = [
        {
            "type": "session",
            "version": 1,
            "id": session_id,
            "timestamp": start.isoformat(),
            "agent_id": "a1",
        }
    ]
    for i, (role, text) in enumerate(messages):
        at = start + dt.timedelta(minutes=i + 1)
        lines.append(
            {
                "type": "message",
                "timestamp": at.isoformat(),
                "message": {"role": role, "content": text},
            }
        )
    lines += extra or []
    return "".join(json.dumps(line) + "\n" for line in lines)


class JobHarness:
    def __init__(
        self,
        root: Path,
        state_path: Path,
        config: dict[str, Any] | None = None,
        index: WorkspaceIndex | None = None,
        now: dt.datetime = NOW,
    ) -> None:
        self.root = root.resolve()
        (self.root / "memory").mkdir(parents=True, exist_ok=True)
        self.clock = FakeClock(now)
        self.state = StateDB(state_path)
        self.history = History(self.state)
        self.locks = FileLocks()
        self.appender = Appender(self.locks)
        self.index = index
        self.data: dict[str, Any] = {"embedding": {"provider": "none"}, **(config or {})}
        self.env: dict[str, str] = {}

    @property
    def config(self) -> Config:
        return config_from_mapping(self.data)

    def workspace(self) -> Workspace:
        return Workspace("ws", self.root, "config", index=self.index)

    def runner(self) -> Runner:
        return Runner(
            self.history, self.clock, lambda: self.config, self.appender, self.env, locks=self.locks
        )

    def run(
        self, job: str, *, dry_run: bool = False, force: bool = False, trigger: str = "manual"
    ) -> RunRecord:
        async def go() -> RunRecord:
            task = self.runner().start(
                job,
                self.workspace(),
                trigger=trigger,
                scheduled_for=None,
                dry_run=dry_run,
                force=force,
            )
            return await task

        return asyncio.run(go())

    def flush(self, transcript: Path, session_id: str) -> RunRecord:
        """A flush of ``transcript`` as the daemon's flush queue starts it."""

        async def go() -> RunRecord:
            return await self.runner().start(
                "flush",
                self.workspace(),
                trigger="manual",
                scheduled_for=None,
                params={"transcript": str(transcript), "session_id": session_id},
                spec=FLUSH,
            )

        return asyncio.run(go())

    def write(self, rel: str, text: str | bytes) -> Path:
        return write_file(self.root, rel, text)

    def close(self) -> None:
        self.state.close()


@contextmanager
def llm_daemon(
    md_home: Path,
    workspace: Path,
    name: str,
    base_url: str,
    *,
    indexed: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[DaemonThread]:
    """A daemon at NOW serving one workspace, its LLM the fake OpenAI server at base_url;
    indexed: the startup scan done first, whatever the machine's load."""
    config = {"workspaces": [{"path": str(workspace), "name": name}], "llm": llm_config(base_url)}
    with DaemonThread(md_home, config, env, clock=FakeClock(NOW)) as d:
        if indexed:
            with MemoryClient(d.socket_path) as c:
                c.reindex(workspace=name)
        yield d
