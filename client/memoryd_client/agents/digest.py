"""A session's start digest: MEMORY.md's and USER.md's heads and the latest daily notes, a
text block meant to be put before the model as it is ('' when there is nothing yet). Recall
for a prompt is the daemon's ``recall`` (:meth:`MemoryClient.recall`). Read through the
hook's connection in plain maps (``memoryd_client._connection``).

Read with ``get(injectable=True)``: lines of untrusted or system origin are left out (they
are never injected, docs/agents.md), and the block is marked like recall's so that flush
and append never learn it again.
"""

from __future__ import annotations

import datetime as _dt

from memoryd_client.errors import NotFound
from memoryd_client.protocol import RECALL_CLOSE, RECALL_OPEN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memoryd_client._connection import Connection

CHARS_PER_TOKEN = 4  # the daemon's recall counts the same way (index/search/recall.py)
DEFAULT_DIGEST_TOKENS = 600
MEMORY_HEAD_LINES = 60
DAYS = 2  # today's and yesterday's notes


def _read(conn: Connection, path: str, workspace: str | None, lines: int | None = None) -> str:
    params: dict[str, object] = {"path": path, "injectable": True}
    if workspace is not None:
        params["workspace"] = workspace
    if lines is not None:
        params["lines"] = lines
    try:
        result = conn.request("get", params)
    except NotFound:
        return ""
    text = result.get("text") if isinstance(result, dict) else None
    return text.strip() if isinstance(text, str) else ""


def _head(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text.rfind("\n", 0, max_chars)
    return text[: cut if cut > 0 else max_chars].rstrip() + "\n…"


def _tail(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text.find("\n", len(text) - max_chars)
    return "…\n" + text[cut + 1 if cut >= 0 else len(text) - max_chars :].lstrip()


def digest(
    conn: Connection,
    *,
    workspace: str | None = None,
    budget_tokens: int = DEFAULT_DIGEST_TOKENS,
    today: _dt.date | None = None,
) -> str:
    """MEMORY.md's and USER.md's heads and the last days' notes (newest first, their ends:
    what happened last), within the budget; '' when the workspace holds none yet."""
    budget = budget_tokens * CHARS_PER_TOKEN - len(RECALL_OPEN) - len(RECALL_CLOSE) - 2
    day = today or _dt.date.today()
    curated = [
        (name, text)
        for name in ("MEMORY.md", "USER.md")
        if (text := _read(conn, name, workspace, lines=MEMORY_HEAD_LINES))
    ]
    notes = []
    for back in range(DAYS):
        name = f"memory/{(day - _dt.timedelta(days=back)).isoformat()}.md"
        text = _read(conn, name, workspace)
        if text:
            notes.append((name, text))
    if not curated and not notes:
        return ""
    header = (
        "Memory digest (memoryd: MEMORY.md, USER.md and the latest daily notes; search for more):"
    )
    left = budget - len(header)
    parts = [header]
    curated_budget = left if not notes else left // 2
    for i, (name, text) in enumerate(curated):
        share = curated_budget // (len(curated) - i)
        block = f"## {name}\n\n{_head(text, max(0, share - len(name) - 8))}"
        parts.append(block)
        curated_budget -= len(block) + 2
        left -= len(block) + 2
    for i, (name, text) in enumerate(notes):
        share = left // (len(notes) - i)
        if share < 80:
            break
        block = f"## {name}\n\n{_tail(text, share - len(name) - 8)}"
        parts.append(block)
        left -= len(block) + 2
    return f"{RECALL_OPEN}\n" + "\n\n".join(parts) + f"\n{RECALL_CLOSE}\n"
