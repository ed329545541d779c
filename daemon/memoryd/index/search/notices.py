"""What a search should tell its caller besides the hits: a request that cannot find
anything meaningful is answered with an empty list and the reason, not with arbitrary hits
or a bare "no results".
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from memoryd.index.search.query import stopwords_only
from memoryd.index.types import SearchRequest
from memoryd.records import Fields

if TYPE_CHECKING:  # what the type checker knows it as (records.py says why)
    from dataclasses import dataclass as fields_record
else:
    from memoryd.records import fields_record


@fields_record(eq=False, repr=False)  # Fields' eq and repr (records.py)
class Notices(Fields):
    """What a search's answer says beside its hits, and whether to search at all."""

    lines: list[str] = field(default_factory=list)
    nothing_to_search: bool = False  # answer with no hits, without searching


def search_notices(req: SearchRequest, sessions_indexed: bool) -> Notices:
    out = Notices()
    words = stopwords_only(req.query)
    if words is not None:
        shown = ", ".join(f'"{w}"' for w in words[:8]) or "none"
        out.lines.append(
            f"the query has no word to search for, only stop words ({shown}): "
            "add a word that names what you are looking for"
        )
        out.nothing_to_search = True
    if "sessions" in req.sources and not sessions_indexed:
        out.lines.append(
            "transcripts are not indexed (index.sessions = false): set "
            "sessions = true under [index] in config.toml and restart memoryd "
            "to search sessions/*.jsonl"
        )
        out.nothing_to_search |= set(req.sources) == {"sessions"}
    return out
