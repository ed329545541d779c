"""Checks on search requests that every caller (daemon, bench, tests) gets for free."""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.errors import InvalidParams
from memoryd.files.layout import ISO_DAY
from memoryd.index.types import SearchRequest
from memoryd_client.search_terms import (
    FUSIONS,
    MAX_QUERY_CHARS,
    MAX_RESULTS,
    MIN_SCORE_RANGE,
    MODES,
    SOURCES,
)


def check_search_request(req: SearchRequest) -> None:
    if not isinstance(req.query, str) or not req.query.strip():
        raise InvalidParams("query must be a non-empty string", {"param": "query"})
    if len(req.query) > MAX_QUERY_CHARS:
        raise InvalidParams(
            f"query must be at most {MAX_QUERY_CHARS} characters, got {len(req.query)}",
            {"param": "query"},
        )
    if req.max_results is not None and not 1 <= req.max_results <= MAX_RESULTS:
        raise InvalidParams(
            f"max_results must be 1..{MAX_RESULTS}, got {req.max_results}",
            {"param": "max_results"},
        )
    lo, hi = MIN_SCORE_RANGE
    if req.min_score is not None and not lo <= req.min_score <= hi:
        raise InvalidParams(
            f"min_score must be {lo:g}..{hi:g}, got {req.min_score}", {"param": "min_score"}
        )
    if req.mode not in MODES:
        raise InvalidParams(f"mode must be {_either(MODES)}, got {req.mode!r}", {"param": "mode"})
    if req.fusion is not None and req.fusion not in FUSIONS:
        raise InvalidParams(
            f"fusion must be {_either(FUSIONS)}, got {req.fusion!r}", {"param": "fusion"}
        )
    if not req.sources or any(s not in SOURCES for s in req.sources):
        raise InvalidParams(
            f"sources must be a non-empty subset of {', '.join(SOURCES)}, got {list(req.sources)}",
            {"param": "sources"},
        )
    for name in ("since", "until"):
        value = getattr(req, name)
        if value is not None and not (isinstance(value, str) and ISO_DAY.fullmatch(value)):
            raise InvalidParams(f"{name} must be YYYY-MM-DD, got {value!r}", {"param": name})
    if req.since and req.until and req.since > req.until:
        raise InvalidParams(
            f"since ({req.since}) must not be after until ({req.until})", {"param": "since"}
        )


def _either(words: Sequence[str]) -> str:
    return ", ".join(words[:-1]) + " or " + words[-1]
