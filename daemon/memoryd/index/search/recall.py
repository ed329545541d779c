"""Recall: from a prompt's search hits, the block of memory worth putting before the model.

A hook calls it on every prompt, so it must say nothing when nothing is relevant: only
hits above a stricter threshold than search's, no two citing overlapping lines of one
file, the best first, within a token budget counted on the very text that is returned
(about 4 characters a token, what common LLM tokenizers spend on English).

Only eligible memory is injected: curated lines (MEMORY.md, USER.md), and episodic lines
whose origin is the owner's or the agent's. Lines from untrusted content (web pages, tool
output) or from system scaffolding (cron, heartbeat) never reach a prompt by themselves;
search still finds them. A snippet that mixes them with eligible lines is trimmed to its
eligible lines, each run of them an item with its own citation: an untrusted line appended
next to the owner's must not hide the owner's. The block is wrapped in
RECALL_OPEN/RECALL_CLOSE, so that what was injected is never learnt again
(files/injected.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from memoryd.records import Record
from memoryd_client.protocol import RECALL_CLOSE, RECALL_OPEN

CHARS_PER_TOKEN: Final = 4
DEFAULT_BUDGET_TOKENS: Final = 600
DEFAULT_MIN_SCORE: Final = 0.5  # search's default is 0.35: a prompt is not a question to us
MIN_CANDIDATES: Final = 8
MAX_CANDIDATES: Final = 40
TOKENS_PER_CANDIDATE: Final = 50
"""Hits asked of search: about one per 50 tokens of budget (a snippet is rarely shorter),
12 for the default budget. Each hit costs the search a snippet, and a hook asks before
every prompt."""
MAX_QUERY_CHARS: Final = 4000  # a pasted document: its head says what it is about
HEADER: Final = "Relevant memory (memoryd recall; cite as path#Lstart-Lend):"
INJECTABLE_ORIGINS: Final = frozenset({"owner", "agent"})


def _tier_ok(hit: Mapping[str, Any]) -> bool:
    return hit.get("tier") in ("curated", "episodic", None)


def eligible(hit: Mapping[str, Any]) -> bool:
    """Whether a search hit may be injected: the owner's or the agent's, curated or episodic
    (a hit without ``origin`` has no record: written by hand, the owner's). A curated line
    recorded untrusted or system (an imported archive's, an append that named MEMORY.md) is
    left out too: being in MEMORY.md does not make a web page's words the owner's."""
    return _tier_ok(hit) and hit.get("origin", "owner") in INJECTABLE_ORIGINS


def candidates(budget_tokens: int) -> int:
    return max(MIN_CANDIDATES, min(MAX_CANDIDATES, budget_tokens // TOKENS_PER_CANDIDATE))


def tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


@dataclass(frozen=True, eq=False, repr=False)
class Item(Record):
    """A stretch of lines a recall may give, with what ranks it."""

    path: str
    start_line: int
    end_line: int
    score: float
    text: str
    source: str
    trigger: str = ""  # the trigger phrase that brought it (the trigger lane), else ''
    superseded_by: tuple[str, ...] = ()  # include_superseded: it shows a superseded line

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def render(self) -> str:
        return f"[{self.citation}]\n{self.text}"


def items_of(hit: Mapping[str, Any]) -> list[Item]:
    """What of a search hit may be injected: the whole snippet when every line is eligible;
    a mixed one trimmed to its runs of eligible lines (by the hit's ``line_origins``), each
    cited by its own lines; nothing when its lines cannot be told apart."""
    start = int(hit.get("snippet_start_line") or hit["start_line"])
    end = int(hit.get("snippet_end_line") or hit["end_line"])
    text = str(hit.get("snippet") or "").strip("\n")
    if not text.strip() or not _tier_ok(hit):
        return []
    item = Item(
        str(hit["path"]),
        start,
        end,
        float(hit["score"]),
        text.strip(),
        str(hit.get("source") or "memory"),
        superseded_by=tuple(hit.get("superseded_by") or ()),
    )
    if eligible(hit):
        return [item]
    lines = text.split("\n")
    if len(lines) != end - start + 1:  # a fragment of one long line: not to be split
        return []
    refused = {
        int(x["line"])
        for x in hit.get("line_origins") or ()
        if isinstance(x, Mapping) and x.get("origin") not in INJECTABLE_ORIGINS
    }
    if not refused:
        return []  # untrusted, and no line says which: nothing is known to be eligible
    runs: list[list[int]] = [[]]
    for n in range(start, end + 1):
        if n in refused:
            runs.append([])
        else:
            runs[-1].append(n)
    out: list[Item] = []
    for run in runs:
        while run and (not lines[run[0] - start].strip() or _heading(lines[run[0] - start])):
            run.pop(0)  # a run starts at a fact, not at a heading or a blank line
        while run and not lines[run[-1] - start].strip():
            run.pop()
        if run:
            body = "\n".join(lines[k - start] for k in run).strip()
            out.append(replace(item, start_line=run[0], end_line=run[-1], text=body))
    return out


def _heading(line: str) -> bool:
    return line.lstrip().startswith("#")


def _overlaps(taken: Iterable[Item], item: Item) -> bool:
    return any(
        t.path == item.path and t.start_line <= item.end_line and item.start_line <= t.end_line
        for t in taken
    )


def select(
    hits: Iterable[Mapping[str, Any]], budget_tokens: int, first: Iterable[Item] = ()
) -> dict[str, Any]:
    """The recall answer for search hits (wire maps, best first): the chosen items, the
    markdown block (empty when nothing was chosen) and its size in tokens. ``first``: the
    trigger lane's items (triggers.py), placed before the ranked hits."""
    chosen: list[Item] = []
    used = tokens(HEADER) + tokens(RECALL_OPEN + RECALL_CLOSE) + 2
    for item in first:
        cost = tokens(item.render()) + 1
        if used + cost <= budget_tokens and not _overlaps(chosen, item):
            chosen.append(item)
            used += cost
    for item in (i for hit in hits for i in items_of(hit)):
        if _overlaps(chosen, item):
            continue
        cost = tokens(item.render()) + 1  # the blank line between items
        if used + cost > budget_tokens:
            continue  # a smaller, lower-ranked snippet may still fit
        chosen.append(item)
        used += cost
    if not chosen:
        return {"results": [], "markdown": "", "tokens": 0, "budget_tokens": budget_tokens}
    body = "\n\n".join([HEADER, *(item.render() for item in chosen)])
    markdown = f"{RECALL_OPEN}\n{body}\n{RECALL_CLOSE}\n"
    return {
        "results": [
            {
                "path": i.path,
                "start_line": i.start_line,
                "end_line": i.end_line,
                "score": round(i.score, 4),
                "text": i.text,
                "source": i.source,
                "citation": i.citation,
                **({"trigger": i.trigger} if i.trigger else {}),
                **(
                    {"superseded": True, "superseded_by": list(i.superseded_by)}
                    if i.superseded_by
                    else {}
                ),
            }
            for i in chosen
        ],
        "markdown": markdown,
        "tokens": tokens(markdown),
        "budget_tokens": budget_tokens,
    }
