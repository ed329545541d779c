"""The headings a session's notes are written under, named here so that what reads them
back (forget of a session) needs neither flush nor its LLM client.

Two writers head a session's notes: memoryd's flush (``Session notes (<label>, lines A-B)``)
and an agent's own model writing them through an integration, the OpenClaw plugin's flush
run (``Session notes (<label>)``, integrations/openclaw/src/writes.js, which labels the id
with the same rule as ``session_label``)."""

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


def agent_heading(session_id: str) -> str:
    """The heading of the notes an agent's own model wrote for the session (the OpenClaw
    plugin's flush run)."""
    return f"Session notes ({session_label(session_id)})"


def session_headings(session_id: str) -> tuple[str, ...]:
    """What every heading written for the session starts with: flush's, whatever its
    lines, and an agent's own."""
    return (flush_heading_prefix(session_id), agent_heading(session_id))
