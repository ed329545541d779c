"""Hippocampus's gate, its ranking, and the part it does without a model.

**The gate** (a precondition, not a penalty): only lines of origin ``owner`` or ``agent``
(the provenance ledger; a line with no record is the owner's) from interactive sessions (or
none) may reach MEMORY.md. Untrusted and system lines, and lines of cron, heartbeat and
sub-agent sessions, are never sent to the model nor promoted.

**The ranking** of the gated lines of the window's daily notes: how often search and recall
returned the line and to how many different queries (lifecycle/hits.py), each query weighed
by how specific the words that tied it to the line are in the window's notes (a name on
every other line weighs next to nothing: a line returned for "Alice" because it says Alice
is not a line people look for), how recent its note is, and on how many days it recurs.
The report lists the best candidates with their signals.

**Without a model** (and as the fallback when a model's rewrite is refused) the run still
curates, deterministically:
- exact and near-exact duplicates in MEMORY.md are merged (the first stays);
- keys are applied: of MEMORY.md's lines sharing ``<!-- key: K -->`` the last stands, and a
  gated daily line with key K newer than MEMORY.md's last change replaces MEMORY.md's;
- lines the owner marked (``<!-- promote -->`` or ``<!-- importance: 8 -->`` and above) are
  promoted: appended under ``## Promoted`` with ``<!-- source: path#Ln -->``, unless there.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memoryd.files.annotations import Annotations, parse_line
from memoryd.files.fsutil import atomic_write_at
from memoryd.files.layout import HISTORY_DIR, Layout
from memoryd.files.lines import line_key, normalize_line
from memoryd.files.provenance import HAND_WRITTEN, Ledger, Record, ledger_for
from memoryd.files.reader import read_all
from memoryd.jobs.base import JobContext
from memoryd.lifecycle.hits import HitCounter, words_of

__all__ = ["Candidate", "Gate", "curate", "gather", "near_key"]

PROMOTE_IMPORTANCE: Final = 8
PROMOTED_HEADING: Final = "## Promoted"
TOP_IN_REPORT: Final = 10
ELIGIBLE_ORIGINS: Final = ("owner", "agent")
_HEADING: Final = re.compile(r"^#{1,6}\s")
_MARKER: Final = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
MEANING_ONLY: Final = 0.5  # a query that matched by meaning, no word: neither rare nor common


def near_key(text: str) -> str:
    """Near-exact sameness: the line's normalisation without punctuation."""
    return " ".join(re.sub(r"[^\w]+", " ", normalize_line(text)).split())


@dataclass
class Candidate:
    raw: str  # the line as written
    key: str
    path: str
    line: int
    day: dt.date
    notes: Annotations | None
    hits: int = 0
    queries: int = 0
    weight: float = 0.0  # the distinct queries, each weighed by its words' specificity
    days: int = 1  # on how many days of the window it occurs
    score: float = 0.0

    @property
    def marked(self) -> bool:
        n = self.notes
        return n is not None and (n.promote or (n.importance or 0) >= PROMOTE_IMPORTANCE)

    @property
    def source(self) -> str:
        return f"{self.path}#L{self.line}"

    def brief(self) -> dict[str, Any]:
        return {
            "line": parse_line(self.raw)[0].strip(),
            "source": self.source,
            "hits": self.hits,
            "queries": self.queries,
            "weight": round(self.weight, 2),
            "days": self.days,
            "score": round(self.score, 2),
        }


class Gate:
    """Which lines may reach MEMORY.md (the ledger read once per run)."""

    def __init__(self, ledger: Ledger) -> None:
        ledger.refresh()
        self.ledger = ledger
        self.refused: dict[str, int] = {}

    def allows(self, raw: str, path: str) -> bool:
        """Whether line ``raw`` of file ``path`` may reach MEMORY.md (its own record)."""
        key = line_key(raw)
        if not key:
            return True  # headings and blank lines carry no fact
        prov = self.ledger.lookup(path, key) or HAND_WRITTEN
        why = None
        if prov.origin not in ELIGIBLE_ORIGINS:
            why = prov.origin
        elif prov.session_kind not in (None, "interactive"):
            why = prov.session_kind
        if why is None:
            return True
        self.refused[why] = self.refused.get(why, 0) + 1
        return False

    def filter_text(self, text: str, path: str) -> str:
        """``text`` (file ``path``'s) without the lines the gate refuses (what the model
        may read)."""
        return "\n".join(line for line in text.splitlines() if self.allows(line, path))


def gather(ctx: JobContext, files: list[tuple[str, Path, dt.date]]) -> tuple[list[Candidate], Gate]:
    """The gated candidate lines of ``files`` (rel, path, day), ranked best first."""
    gate = Gate(ledger_for(ctx.root))
    found: list[Candidate] = []
    lines: list[str] = []  # every fact line of the window, gated or not: the words' rarity
    max_bytes = ctx.config.index.max_file_bytes
    layout = Layout(ctx.root)
    for rel, path, day in files:
        with layout.open_file(path) as fh:
            data = read_all(fh.fileno(), max_bytes + 1)
        if len(data) > max_bytes:
            continue
        for n, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            key = line_key(raw)
            if not key or _HEADING.match(raw):
                continue
            lines.append(raw)
            if gate.allows(raw, rel):
                found.append(Candidate(raw, key, rel, n, day, parse_line(raw)[1]))
    days: dict[str, set[dt.date]] = {}
    for c in found:
        days.setdefault(c.key, set()).add(c.day)
    counter = HitCounter(ctx.history.state)
    counts = counter.counts(ctx.root, days)
    tied = counter.query_words(ctx.root, days)
    weigh = rarity(lines)
    today = ctx.now.date()
    window = max(1, ctx.config.jobs.hippocampus.lookback_days)
    for c in found:
        c.hits, c.queries = counts.get(c.key, (0, 0))
        weights = [weigh(words) for words in tied.get(c.key, ())]
        c.weight = sum(weights)
        mean = c.weight / len(weights) if weights else 0.0
        c.days = len(days[c.key])
        age = max(0, (today - c.day).days)
        c.score = c.hits * mean + 2 * c.weight + 2 * (c.days - 1) + (1 - min(age, window) / window)
        if c.marked:
            c.score += 5
    found.sort(key=lambda c: (-c.score, c.day, c.line))
    return found, gate


_SOURCE: Final = re.compile(r"<!--\s*source:\s*(\S+?)#L(\d+)\s*-->")


def promoted_records(ledger: Ledger, rel: str, old: str, new: str, at: float) -> list[Record]:
    """The ledger records of the lines ``new`` (MEMORY.md's text, file ``rel``) adds with a
    ``<!-- source: path#Ln -->``: each keeps its source line's provenance (a line's trust is
    its own record in its file; the agent's line promoted stays the agent's)."""
    before = {line_key(x) for x in old.splitlines()}
    out: list[Record] = []
    for raw in new.splitlines():
        key = line_key(raw)
        found = _SOURCE.search(raw)
        if not key or key in before or found is None:
            continue
        prov = ledger.lookup(found.group(1), key)
        if prov is not None and prov.origin != "owner":
            out.append(Record.added(key, rel, prov, "hippocampus", at))
    return out


def rarity(lines: list[str]) -> Callable[[str], float]:
    """How specific the words that tied a query to a line are, 0..1: an IDF over ``lines``
    (the window's notes) of the rarest of them, ``log((n+1)/(df+1)) / log(n+1)``; a word on
    every line weighs 0, one on no line 1; no word (a match by meaning) MEANING_ONLY."""
    df: Counter[str] = Counter()
    for raw in lines:
        df.update(words_of(raw))
    n = len(lines)
    scale = math.log(n + 1) or 1.0

    def weigh(words: str) -> float:
        given = words.split()
        if not given:
            return MEANING_ONLY
        return max(math.log((n + 1) / (df[w] + 1)) / scale for w in given)

    return weigh


@dataclass
class Curated:
    text: str
    promoted: list[dict[str, Any]] = field(default_factory=list)
    merged: list[dict[str, Any]] = field(default_factory=list)
    retired: list[dict[str, Any]] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        return {"promoted": self.promoted, "merged": self.merged, "retired": self.retired}


def _key_of(raw: str, gated: bool = True) -> str | None:
    notes = parse_line(raw)[1]
    return notes.key if notes is not None and gated else None


def curate(
    memory: str,
    candidates: list[Candidate],
    memory_day: dt.date,
    extra: list[Candidate] | None = None,
) -> Curated:
    """MEMORY.md with duplicates merged, keys applied and marked lines promoted (and
    ``extra`` appended too: the append-only fallback's candidates)."""
    lines = memory.splitlines()
    out = Curated("")
    keep: list[str | None] = list(lines)
    first_near: dict[str, int] = {}
    for i, raw in enumerate(lines):
        k = near_key(raw)
        if not k or _HEADING.match(raw):
            continue
        if k in first_near:
            out.merged.append({"line": raw.strip(), "into": f"MEMORY.md#L{first_near[k] + 1}"})
            keep[i] = None
        else:
            first_near[k] = i
    last_by_key: dict[str, int] = {}
    for i, raw in enumerate(lines):
        line_k = _key_of(raw) if keep[i] is not None else None
        if line_k is None:
            continue
        if line_k in last_by_key:
            j = last_by_key[line_k]
            out.retired.append(
                {"line": lines[j].strip(), "key": line_k, "by": f"MEMORY.md#L{i + 1}"}
            )
            keep[j] = None
        last_by_key[line_k] = i
    additions: list[str] = []
    extra = extra or []
    for c in [*candidates, *extra]:
        ck = c.notes.key if c.notes is not None else None
        if ck is not None and ck in last_by_key and c.day > memory_day:
            j = last_by_key[ck]
            if keep[j] is not None and near_key(lines[j]) != near_key(c.raw):
                out.retired.append({"line": lines[j].strip(), "key": ck, "by": c.source})
                keep[j] = _entry(c)
                out.promoted.append({"line": _entry(c), "source": c.source, "replaces": ck})
            continue
        if not (c.marked or c in extra) or near_key(c.raw) in first_near:
            continue
        first_near[near_key(c.raw)] = -1
        additions.append(_entry(c))
        out.promoted.append({"line": additions[-1], "source": c.source})
    text = [line for line in keep if line is not None]
    while text and not text[-1].strip():
        text.pop()
    if additions and PROMOTED_HEADING not in text:
        text += [*([""] if text else []), PROMOTED_HEADING, "", *additions]
    elif additions:  # at the end of the section, before the next heading
        start = text.index(PROMOTED_HEADING) + 1
        at = next((i for i in range(start, len(text)) if _HEADING.match(text[i])), len(text))
        while at > start and not text[at - 1].strip():
            at -= 1
        text[at:at] = additions
    out.text = "\n".join(text) + ("\n" if text else "")
    return out


def _entry(c: Candidate) -> str:
    body = _MARKER.sub("", c.raw.strip(), count=1)
    return f"- {body} <!-- source: {c.source} -->"


def report_markdown(when: str, mode: str, data: dict[str, Any]) -> str:
    """The run's report as a person reads it (kept in memory/.history/reports/)."""
    out = [f"# hippocampus {when} ({mode})", ""]
    for title, rows in (
        ("Promoted", data.get("promoted", [])),
        ("Merged", data.get("merged", [])),
        ("Retired", data.get("retired", [])),
    ):
        out.append(f"## {title} ({len(rows)})")
        out += [
            f"- {_MARKER.sub('', r['line'])}"
            + "".join(f" ({k}: {r[k]})" for k in ("source", "into", "by", "key") if k in r)
            for r in rows
        ] or ["- none"]
        out.append("")
    out.append("## Best candidates")
    out += [
        f"- {_MARKER.sub('', c['line'])} ({c['source']}; returned {c['hits']}x to "
        f"{c['queries']} queries (weight {c.get('weight', 0)}), on {c['days']} day(s), "
        f"score {c['score']})"
        for c in data.get("candidates", [])
    ] or ["- none"]
    conflicts = data.get("sync_conflicts") or []
    if conflicts:  # docs/sync.md: both hosts changed these lines; a person settles them
        out += ["", "## Sync conflicts to settle", *(f"- MEMORY.md line {n}" for n in conflicts)]
    refused = data.get("gate_refused") or {}
    if refused:
        out += ["", "## Kept out by the gate", *(f"- {k}: {v} line(s)" for k, v in refused.items())]
    return "\n".join(out) + "\n"


def describe_rewrite(old: str, new: str, candidates: list[Candidate]) -> dict[str, Any]:
    """What a model's rewrite of MEMORY.md did, in the report's terms, with sources."""
    old_near = {near_key(line): line for line in old.splitlines() if near_key(line)}
    new_near = {near_key(line): line for line in new.splitlines() if near_key(line)}
    by_near = {near_key(c.raw): c for c in candidates}
    promoted = []
    for k, line in new_near.items():
        if k in old_near or _HEADING.match(line):
            continue
        c = by_near.get(k)
        promoted.append({"line": line.strip(), "source": c.source if c else "the model"})
    retired = [
        {"line": line.strip()}
        for k, line in old_near.items()
        if k not in new_near and not _HEADING.match(line)
    ]
    return {"promoted": promoted, "merged": [], "retired": retired}


def write_report(ctx: JobContext, text: str) -> str:
    """Keep the run's readable report in memory/.history/reports/ (hidden: never indexed)."""
    folder = f"{HISTORY_DIR}/reports"
    name = f"hippocampus-{ctx.now.strftime('%Y%m%dT%H%M%S')}.md"
    fd = Layout(ctx.root).open_dir(folder, make=True)
    try:
        atomic_write_at(fd, name, text.encode())
    finally:
        os.close(fd)
    return f"{folder}/{name}"
