"""Checks on search requests that every caller (daemon, bench, tests) gets for free."""

from __future__ import annotations

from memoryd.errors import InvalidParams
from memoryd.index.types import SearchRequest
from memoryd.workspace.layout import ISO_DAY, SOURCE_MEMORY, SOURCE_SESSIONS

MAX_QUERY_CHARS = 8192


def check_search_request(req: SearchRequest) -> None:
    if not isinstance(req.query, str) or not req.query.strip():
        raise InvalidParams("query must be a non-empty string", {"param": "query"})
    if len(req.query) > MAX_QUERY_CHARS:
        raise InvalidParams(
            f"query must be at most {MAX_QUERY_CHARS} characters, got {len(req.query)}",
            {"param": "query"},
        )
    if req.max_results is not None and not 1 <= req.max_results <= 100:
        raise InvalidParams(
            f"max_results must be 1..100, got {req.max_results}", {"param": "max_results"}
        )
    if req.min_score is not None and not 0.0 <= req.min_score <= 1.0:
        raise InvalidParams(f"min_score must be 0..1, got {req.min_score}", {"param": "min_score"})
    if req.mode not in ("hybrid", "vector", "keyword"):
        raise InvalidParams(
            f"mode must be hybrid, vector or keyword, got {req.mode!r}", {"param": "mode"}
        )
    if req.fusion is not None and req.fusion not in ("weighted", "rrf"):
        raise InvalidParams(
            f"fusion must be weighted or rrf, got {req.fusion!r}", {"param": "fusion"}
        )
    if not req.sources or any(s not in (SOURCE_MEMORY, SOURCE_SESSIONS) for s in req.sources):
        raise InvalidParams(
            f"sources must be a non-empty subset of memory, sessions, got {list(req.sources)}",
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
