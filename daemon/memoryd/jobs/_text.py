"""Text helpers for the LLM jobs: size budgets, splitting into parts, reading answers.

Sizes are estimated at 3 characters a token, on the high side for English prose: an
overestimate only means one part more, an underestimate a prompt the server cuts.
Splitting never drops text: parts end at line ends, and only a single line longer than a
whole part is split inside.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Final

CHARS_PER_TOKEN: Final = 3
_FENCE = re.compile(r"^```[\w+-]*[ \t]*\n(.*)\n```[ \t]*$", re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_LIST_MARK = re.compile(r"^(?:[-*+]|\d+[.)])[ \t]+(?:\[[ xX]\][ \t]+)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_CHATTY = re.compile(
    r"^(?:sure|certainly|of course|okay|ok|here is|here's|here are|below is|"
    r"i have|i've|i will|i'll|as requested)\b",
    re.IGNORECASE,
)
# The sign-offs chat models add after the content ("Let me know if ..."); a line of the old
# file that happens to read so is kept.
_CHATTY_END = re.compile(
    r"^\W*(?:let me know|please let me know|i hope this helps|hope this helps|"
    r"feel free to|is there anything else|would you like|if you (?:need|want|"
    r"would like|have)|i've (?:updated|made|added|kept|merged)|"
    r"i have (?:updated|made|added|kept|merged))\b",
    re.IGNORECASE,
)


def tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def chars_for(token_budget: int) -> int:
    return max(0, token_budget) * CHARS_PER_TOKEN


def split_text(text: str, max_chars: int) -> list[str]:
    """``text`` in pieces of at most ``max_chars``, cut at line ends where possible."""
    assert max_chars > 0
    pieces: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(current) + len(line) > max_chars:
            if current and len(line) <= max_chars:  # the line fits a piece of its own
                pieces.append(current)
                current = ""
                continue
            room = max_chars - len(current)  # a line longer than a piece: cut, keep it all
            pieces.append(current + line[:room])
            current, line = "", line[room:]
        current += line
    if current:
        pieces.append(current)
    return pieces


def pack(blocks: list[str], max_chars: int, sep: str = "\n\n") -> list[str]:
    """Blocks (in order) packed into as few parts of at most ``max_chars`` as fit."""
    parts: list[str] = []
    current = ""
    for block in blocks:
        for piece in split_text(block, max_chars) if len(block) > max_chars else [block]:
            joined = f"{current}{sep}{piece}" if current else piece
            if len(joined) > max_chars and current:
                parts.append(current)
                joined = piece
            current = joined
    if current:
        parts.append(current)
    return parts


class PartBudget:
    """``pack``'s parts counted as blocks arrive, to stop before a block would need more
    than ``max_parts`` parts (the same parts ``pack`` makes of the blocks taken)."""

    def __init__(self, max_chars: int, max_parts: int, sep: str = "\n\n") -> None:
        self.max_chars, self.max_parts, self.sep = max_chars, max_parts, sep
        self.closed = 0  # parts full
        self.current = 0  # characters in the part being filled

    def take(self, block: str) -> bool:
        """Count ``block`` in when it fits within ``max_parts``; False (nothing counted)
        when it does not."""
        closed, current = self.closed, self.current
        long = len(block) > self.max_chars
        for piece in split_text(block, self.max_chars) if long else [block]:
            joined = current + len(self.sep) + len(piece) if current else len(piece)
            if joined > self.max_chars and current:
                closed += 1
                joined = len(piece)
            current = joined
        if closed + (1 if current else 0) > self.max_parts:
            return False
        self.closed, self.current = closed, current
        return True


def unwrap(answer: str) -> str:
    """The answer without surrounding blank lines or a code fence around all of it."""
    text = answer.strip("\n").strip()
    m = _FENCE.match(text)
    if m:
        text = m.group(1).strip("\n")
    return text + "\n" if text else ""


def headings(text: str) -> list[str]:
    """Heading texts (any level), normalised, in order; fenced code is not looked into."""
    found: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        m = None if in_fence else _HEADING.match(line)
        if m:
            found.append(" ".join(m.group(2).split()).lower())
    return found


def norm_line(line: str) -> str:
    """A line compared loosely: no list marker, no heading marks, case and spacing folded."""
    text = line.strip()
    text = _LIST_MARK.sub("", text).lstrip("#").strip()
    return " ".join(text.split()).lower()


def content_lines(text: str) -> list[str]:
    return [n for n in (norm_line(line) for line in text.splitlines()) if n]


def not_markdown(text: str, old: str = "") -> str | None:
    """Why an answer cannot be a markdown file replacing ``old``, or None when it can."""
    if _CONTROL.search(text):
        return "it contains control characters"
    if _SURROGATE.search(text):  # JSON can escape one half of a pair: no UTF-8 file holds it
        return "it holds half of a surrogate pair"
    stripped = text.strip()
    if stripped[:1] in "{[":
        try:
            json.loads(stripped)
        except ValueError:
            pass
        else:
            return "it is JSON"
    if stripped[:15].lower().startswith(("<!doctype", "<html")):
        return "it is an HTML page"
    first = stripped.splitlines()[0] if stripped else ""
    if _CHATTY.match(first) and first not in old:  # "Sure! Here is ..." is not the file
        return f"it starts with a chat reply ({first[:60]!r}) instead of the file's content"
    last = stripped.splitlines()[-1].strip() if stripped else ""
    if _CHATTY_END.match(last) and last not in old:
        return f"it ends with a chat reply ({last[:60]!r}) after the file's content"
    return None


def demote_headings(text: str) -> str:
    """Headings inside an appended block become bold lines, so they cannot split sections."""
    out = []
    for line in text.splitlines():
        m = _HEADING.match(line)
        out.append(f"**{m.group(2).strip()}**" if m else line)
    return "\n".join(out)


def has_heading(path: Path, heading: str) -> bool:
    """Whether the daily file holds the level-2 heading a job appends under (a run that
    stopped after appending, before recording it, must not append twice)."""
    wanted = f"## {heading}".encode()
    try:
        with open(path, "rb") as fh:  # line by line: a daily file may be large
            return any(line.rstrip(b"\r\n") == wanted for line in fh)
    except FileNotFoundError:
        return False
