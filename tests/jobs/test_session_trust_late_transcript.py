"""An agent may write its transcript after it calls a tool: Claude Code queues the turn's
lines (the web fetch, its result, the call of ``memory_append`` itself) and writes them a
moment after the MCP call went out. A write that names its tool call re-reads the session's
transcript until it shows that call, for ``CALL_WAIT`` at most, so it is judged on what the
turn read (under load the daemon once judged a write on the user's message alone: clean).

Real files, a real state database, a fake clock: each of its sleeps is where the agent's
writer may catch up (the test writes the queued lines at the sleep it chooses)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.files.provenance import Provenance
from memoryd.jobs.session_trust import CALL_POLLS, CALL_WAIT, SessionTrust
from memoryd.jobs.transcript_folders import TranscriptPlaces
from memoryd.runtime.state import StateDB

NOW = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
SESSION = "0b7c1d2e-session"
CALL = "toolu_append"


class SleepingClock:
    """The daemon's time, moved only by the sleeps of the code under test; ``at[n]`` runs
    when the n-th sleep (from 1) is over."""

    def __init__(self) -> None:
        self.t = NOW.timestamp()
        self.slept: list[float] = []
        self.at: dict[int, Callable[[], None]] = {}

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds
        self.slept.append(seconds)
        action = self.at.pop(len(self.slept), None)
        if action is not None:
            action()


def _line(kind: str, minutes: float, content: Any) -> str:
    stamp = (NOW + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
    message = {"role": kind, "content": content}
    return json.dumps({"type": kind, "sessionId": SESSION, "timestamp": stamp, "message": message})


def _tool(call_id: str, name: str, args: dict[str, str]) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call_id, "name": name, "input": args}]


USER = _line("user", 1, "Summarise https://example.org/staging-notes for me")
FETCH = _line("assistant", 1.1, _tool("toolu_fetch", "mcp__web__fetch", {"url": "https://e.org"}))
RESULT = _line("user", 1.2, [{"type": "tool_result", "tool_use_id": "toolu_fetch"}])
APPEND = _line("assistant", 1.3, _tool(CALL, "mcp__memoryd__memory_append", {"text": "- x"}))


def _append(path: Path, *lines: str) -> None:
    with path.open("a") as f:
        f.write("".join(x + "\n" for x in lines))


def _setup(tmp_path: Path) -> tuple[SessionTrust, SleepingClock, Path]:
    """A daemon's session trust with a fake clock; where Claude Code keeps the session's
    transcript (under a HOME of the test's own), not written yet."""
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-work-proj"
    project.mkdir(parents=True)
    clock = SleepingClock()
    places = TranscriptPlaces({"HOME": str(home)}, lambda: [])
    trust = SessionTrust(StateDB(tmp_path / "state.sqlite"), clock.now, places, clock.sleep)
    return trust, clock, project / f"{SESSION}.jsonl"


def _write(trust: SessionTrust, call_id: str | None = CALL) -> str:
    """The origin an MCP ``memory_append`` of the session gets (it declares ``agent``)."""
    declared = Provenance("agent", SESSION)
    return trust.for_write(declared, "mcp", call_id)[0].origin


def test_a_write_waits_for_the_lines_the_agent_writes_after_calling(tmp_path: Path) -> None:
    trust, clock, transcript = _setup(tmp_path)
    _append(transcript, USER)  # all the transcript holds when the call reaches memoryd
    clock.at[3] = lambda: _append(transcript, FETCH, RESULT, APPEND)
    assert _write(trust) == "untrusted"
    assert len(clock.slept) == 3  # re-read until the call showed, no longer
    state = trust.get(SESSION)
    assert state is not None and state.what is not None and "mcp__web__fetch" in state.what


def test_a_transcript_that_appears_after_the_call_is_waited_for(tmp_path: Path) -> None:
    trust, clock, transcript = _setup(tmp_path)
    clock.at[2] = lambda: _append(transcript, USER, FETCH, RESULT, APPEND)
    assert _write(trust) == "untrusted"
    assert len(clock.slept) == 2


def test_an_honest_turn_is_judged_once_its_call_shows(tmp_path: Path) -> None:
    trust, clock, transcript = _setup(tmp_path)
    _append(transcript, _line("user", 1, "Remember: deploys are on Fridays"))
    clock.at[1] = lambda: _append(transcript, APPEND)
    assert _write(trust) == "agent"
    assert len(clock.slept) == 1


def test_a_call_already_read_is_not_waited_for(tmp_path: Path) -> None:
    trust, clock, transcript = _setup(tmp_path)
    _append(transcript, USER, FETCH, RESULT, APPEND)
    trust.observe_transcript(SESSION, transcript)  # another reading (the watch's) saw it all
    assert _write(trust) == "untrusted"
    assert clock.slept == []


def test_a_write_without_a_call_id_reads_the_transcript_as_it_stands(tmp_path: Path) -> None:
    trust, clock, transcript = _setup(tmp_path)
    _append(transcript, USER, FETCH)
    assert _write(trust, call_id=None) == "untrusted"
    assert clock.slept == []


def test_the_wait_is_bounded_and_the_write_judged_as_the_transcript_stands(
    tmp_path: Path,
) -> None:
    trust, clock, transcript = _setup(tmp_path)
    _append(transcript, USER)  # the agent never writes the call's lines
    assert _write(trust) == "agent"
    assert len(clock.slept) == CALL_POLLS and abs(sum(clock.slept) - CALL_WAIT) < 1e-9
    _append(transcript, FETCH, RESULT)  # a later write still reads what came since
    assert _write(trust, call_id="toolu_next") == "untrusted"


def test_a_session_whose_transcript_is_nowhere_is_waited_for_once(tmp_path: Path) -> None:
    trust, clock, _ = _setup(tmp_path)  # Claude Code keeps no transcript of this session
    assert _write(trust) == "agent"
    assert len(clock.slept) == CALL_POLLS
    assert _write(trust, call_id="toolu_next") == "agent"
    assert len(clock.slept) == CALL_POLLS  # its next write did not wait again
