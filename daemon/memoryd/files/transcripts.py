"""Session transcripts (``sessions/<id>.jsonl``): the format, and reading it in bounded steps.

The indexer keeps the byte offset already ingested and hands the bytes after it to
``parse_transcript``; only complete lines are consumed, so a line still being written is
read again once its newline arrives. Only user and assistant text is kept; everything else
is counted and skipped. The jobs read whole transcripts with ``stream_transcript``: a block
of lines at a time, never the whole file (a transcript can be gigabytes).

Two line formats are read: OpenClaw's (``type: message`` with ``message.role``) and Claude
Code's (``type: user`` / ``type: assistant``, ``sessionId`` on every line). In both,
``message.content`` is a string or a list of blocks, of which only ``text`` blocks count:
tool calls, tool results and thinking are skipped, as are Claude Code's injected lines
(``isMeta``) and its compaction summaries (``isCompactSummary``: a retelling, not news).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from memoryd.files.codex_rollout import as_transcript_line
from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

_ROLES = ("user", "assistant")
READ_BLOCK = 1 << 20
MAX_LINE_BYTES = 16 << 20  # a longer line (a tool's output pasted whole) is stepped over
# JSON may escape half of a surrogate pair ("\ud83d" from a tool that cut an emoji in two):
# json.loads gives a str no UTF-8 encoder accepts. Such halves become U+FFFD, as invalid
# UTF-8 bytes do. Compiled on first use: the class's 2,048 code points cost ~2 M
# instructions to compile, at every start (issue 38) where no transcript is read.
_LONE_SURROGATE = "[\ud800-\udfff]"


@frozen_record(frozen=True, eq=False, repr=False)  # made once a range read: the shared __init__
class TranscriptChunkInput(Record):
    """What a range of a transcript holds for its chunks, and how far it was read."""

    messages: list[tuple[int, str]] = field(default_factory=list)  # (line, "role: text")
    consumed: int = 0  # bytes up to and including the last newline
    lines_consumed: int = 0
    malformed: int = 0  # not a JSON object (after decoding invalid UTF-8 with replacement)
    skipped: int = 0  # valid JSON that carries no user/assistant text
    session_id: str | None = None  # from a `session` line in this range
    started_at: str | None = None
    last_timestamp: str | None = None  # of the last `message` line in this range


def parse_transcript(data: bytes, first_line: int = 1) -> TranscriptChunkInput:
    """Parse the complete lines of `data`, which starts at a line start (line `first_line`)."""
    consumed = data.rfind(b"\n") + 1
    raws = data[:consumed].split(b"\n")[:-1]
    messages: list[tuple[int, str]] = []
    malformed = skipped = 0
    session_id = started_at = last_timestamp = None
    for lineno, raw in enumerate(raws, first_line):
        if not raw.strip():
            continue
        line = raw.decode("utf-8", errors="replace")
        if lineno == 1:
            line = line.removeprefix("\ufeff")  # json.loads refuses a BOM
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # deeply nested arrays exhaust the stack
            malformed += 1
            continue
        if not isinstance(obj, dict):
            malformed += 1
            continue
        obj = as_transcript_line(obj)  # a Codex rollout line in the shape below
        kind = obj.get("type")
        if kind == "session":
            session_id = _str(obj.get("id")) or session_id
            started_at = _str(obj.get("timestamp")) or started_at
            continue
        claude_code = kind in _ROLES
        if claude_code:
            session_id = _str(obj.get("sessionId")) or session_id
            started_at = started_at or _str(obj.get("timestamp"))
        if (
            not (kind == "message" or claude_code)
            or obj.get("isMeta") is True
            or obj.get("isCompactSummary") is True
        ):
            skipped += 1
            continue
        msg = obj.get("message")
        msg = msg if isinstance(msg, dict) else {}
        last_timestamp = _str(obj.get("timestamp")) or _str(msg.get("timestamp")) or last_timestamp
        role = msg.get("role") or (kind if claude_code else None)
        text = _text(msg.get("content"))
        if role in _ROLES and text:
            messages.append((lineno, f"{role}: {text}"))
        else:
            skipped += 1
    return TranscriptChunkInput(
        messages, consumed, len(raws), malformed, skipped, session_id, started_at, last_timestamp
    )


def _str(value: Any) -> str | None:
    return _clean(value) if isinstance(value, str) and value else None


def _clean(text: str) -> str:
    return _lone_surrogate().sub("\ufffd", text)


@functools.cache
def _lone_surrogate() -> re.Pattern[str]:
    return re.compile(_LONE_SURROGATE)


def _text(content: Any) -> str:
    """A message's text: a string, or the text blocks of a list joined by newlines."""
    if isinstance(content, str):
        return _clean(content.strip())
    if isinstance(content, list):
        parts = (b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text")
        return _clean("\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip()))
    return ""


def stream_transcript(
    fh: BinaryIO,
    block: int = READ_BLOCK,
    max_line_bytes: int = MAX_LINE_BYTES,
    *,
    partial_last: bool = True,
) -> Iterator[tuple[list[bytes], TranscriptChunkInput]]:
    """The transcript from ``fh``'s position, a block of whole lines at a time: (the raw
    lines, what they parse to). Memory stays around ``block`` plus one line; a line longer
    than ``max_line_bytes`` is stepped over (counted as malformed), and a last line without
    its newline counts as complete unless ``partial_last`` is False (a line still being
    written: a reader keeping an offset reads it once it ends)."""
    line_no = 1
    carry = b""
    skipping = False  # inside a line too long to keep
    while True:
        data = fh.read(block)
        if not data:
            break
        nl = data.rfind(b"\n")
        if nl < 0:  # no line ends in this block
            if not skipping:
                carry += data
                if len(carry) > max_line_bytes:
                    carry, skipping = b"", True
            continue
        head, rest = data[: nl + 1], data[nl + 1 :]
        if skipping:
            first_end = head.find(b"\n") + 1
            head, skipping = head[first_end:], False
            yield [], TranscriptChunkInput(consumed=first_end, lines_consumed=1, malformed=1)
            line_no += 1
        chunk = carry + head
        carry = rest
        if len(carry) > max_line_bytes:
            carry, skipping = b"", True
        if chunk:
            parsed = parse_transcript(chunk, first_line=line_no)
            line_no += parsed.lines_consumed
            yield chunk.split(b"\n")[:-1], parsed
    if not partial_last:
        return
    if skipping:
        yield [], TranscriptChunkInput(lines_consumed=1, malformed=1)
    elif carry.strip():
        parsed = parse_transcript(carry + b"\n", first_line=line_no)
        yield [carry], parsed


HEAD_BYTES: Final = 256 << 10  # how far a transcript is read for the session it belongs to
_SESSION_ID: Final = re.compile(rb'"sessionId"\s*:\s*"([^"\\]{1,200})"')


def _line_sessions(line: bytes) -> tuple[str, ...]:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):  # cut at HEAD_BYTES, or nested past the stack
        return tuple(m.decode("utf-8", "replace") for m in _SESSION_ID.findall(line)[:1])
    if not isinstance(obj, dict):
        return ()
    return tuple(v for v in (obj.get("id"), obj.get("sessionId")) if isinstance(v, str) and v)


def head_sessions(fd: int) -> tuple[str, ...]:
    """The sessions a transcript's first line that names one names (OpenClaw's session line
    ``id``, Claude Code's ``sessionId``: a Claude Code transcript may open with summary
    lines that name none); open file ``fd`` is closed. At most HEAD_BYTES read."""
    read = 0
    with os.fdopen(fd, "rb") as f:
        while read < HEAD_BYTES:
            line = f.readline(HEAD_BYTES - read)
            if not line:
                break
            read += len(line)
            found = _line_sessions(line) if line.strip() else ()
            if found:
                return found
    return ()


def forgotten_session_of(path: Path, forgotten: frozenset[str]) -> str | None:
    """Which of the ``forgotten`` sessions transcript ``path`` is (its name ``<id>.jsonl``,
    or the session its first lines name), if any: the indexer never indexes such a transcript again
    (``memctl forget --session``). Reads its head, and nothing at all while no session was
    forgotten."""
    if not forgotten:
        return None
    if path.name.endswith(".jsonl") and path.name[: -len(".jsonl")] in forgotten:
        return path.name[: -len(".jsonl")]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    return next((s for s in head_sessions(fd) if s in forgotten), None)
