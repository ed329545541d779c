"""Memory files as line lists, and back: what every merge rule works on.

Bytes that are not UTF-8 survive the round trip (surrogate escapes); a file's final
newline, or its absence, is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Text", "as_bytes", "as_text"]


@dataclass(frozen=True)
class Text:
    lines: list[str]
    newline_at_end: bool


def as_text(data: bytes | None) -> Text:
    if not data:
        return Text([], True)
    s = data.decode("utf-8", "surrogateescape")
    end = s.endswith("\n")
    lines = s.split("\n")
    if end:
        lines.pop()
    return Text(lines, end)


def as_bytes(lines: list[str], newline_at_end: bool = True) -> bytes:
    if not lines:
        return b""
    s = "\n".join(lines) + ("\n" if newline_at_end else "")
    return s.encode("utf-8", "surrogateescape")
