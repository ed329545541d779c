"""A flush done by the agent's own model: whether a session has enough new text for one.

Without an LLM configured the daemon cannot summarise a transcript, but the agent can:
Claude Code's ``Stop`` hook may answer ``{"decision": "block", "reason": ...}`` and the
model then takes one more turn with that instruction (save the durable facts with
``memory_append``). The daemon keeps the offsets, as for its own flushes: once enough new
user and assistant text has accumulated since the last flush of the session, the offset
moves to the end of what was read and the answer says so, so that the agent is asked
once per stretch of conversation, never twice for the same lines.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memoryd.files.transcripts import parse_transcript
from memoryd.jobs.flush_origin import Turns, turns_before
from memoryd.jobs.history import History

MIN_NEW_CHARS: Final = 6000
"""User and assistant text (tool calls and results not counted) since the last flush of
the session before the agent is asked: about 1,500 tokens, a few exchanges."""
MIN_NEW_BYTES: Final = 8 * 1024
"""Below this much new transcript the lines are not even parsed (a turn's Stop is cheap)."""
MAX_READ_BYTES: Final = 4 * 1024 * 1024
"""Read per Stop. A stretch this long (large tool results) is handed over with whatever
text it holds, so that no Stop reads the same megabytes again."""


@dataclass(frozen=True)
class AgentFlush:
    due: bool
    from_line: int
    to_line: int
    chars: int
    origin: str = "agent"  # the least trusted of the stretch (flush_origin.Turns)

    def to_wire(self) -> dict[str, Any]:
        return {
            "due": self.due,
            "from_line": self.from_line,
            "to_line": self.to_line,
            "chars": self.chars,
            "min_chars": MIN_NEW_CHARS,
        }


def check(history: History, transcript: Path, session: str, root: Path, now: float) -> AgentFlush:
    """Whether the agent should save the session's facts now; when it should, the offset
    moves past the lines it is asked about. Raises OSError when the file cannot be read."""
    offset, line = history.flush_offset(transcript, session)
    with open(transcript, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < offset:  # replaced: start over, as a fresh session would
            offset, line = 0, 0
        if size - offset < MIN_NEW_BYTES:
            return AgentFlush(False, line + 1, line, 0)
        f.seek(offset)
        data = f.read(MAX_READ_BYTES)
        parsed = parse_transcript(data, first_line=line + 1)
        chars = sum(len(text) for _, text in parsed.messages)
        first, last = line + 1, line + parsed.lines_consumed
        full = len(data) == MAX_READ_BYTES
        if chars < MIN_NEW_CHARS and not full:
            return AgentFlush(False, first, last, chars)
        turns = turns_before(f, offset)  # the turn the stretch starts in
    history.set_flush_offset(transcript, session, offset + parsed.consumed, last, root, now)
    origin = stretch_origin(data[: parsed.consumed], turns)
    return AgentFlush(chars > 0, first, last, chars, origin)


def stretch_origin(data: bytes, turns: Turns | None = None) -> str:
    """The least trusted origin of a stretch of transcript lines: ``untrusted`` when any
    turn of it called a tool that fetches outside content (flush's rule), the turn it
    starts in too (``turns``: its state at the stretch's start)."""
    turns = turns or Turns()
    origins = {turns.origin(raw) for raw in data.split(b"\n") if raw.strip()}
    return "untrusted" if "untrusted" in origins or turns.tainted else "agent"
