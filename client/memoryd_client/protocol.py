"""memoryd wire protocol, version 1 (docs/protocol.md). The one definition, shared by both sides.

A frame is a 4-byte big-endian length followed by one msgpack map. This module is a leaf:
it imports only the standard library and msgpack, so the client stays light.
"""

from __future__ import annotations

import operator
import struct

import msgpack

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: memctl's lean paths do not load typing
    from typing import Any, Final

PROTOCOL_VERSION: Final = 1
DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
HEADER = struct.Struct(">I")
# Every block memoryd injects before a model (recall, the session-start digest, the OpenClaw
# prompt section) is wrapped in these: flush drops what is between them from a transcript,
# and append refuses a text that is only a copy of one (no recall loops).
RECALL_OPEN: Final = "<memoryd-recall>"
RECALL_CLOSE: Final = "</memoryd-recall>"
# The methods a client may send again, once, on a fresh connection when the first one
# dropped after the request went out (the daemon may or may not have run it): running them
# twice changes nothing more than once. docs/protocol.md's "resend" column, which the Python
# and Node clients' tests read; every other method, and any method not named here, may have
# written, queued or stopped something, and its caller is told so instead.
SAFE_TO_RESEND: Final = frozenset(
    {
        "hello",
        "status",
        "workspace.add",
        "workspace.remove",
        "workspace.list",
        "search",
        "get",
        "reindex",
        "jobs.list",
        "fleet.status",
        "recall",
        "observe",
        "stats",
        "review.list",
        "sync.disable",
        "sync.status",
        "sync.now",
    }
)


# What a daemon can do beyond version 1's first form, listed in hello's answer (`features`):
# a client asks for one only of a daemon that names it, so every other speaker (an older
# client, the Node plugin, MCP's raw JSON) gets what it always got.
# ``hit_rows``: ``search`` answers its hits as rows when asked (param ``hit_rows: true``):
# the keys once, each hit a row of values (``hit_rows`` below).
HIT_ROWS: Final = "hit_rows"
FEATURES: Final = (HIT_ROWS,)


class ErrorCode:
    """Stable error codes on the wire; clients may switch on them."""

    PROTOCOL_ERROR: Final = "protocol_error"
    TOO_LARGE: Final = "too_large"
    UNKNOWN_METHOD: Final = "unknown_method"
    INVALID_PARAMS: Final = "invalid_params"
    NOT_FOUND: Final = "not_found"
    FORBIDDEN_PATH: Final = "forbidden_path"
    UNKNOWN_WORKSPACE: Final = "unknown_workspace"
    UNAVAILABLE: Final = "unavailable"
    SHUTTING_DOWN: Final = "shutting_down"
    DISK_FULL: Final = "disk_full"
    CONFLICT: Final = "conflict"
    INTERNAL: Final = "internal"


ERROR_CODES: Final = frozenset(
    v for k, v in vars(ErrorCode).items() if k.isupper() and isinstance(v, str)
)


class FrameError(Exception):
    """A frame that cannot be decoded; ``code`` is the wire error code to answer with."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def pack(obj: dict[str, Any]) -> bytes:
    """One message as a complete frame (header + body).

    msgpack's defaults since 1.0 are the wire's (``use_bin_type=True``: str8 and bin for
    bytes); naming one makes ``packb`` parse its keywords into a Packer's on every call
    (~0.6 us, as much as packing a request)."""
    body = msgpack.packb(obj)
    return HEADER.pack(len(body)) + body


def frame_length(header: bytes, max_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> int:
    """The body length a header announces; refuses oversize frames before reading them."""
    if len(header) != HEADER.size:
        raise FrameError(ErrorCode.PROTOCOL_ERROR, "truncated frame header")
    (length,) = HEADER.unpack(header)
    if length > max_bytes:
        raise FrameError(
            ErrorCode.TOO_LARGE, f"frame of {length} bytes exceeds the limit of {max_bytes}"
        )
    return int(length)


def unpack(body: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode one frame body into a map with str keys."""
    try:  # msgpack's defaults since 1.0 (raw=False, strict_map_key=True), as for pack
        obj = msgpack.unpackb(body)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        detail = str(exc) or type(exc).__name__  # FormatError says nothing else
        raise FrameError(ErrorCode.PROTOCOL_ERROR, f"malformed msgpack: {detail}") from None
    if not isinstance(obj, dict):
        raise FrameError(ErrorCode.PROTOCOL_ERROR, "a frame must be a msgpack map")
    return obj


def hit_rows(hits: list[dict[str, Any]]) -> dict[str, Any]:
    """``hits`` (maps) as rows: ``{"fields": [key, ...], "rows": [[value, ...], ...]}``:
    every key a hit has, in the order they first come, and for each hit its values in that
    order, nil where it has no such key (a key whose value is nil is not told from one it
    does not have: both mean "not given")."""
    known: dict[str, Any] = {}
    for hit in hits:
        known.update(hit)
    fields = list(known)
    if not fields:
        return {"fields": fields, "rows": [[] for _ in hits]}
    width = len(fields)
    every = operator.itemgetter(*fields) if width > 1 else None
    rows: list[Any] = []
    for hit in hits:
        if every is not None and len(hit) == width:  # it has every key
            rows.append(list(every(hit)))
        else:
            rows.append(list(map(hit.get, fields)))
    return {"fields": fields, "rows": rows}


def hit_maps(results: Any) -> Any:
    """A search answer's ``results`` as maps: rows (``hit_rows``) made maps again, a row's
    nil left out; anything else as it is."""
    if not isinstance(results, dict):
        return results
    fields = results.get("fields")
    rows = results.get("rows")
    if not isinstance(fields, list) or not isinstance(rows, list):
        return results
    return [
        {k: v for k, v in zip(fields, row, strict=False) if v is not None}
        if isinstance(row, list)
        else row
        for row in rows
    ]


def with_hit_maps(answer: dict[str, Any]) -> dict[str, Any]:
    """A search answer whose hits are maps (``answer`` itself when they are already)."""
    results = answer.get("results")
    if not isinstance(results, dict):
        return answer
    return {**answer, "results": hit_maps(results)}


def safe_to_resend(method: str) -> bool:
    """Whether ``method`` may be sent again after a connection dropped under it."""
    return method in SAFE_TO_RESEND


def request(req_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": req_id, "method": method, "params": params or {}}


def response(req_id: int | None, result: Any) -> dict[str, Any]:
    return {"id": req_id, "ok": True, "result": result}


def error(
    req_id: int | None, code: str, message: str, data: dict[str, Any] | None = None
) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data:
        err["data"] = data
    return {"id": req_id, "ok": False, "error": err}


def event(req_id: int | None, name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"id": req_id, "event": name, "data": data}
