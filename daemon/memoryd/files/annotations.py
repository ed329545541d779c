"""Annotations: the trailing HTML comments a memory line may carry (OpenClaw's syntax).

``- Keep the gateway on loopback. <!-- trigger: gateway setup; network safety -->
<!-- importance: 9 -->`` says how important the line is, when it should come up, which
project it belongs to, and (issue 26) its supersession key and whether the owner wants it
promoted to MEMORY.md. Only comments at the END of a line count, any number, any order; a
comment that is not one of ours stays in the text. A provenance-looking comment
(``<!-- origin: owner -->``) is never read: the daemon decides provenance, never the text
(provenance.py). Parsing costs one substring test for a line with no comment at all.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

__all__ = [
    "IMPORTANCE_MAX",
    "IMPORTANCE_MIN",
    "Annotations",
    "normalize_project",
    "parse_line",
    "split_phrases",
    "strip_annotations",
]

IMPORTANCE_MIN = 1
IMPORTANCE_MAX = 10
# The last comment of a line, with the whitespace before it; matched again and again from the
# end so any number of trailing comments are seen.
_TRAILING = re.compile(r"\s*<!--(?P<body>(?:(?!-->).)*)-->\s*$", re.DOTALL)
_NAMED = re.compile(r"^\s*(?P<name>[A-Za-z_-]+)\s*(?::\s*(?P<value>.*?))?\s*$", re.DOTALL)
_PHRASE_SPLIT = re.compile(r"[,;]")
# "source": where hippocampus took a promoted line from (issue 26; not kept, only stripped).
_OURS = frozenset({"importance", "trigger", "triggers", "project", "key", "promote", "source"})


@frozen_record(frozen=True, eq=False, repr=False)
class Annotations(Record):
    """What a line's annotation comment says (importance, triggers, project, key, promote)."""

    importance: int | None = None
    triggers: tuple[str, ...] = ()
    project: str | None = None  # normalised (normalize_project)
    key: str | None = None  # issue 26: lines sharing a key supersede each other
    promote: bool = False  # issue 26: the owner marked the line for MEMORY.md

    def merged(self, other: Annotations) -> Annotations:
        """Both lines' annotations, as one (the max importance, the triggers' union): what a
        snippet spanning several annotated lines carries."""
        return Annotations(
            importance=_max_opt(self.importance, other.importance),
            triggers=tuple(dict.fromkeys((*self.triggers, *other.triggers))),
            project=self.project or other.project,
            key=self.key or other.key,
            promote=self.promote or other.promote,
        )


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def split_phrases(value: str) -> tuple[str, ...]:
    """Trigger phrases: comma- or semicolon-separated, stripped, lower-cased, whitespace
    collapsed, empties and repeats dropped."""
    out = (" ".join(p.split()).casefold() for p in _PHRASE_SPLIT.split(value))
    return tuple(dict.fromkeys(p for p in out if p))


def normalize_project(key: str) -> str:
    """A project key as compared: stripped, no trailing slash, case-folded (hosts and
    GitHub's owner/repo are case-insensitive; one user's paths rarely differ only by case)."""
    return key.strip().rstrip("/").casefold()


def _apply(name: str, value: str | None, acc: dict[str, object]) -> bool:
    """Record one of our comments into ``acc``; False when it is not one of ours (or its
    value is unusable, like an importance of 42: then it stays in the text too)."""
    if name == "importance":
        try:
            n = int((value or "").strip())
        except ValueError:
            return False
        if not IMPORTANCE_MIN <= n <= IMPORTANCE_MAX:
            return False
        acc.setdefault("importance", n)
        return True
    if name in ("trigger", "triggers"):
        phrases = split_phrases(value or "")
        prior = acc.get("triggers", ())
        assert isinstance(prior, tuple)
        acc["triggers"] = tuple(dict.fromkeys((*prior, *phrases)))
        return True
    if name in ("project", "key"):
        clean = (value or "").strip()
        if not clean:
            return False
        acc.setdefault(name, normalize_project(clean) if name == "project" else clean)
        return True
    if name == "promote":
        acc["promote"] = True
        return True
    if name == "source":
        acc.setdefault("source", True)  # marks the line annotated; the path is read by eye
        return bool((value or "").strip())
    return False


def parse_line(line: str) -> tuple[str, Annotations | None]:
    """``line`` without our trailing comments, and what they said (None: no annotation)."""
    if "<!--" not in line:  # the common case: one substring test
        return line, None
    acc: dict[str, object] = {}
    kept: list[str] = []  # trailing comments that are not ours, kept in place
    rest = line.rstrip("\r\n")
    ending = line[len(rest) :]
    while True:
        m = _TRAILING.search(rest)
        if m is None:
            break
        named = _NAMED.match(m.group("body"))
        name = named.group("name").casefold() if named else ""
        value = named.group("value") if named else None
        if not (name in _OURS and _apply(name, value, acc)):
            kept.append(m.group(0))
        rest = rest[: m.start()]
    if not acc:
        return line, None
    text = rest + "".join(reversed(kept)) + ending
    triggers = acc.get("triggers", ())
    assert isinstance(triggers, tuple)
    importance = acc.get("importance")
    project = acc.get("project")
    key = acc.get("key")
    return text, Annotations(
        importance=importance if isinstance(importance, int) else None,
        triggers=triggers,
        project=project if isinstance(project, str) else None,
        key=key if isinstance(key, str) else None,
        promote=bool(acc.get("promote", False)),
    )


def strip_annotations(text: str) -> str:
    """``text`` (one or more lines) as snippets and recall show it: our comments removed,
    everything else as it is."""
    if "<!--" not in text:
        return text
    return "".join(parse_line(line)[0] for line in text.splitlines(keepends=True))
