"""The headings flush writes its notes under, named here so that what reads them back
(forget of a session) needs neither flush nor its LLM client."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]+")


def session_label(session_id: str) -> str:
    return _UNSAFE.sub("-", session_id).strip("-")[:80] or "unnamed"


def flush_heading(session_id: str, first_line: int, last_line: int) -> str:
    return f"Session notes ({session_label(session_id)}, lines {first_line}-{last_line})"


def flush_heading_prefix(session_id: str) -> str:
    """What every flush heading of the session starts with, whatever its lines."""
    return f"Session notes ({session_label(session_id)}, lines "
